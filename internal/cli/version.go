package cli

import "github.com/roofline/roofline/internal/views"

func init() {
	register(&Command{
		Name:     "version",
		Synopsis: "Show roofline's version",
		Usage:    views.UsageVersion,
		Run:      runVersion,
	})
}

func runVersion(m *Meta, args []string) int {
	fs := newFlags("version")
	jsonOut := fs.Bool("json", false, "")
	if !parseFlags(m, fs, args) {
		return ExitError
	}
	if fs.NArg() > 0 {
		return usageError(m, "version", "unexpected argument "+fs.Arg(0))
	}
	views.NewVersion(views.TypeOf(*jsonOut), m.view()).Version()
	return ExitOK
}
