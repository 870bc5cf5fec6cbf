package cli

import (
	"os"

	"github.com/roofline/roofline/internal/rehearsal"
	"github.com/roofline/roofline/internal/views"
)

func init() {
	register(&Command{
		Name:     "rehearsal",
		Synopsis: "Run the rehearsal engine (a stand-in for vLLM or SGLang; internal)",
		Usage:    views.UsageRehearsal,
		Hidden:   true,
		RawArgs:  true,
		Run:      runRehearsal,
	})
}

// runRehearsal hands ARGS to the rehearsal engine untouched: they are the
// engine's flags, not roofline's.
func runRehearsal(m *Meta, args []string) int {
	if len(args) == 0 {
		return usageError(m, "rehearsal", "rehearsal needs KIND@VERSION, for example vllm@0.16.0, then the engine's arguments")
	}
	exe, err := os.Executable()
	if err != nil {
		m.view().Errorf("rehearsal: cannot find roofline's own executable to start the worker process: %v", err)
		return ExitError
	}
	return rehearsal.Main(args[0], args[1:], rehearsal.Env{
		Stdout: m.Out, Stderr: m.Err,
		Self: []string{exe, "rehearsal", args[0]},
	})
}
