package cli

import "github.com/roofline/roofline/internal/apply"

// newApplyDriver returns the driver apply starts and stops servers with.
func newApplyDriver() apply.Driver { return newProcDriver() }
