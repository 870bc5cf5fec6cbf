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
	named := addGateFlags(fs)
	reasoning := fs.Bool("reasoning", false, "")
	timeout := fs.Duration("timeout", 2*time.Minute, "")
	jsonOut := fs.Bool("json", false, "")
	if !parseConfigFlags(m, fs, args) {
		return ExitError
	}
	named.Args = fs.Args()
	side, ok := resolveTarget(m, "smoke", *named)
	if !ok {
		return ExitError
	}
	if side.Target.Model == "" {
		return usageError(m, "smoke", "-url needs -model NAME: the served model name")
	}
	if *timeout <= 0 {
		return usageError(m, "smoke", "-timeout must be positive")
	}
	opts := gate.SmokeOptions{Reasoning: *reasoning, StepTimeout: *timeout}
	if side.Server != nil && !fs.Changed("reasoning") {
		opts.Reasoning = side.Server.Server.SmokesReasoning()
	}
	ctx, cancel := interruptible()
	defer cancel()
	client := gate.NewClient(4)
	defer client.CloseIdleConnections()
	res, err := gate.Smoke(ctx, client, side.Target, opts)
	views.NewChecks(views.TypeOf(*jsonOut), m.view()).Smoke(side.Name(), side.Target, res, err)
	if err != nil {
		return ExitError
	}
	return ExitOK
}
