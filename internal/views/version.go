package views

import (
	"fmt"
	"runtime"

	"github.com/roofline/roofline/internal/version"
)

// Version is roofline version's view.
type Version interface {
	Version()
}

// NewVersion returns the version view of type vt.
func NewVersion(vt ViewType, v *View) Version {
	if vt == ViewJSON {
		return VersionJSON{v}
	}
	return VersionHuman{v}
}

// VersionJSON prints roofline's and Go's versions and the platform.
type VersionJSON struct{ view *View }

func (v VersionJSON) Version() {
	writeJSON(v.view.Out, map[string]string{
		"roofline_version": version.Version,
		"go_version":       runtime.Version(),
		"platform":         runtime.GOOS + "_" + runtime.GOARCH,
	})
}

// VersionHuman prints them on two lines.
type VersionHuman struct{ view *View }

func (v VersionHuman) Version() {
	fmt.Fprintf(v.view.Out, "roofline v%s\non %s_%s (%s)\n", version.Version, runtime.GOOS, runtime.GOARCH, runtime.Version())
}
