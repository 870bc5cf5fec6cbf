// Package version holds roofline's own version, set at build time with
// -ldflags "-X github.com/roofline/roofline/internal/version.Version=...".
package version

// Version is roofline's version. "dev" in untagged builds.
var Version = "0.1.0-dev"
