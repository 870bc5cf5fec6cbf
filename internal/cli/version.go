package cli

import (
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/roofline/roofline/internal/version"
)

func init() {
	register(&Command{
		Name:     "version",
		Synopsis: "Show roofline's version",
		Usage: `Usage: roofline version [-json]

  Prints roofline's version and the Go runtime it was built with.

Options:
  -json   Print a JSON object.
`,
		Run: runVersion,
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
	if *jsonOut {
		b, _ := json.MarshalIndent(map[string]string{
			"roofline_version": version.Version,
			"go_version":       runtime.Version(),
			"platform":         runtime.GOOS + "_" + runtime.GOARCH,
		}, "", "  ")
		fmt.Fprintln(m.Out, string(b))
		return ExitOK
	}
	fmt.Fprintf(m.Out, "roofline v%s\non %s_%s (%s)\n", version.Version, runtime.GOOS, runtime.GOARCH, runtime.Version())
	return ExitOK
}
