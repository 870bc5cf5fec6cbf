package cli

import (
	"time"

	"github.com/roofline/roofline/internal/gate"
	"github.com/roofline/roofline/internal/views"
)

func init() {
	register(&Command{
		Name:     "smoke",
		Synopsis: "Run the tool-call smoke test against a server",
		Usage: `Usage: roofline smoke SERVER [-reasoning] [-json]
       roofline smoke -url URL -model NAME [-engine vllm|sglang] [-reasoning] [-json]

  Checks that tool calls come back parsed, as a client expects them. It asks
  for the weather in Dallas with two tools offered and tool_choice "auto"
  ("required" would go through structured decoding and pass even with a
  wrong parser), then checks: finish_reason "tool_calls"; arguments that are
  JSON valid against the tool's schema; the same call when streamed,
  reassembled from its deltas; and an answer once the tool's result is sent
  back. A call that comes back as text in content fails with the likely
  cause: the tool-call parser or the chat template.

  With -reasoning (the default for a SERVER with reasoning_parser set) it
  also checks that the reasoning comes back apart from the answer, in
  reasoning or reasoning_content.

Options:
  -url URL          The server's base URL, e.g. http://127.0.0.1:8000.
  -model NAME       The served model name.
  -engine KIND      vllm or sglang, for engine-specific advice.
  -api-key-file FILE
                    The server's API key, sent as a bearer token (a named
                    SERVER uses its api_key or api_key_file by itself).
  -reasoning        Expect a reasoning parser.
  -timeout D        Time limit of each step (default 2m).
  -json             Print the result as JSON.

  Exits 0 when every step passes, 1 otherwise.
`,
		Run: runSmoke,
	})
}

func runSmoke(m *Meta, args []string) int {
	fs := newFlags("smoke")
	gf := addGateFlags(fs)
	reasoning := fs.Bool("reasoning", false, "")
	timeout := fs.Duration("timeout", 2*time.Minute, "")
	jsonOut := fs.Bool("json", false, "")
	if !parseFlags(m, fs, args) {
		return ExitError
	}
	t, rs, ok := resolveTarget(m, "smoke", fs.Args(), gf)
	if !ok {
		return ExitError
	}
	if t.Model == "" {
		return usageError(m, "smoke", "-url needs -model NAME: the served model name")
	}
	if *timeout <= 0 {
		return usageError(m, "smoke", "-timeout must be positive")
	}
	opts := gate.SmokeOptions{Reasoning: *reasoning, StepTimeout: *timeout}
	if rs != nil && !fs.Changed("reasoning") {
		opts.Reasoning = rs.server.ReasoningParser != ""
	}
	ctx, cancel := interruptible()
	defer cancel()
	client := gate.NewClient(4)
	defer client.CloseIdleConnections()
	res, err := gate.Smoke(ctx, client, t, opts)
	views.NewChecks(views.TypeOf(*jsonOut), m.view()).Smoke(targetName(t, rs), t, res, err)
	if err != nil {
		return ExitError
	}
	return ExitOK
}
