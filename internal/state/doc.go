// Package state is roofline's record of what it started: a versioned JSON file
// in the state directory, written atomically with a backup of the previous
// version, and a separate lock file that keeps two roofline commands from
// changing it at once.
//
// The file format is documented in docs/state.md. Its shape follows
// Terraform's statefile: a format_version sniffed before anything else, a
// serial that grows with every change and a lineage fixed when the state is
// first written, so a saved plan can tell whether the state moved under it.
//
// Managers (Filesystem, Fake) hide where the state lives; package statetest
// holds the conformance suite every Manager must pass. This package imports
// nothing of roofline but its version.
package state
