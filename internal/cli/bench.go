package cli

import (
	"context"
	"time"

	"github.com/roofline/roofline/internal/gate"
	"github.com/roofline/roofline/internal/journal"
	"github.com/roofline/roofline/internal/views"
)

func init() {
	register(&Command{
		Name:     "bench",
		Synopsis: "Benchmark a server",
		Usage:    views.UsageBench,
		Run:      runBench,
	})
}

// loadFlags are the flags that change the load (against gate.bench).
var loadFlags = []string{"concurrency", "request-rate", "requests", "duration", "input-tokens", "output-tokens", "endpoint"}

// runBench parses the flags, plans the load (gate.PlanBench), runs it on
// one server or two, records each run of a configured server in the
// journal, and hands the results to the view.
func runBench(m *Meta, args []string) int {
	fs := newFlags("bench")
	named := addGateFlags(fs)
	var load gate.Load
	fs.IntVar(&load.Concurrency, "concurrency", 0, "")
	fs.Float64Var(&load.RequestRate, "request-rate", 0, "")
	fs.IntVar(&load.Requests, "requests", 0, "")
	fs.DurationVar(&load.Duration, "duration", 0, "")
	fs.IntVar(&load.InputTokens, "input-tokens", 0, "")
	fs.IntVar(&load.OutputTokens, "output-tokens", 0, "")
	warmup := fs.Int("warmup", 1, "")
	endpoint := fs.String("endpoint", gate.EndpointCompletions, "")
	goodput := fs.String("goodput", "", "")
	seed := fs.Int64("seed", 0, "")
	compare := fs.String("compare", "", "")
	compareURL := fs.String("compare-url", "", "")
	jsonOut := fs.Bool("json", false, "")
	if !parseConfigFlags(m, fs, args) {
		return ExitError
	}
	if err := load.Validate(); err != nil {
		return usageError(m, "bench", err.Error())
	}
	if *compare != "" && *compareURL != "" {
		return usageError(m, "bench", "give -compare SERVER2 or -compare-url URL2, not both")
	}
	named.Args = fs.Args()
	a, ok := resolveTarget(m, "bench", *named)
	if !ok {
		return ExitError
	}
	load.Set = map[string]bool{}
	for _, name := range loadFlags {
		load.Set[name] = fs.Changed(name)
	}
	bp, err := gate.PlanBench(a.Server.BenchBlock(), load, *endpoint, *warmup, *seed, *goodput)
	if err != nil {
		return usageError(m, "bench", err.Error())
	}
	var b *gate.Side
	if *compare != "" || *compareURL != "" {
		var cargs []string
		if *compare != "" {
			cargs = []string{*compare}
		}
		side, ok := resolveTarget(m, "bench", gate.Named{Args: cargs, URL: *compareURL})
		if !ok {
			return ExitError
		}
		b = &side
	}
	view := views.NewBench(views.TypeOf(*jsonOut), m.view(), m.ErrTerminal)
	hooks := gate.BenchHooks{Started: view.Started, Record: func(s gate.Side, sum *journal.BenchSummary) { recordBench(m, s, sum) }}
	ctx, cancel := interruptible()
	defer cancel()
	if b != nil {
		resA, resB, failed, err := bp.Compare(ctx, a, *b, hooks)
		if err != nil {
			view.Failed(failed, err)
			return ExitError
		}
		view.Compare(a.Name(), b.Name(), resA, resB)
		return ExitOK
	}
	res, checks, err := bp.RunOn(ctx, a, hooks) // an interrupted run is shown but not recorded
	if err != nil {
		view.Failed(a.Name(), err)
		if res == nil {
			return ExitError
		}
	}
	addr := ""
	if bp.Block != nil {
		addr = a.Name()
	}
	view.Result(res, addr, bp.Checked, checks)
	if err != nil || !gate.Passed(checks) {
		return ExitError
	}
	return ExitOK
}

// recordBench records a bench of a configured server in the journal
// (journal.BenchOf): the engine and model from the state when roofline
// started the server, else from the configuration; the GPUs from the
// inventory, best effort: a bench does not fail for want of NVML.
func recordBench(m *Meta, s gate.Side, sum *journal.BenchSummary) {
	if s.Server == nil {
		return
	}
	cfg, srv := s.Server.Config, s.Server.Server
	var host *journal.Host
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b := newBackend(cfg)
	if sn, err := b.inventory("").Snapshot(ctx); err == nil {
		host = journal.HostOf(sn)
	}
	rec := stateServer(m, cfg, srv.Name)
	configured := gate.ConfiguredServed(srv, s.Server.Engine, s.Server.Model, s.Target.Model)
	if err := journal.Append(journal.Path(b.stateDir), journal.BenchOf(time.Now(), rec, configured, host, s.Target.BaseURL, sum)); err != nil {
		m.view().Warnf("the run was not recorded in the journal: %v", err)
	}
}
