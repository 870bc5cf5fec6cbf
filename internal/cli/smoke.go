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
		Usage:    views.UsageSmoke,
		Run:      runSmoke,
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
