package cli

import (
	"fmt"
	"os"

	"github.com/roofline/roofline/internal/rehearsal"
)

func init() {
	register(&Command{
		Name:     "rehearsal",
		Synopsis: "Run the rehearsal engine (a stand-in for vLLM or SGLang; internal)",
		Usage: `Usage: roofline rehearsal KIND@VERSION ARGS...

  Runs roofline's rehearsal engine, a stand-in for vLLM or SGLang that needs
  no GPU. ARGS are the emulated program's own arguments, passed through
  verbatim:

    roofline rehearsal vllm@0.16.0 serve /models/qwen3 --port 8001 ...
    roofline rehearsal vllm@0.16.0 --version
    roofline rehearsal sglang@0.5.6.post2 -m sglang.launch_server --model-path ...
    roofline rehearsal sglang@0.5.6.post2 -c "import sglang; print(sglang.__version__)"

  roofline starts it itself for an engine block with rehearsal = true.
  The ROOFLINE_REHEARSAL_* environment variables are in docs/rehearsal.md.
`,
		Hidden:  true,
		RawArgs: true,
		Run:     runRehearsal,
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
		fmt.Fprintf(m.Err, "Error: rehearsal: cannot find roofline's own executable to start the worker process: %v\n", err)
		return ExitError
	}
	return rehearsal.Main(args[0], args[1:], rehearsal.Env{
		Stdout: m.Out, Stderr: m.Err,
		Self: []string{exe, "rehearsal", args[0]},
	})
}
