package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/gate"
	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/journal"
	"github.com/roofline/roofline/internal/state"
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

// benchSide is one server a bench runs on.
type benchSide struct {
	t  gate.Target
	rs *resolvedServer
}

func (s benchSide) name() string { return targetName(s.t, s.rs) }

// runBench parses the flags, plans the load (gate.PlanBench), runs it on
// one server or two, records each run of a configured server in the
// journal, and hands the results to the view.
func runBench(m *Meta, args []string) int {
	fs := newFlags("bench")
	gf := addGateFlags(fs)
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
	if !parseFlags(m, fs, args) {
		return ExitError
	}
	if err := load.Validate(); err != nil {
		return usageError(m, "bench", err.Error())
	}
	if *compare != "" && *compareURL != "" {
		return usageError(m, "bench", "give -compare SERVER2 or -compare-url URL2, not both")
	}
	var a benchSide
	var ok bool
	if a.t, a.rs, ok = resolveTarget(m, "bench", fs.Args(), gf); !ok {
		return ExitError
	}
	load.Set = map[string]bool{}
	for _, name := range loadFlags {
		load.Set[name] = fs.Changed(name)
	}
	var block *config.Bench
	if a.rs != nil && a.rs.server.Gate != nil {
		block = a.rs.server.Gate.Bench
	}
	bp, err := gate.PlanBench(block, load, *endpoint, *warmup, *seed, *goodput)
	if err != nil {
		return usageError(m, "bench", err.Error())
	}
	var b *benchSide
	if *compare != "" || *compareURL != "" {
		var cargs []string
		if *compare != "" {
			cargs = []string{*compare}
		}
		empty := ""
		b = &benchSide{}
		if b.t, b.rs, ok = resolveTarget(m, "bench", cargs, gateFlags{url: compareURL, model: &empty, engine: &empty, apiKeyFile: &empty}); !ok {
			return ExitError
		}
	}
	view := views.NewBench(views.TypeOf(*jsonOut), m.view(), m.ErrTerminal)
	ctx, cancel := interruptible()
	defer cancel()
	if b != nil {
		return benchCompare(ctx, m, view, bp, a, *b)
	}
	res, err := runOneBench(ctx, view, a, bp.Spec)
	if err != nil {
		view.Failed(a.name(), err)
		if res == nil {
			return ExitError
		}
	}
	checks := bp.Thresholds(res)
	if err == nil { // an interrupted run is shown but not recorded
		appendBenchJournal(m, a.rs, a.t, res, checks, bp.Checked)
	}
	addr := ""
	if a.rs != nil && bp.Block != nil {
		addr = a.rs.server.Addr()
	}
	view.Result(res, addr, bp.Checked, checks)
	if err != nil || !gate.Passed(checks) {
		return ExitError
	}
	return ExitOK
}

// benchCompare runs the load on a, then on b, and shows both. a's
// thresholds go into its journal entry only; b's block is not checked.
func benchCompare(ctx context.Context, m *Meta, view views.Bench, bp gate.BenchPlan, a, b benchSide) int {
	resA, err := runOneBench(ctx, view, a, bp.Spec)
	if err != nil {
		view.Failed(a.name(), err)
		return ExitError
	}
	checks := bp.Thresholds(resA)
	appendBenchJournal(m, a.rs, a.t, resA, checks, bp.Checked)
	resB, err := runOneBench(ctx, view, b, bp.Spec)
	if err != nil {
		view.Failed(b.name(), err)
		return ExitError
	}
	appendBenchJournal(m, b.rs, b.t, resB, nil, false)
	view.Compare(a.name(), b.name(), resA, resB)
	return ExitOK
}

// runOneBench runs spec against one side, with the view's progress.
func runOneBench(ctx context.Context, view views.Bench, side benchSide, spec gate.BenchSpec) (*gate.BenchResult, error) {
	client := gate.NewClient(max(spec.WithDefaults().Concurrency, 64))
	defer client.CloseIdleConnections()
	progress, done := view.Started(side.name(), side.t.BaseURL)
	defer done()
	return gate.Bench(ctx, client, side.t, spec, progress)
}

// appendBenchJournal records a bench of a configured server: the engine
// and model from the state when roofline started the server (else from the
// configuration), the GPUs from the inventory, the figures and verdict.
func appendBenchJournal(m *Meta, rs *resolvedServer, t gate.Target, res *gate.BenchResult, checks []gate.ThresholdCheck, checked bool) {
	if rs == nil || res == nil {
		return
	}
	served := gate.ConfiguredServed(rs.server, rs.engine, rs.model, t.Model)
	dir := stateDir(rs.cfg)
	if st, err := state.Read(filepath.Join(dir, state.StateFileName)); err == nil && st != nil {
		if s := st.Servers[rs.server.Name]; s != nil {
			served = servedOf(s)
			if served.GPUs == nil {
				served.GPUs = rs.server.GPUs
			}
		}
	}
	e := journal.Bench(time.Now(), served, journalHost(benchSnapshot(rs.cfg)), t.BaseURL, res.Summary(gate.Violations(checks), checked))
	if err := journal.Append(journal.Path(dir), e); err != nil {
		fmt.Fprintf(m.Err, "Warning: the run was not recorded in the journal: %v\n", err)
	}
}

// benchSnapshot reads the GPUs for the journal, best effort: a bench does
// not fail for want of NVML.
func benchSnapshot(cfg *config.Config) *gpu.Snapshot {
	path := ""
	if cfg.Roofline != nil && cfg.Roofline.Inventory != "" {
		path = cfg.Roofline.Inventory
		if !filepath.IsAbs(path) {
			path = filepath.Join(cfg.Dir, path)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := inventoryFor(path).Snapshot(ctx)
	if err != nil {
		return nil
	}
	return s
}
