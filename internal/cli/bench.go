package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/gate"
	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/journal"
	"github.com/roofline/roofline/internal/state"
)

func init() {
	register(&Command{
		Name:     "bench",
		Synopsis: "Benchmark a server",
		Usage: `Usage: roofline bench SERVER [options]
       roofline bench -url URL [-model NAME] [options]
       roofline bench SERVER -compare SERVER2 | -compare-url URL2 [options]

  Runs a load against a server and reports vllm bench serve's metrics under
  its names: TTFT, TPOT, ITL and E2EL (mean, median, P90, P99), request and
  token throughputs, goodput, failed requests. Prompts are token ids sent to
  /v1/completions (exact input lengths, from the server's /tokenize); every
  request generates exactly -output-tokens tokens (ignore_eos, min_tokens).
  Token counts come from the server's usage and are checked against its
  /metrics counter.

  For a SERVER, the load defaults to its gate.bench block and the block's
  thresholds are checked (when the load is the block's); a journal entry
  records the run. -compare runs the same load on a second server, one after
  the other, and prints both with their ratios: the way to compare two
  engines on one model.

Options:
  -url URL              The server's base URL, e.g. http://127.0.0.1:8000.
  -model NAME           The served model name (default: the first listed).
  -engine KIND          vllm or sglang (for the /metrics cross-check).
  -api-key-file FILE
                        The server's API key, sent as a bearer token (a named
                        SERVER uses its api_key or api_key_file by itself).
  -concurrency N        Requests in flight (closed loop). Default 1, or the
                        cap of an open loop.
  -request-rate R       Open loop: Poisson arrivals, R requests per second.
  -requests N           Measured requests (default 100).
  -duration D           Stop sending after D (e.g. 2m) instead of a count.
  -input-tokens N       Prompt length (default 1024).
  -output-tokens N      Generated tokens per request (default 128).
  -warmup N             Warm-up requests, not measured (default 1).
  -endpoint E           completions (default: token-id prompts, exact
                        lengths) or chat (text prompts, approximate).
  -goodput SLOS         e.g. "ttft:500 tpot:50 e2el:10000" (ms), as vLLM's
                        --goodput: good requests per second.
  -seed N               Seed of the prompts and arrivals (default 0).
  -compare SERVER2      Also run the load on SERVER2 and compare.
  -compare-url URL2     Also run the load on URL2 and compare.
  -json                 Print vllm bench serve's result JSON (with
                        -compare: {"a": ..., "b": ...}).

  Exits 1 when the benchmark cannot run or a threshold is missed.
`,
		Run: runBench,
	})
}

// loadFlags are the flags that change the load (against gate.bench).
var loadFlags = []string{"concurrency", "request-rate", "requests", "duration", "input-tokens", "output-tokens", "endpoint"}

func runBench(m *Meta, args []string) int {
	fs := newFlags("bench")
	gf := addGateFlags(fs)
	concurrency := fs.Int("concurrency", 0, "")
	rate := fs.Float64("request-rate", 0, "")
	requests := fs.Int("requests", 0, "")
	duration := fs.Duration("duration", 0, "")
	inTok := fs.Int("input-tokens", 0, "")
	outTok := fs.Int("output-tokens", 0, "")
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
	for _, f := range []struct {
		name string
		bad  bool
	}{
		{"concurrency", *concurrency < 0}, {"request-rate", *rate < 0}, {"requests", *requests < 0},
		{"duration", *duration < 0}, {"input-tokens", *inTok < 0}, {"output-tokens", *outTok < 0},
	} {
		if f.bad {
			return usageError(m, "bench", "-"+f.name+" cannot be negative")
		}
	}
	if *compare != "" && *compareURL != "" {
		return usageError(m, "bench", "give -compare SERVER2 or -compare-url URL2, not both")
	}
	t, rs, ok := resolveTarget(m, "bench", fs.Args(), gf)
	if !ok {
		return ExitError
	}

	spec := gate.BenchSpec{Endpoint: *endpoint, Seed: *seed, Warmup: *warmup}
	if *warmup == 0 {
		spec.Warmup = -1 // 0 asked: none (the spec's 0 means the default)
	}
	var block *config.Bench
	if rs != nil && rs.server.Gate != nil && rs.server.Gate.Bench != nil {
		block = rs.server.Gate.Bench
		fromBlock := gate.SpecFromConfig(block)
		spec.Concurrency, spec.RequestRate, spec.Requests = fromBlock.Concurrency, fromBlock.RequestRate, fromBlock.Requests
		spec.InputTokens, spec.OutputTokens = fromBlock.InputTokens, fromBlock.OutputTokens
	}
	changed := false
	for _, name := range loadFlags {
		changed = changed || fs.Changed(name)
	}
	if fs.Changed("concurrency") {
		spec.Concurrency = *concurrency
	}
	if fs.Changed("request-rate") {
		spec.RequestRate = *rate
		if !fs.Changed("concurrency") {
			spec.Concurrency = 0 // an open loop without a cap unless one is asked
		}
	}
	if fs.Changed("requests") || fs.Changed("duration") {
		spec.Requests, spec.Duration = *requests, *duration
	}
	if fs.Changed("input-tokens") {
		spec.InputTokens = *inTok
	}
	if fs.Changed("output-tokens") {
		spec.OutputTokens = *outTok
	}
	if *goodput != "" {
		if err := parseGoodput(*goodput, &spec); err != nil {
			return usageError(m, "bench", err.Error())
		}
	}
	if err := spec.WithDefaults().Validate(); err != nil {
		return usageError(m, "bench", err.Error())
	}

	var tB gate.Target
	var rsB *resolvedServer
	comparing := *compare != "" || *compareURL != ""
	if comparing {
		var cargs []string
		if *compare != "" {
			cargs = []string{*compare}
		}
		empty := ""
		tB, rsB, ok = resolveTarget(m, "bench", cargs, gateFlags{url: compareURL, model: &empty, engine: &empty, apiKeyFile: &empty})
		if !ok {
			return ExitError
		}
	}

	ctx, cancel := interruptible()
	defer cancel()
	resA, errA := runOneBench(ctx, m, t, rs, spec, *jsonOut)
	if errA != nil {
		fmt.Fprintf(m.Err, "Error: benchmark of %s: %v\n", targetName(t, rs), errA)
		if resA == nil {
			return ExitError
		}
	}
	var checks []gate.ThresholdCheck
	checked := block != nil && !changed
	if checked {
		checks = gate.EvaluateThresholds(resA, block)
	}
	code := ExitOK
	if errA != nil {
		code = ExitError // an interrupted run is shown but not recorded
	} else {
		appendBenchJournal(m, rs, t, resA, checks, checked)
	}

	if comparing {
		if errA != nil {
			return code
		}
		resB, errB := runOneBench(ctx, m, tB, rsB, spec, *jsonOut)
		if errB != nil {
			fmt.Fprintf(m.Err, "Error: benchmark of %s: %v\n", targetName(tB, rsB), errB)
			return ExitError
		}
		appendBenchJournal(m, rsB, tB, resB, nil, false)
		if *jsonOut {
			printJSON(m.Out, map[string]*gate.BenchResult{"a": resA, "b": resB})
			return code
		}
		gate.RenderCompare(m.Out, targetName(t, rs), targetName(tB, rsB), resA, resB)
		for _, side := range []struct {
			name string
			r    *gate.BenchResult
		}{{"A", resA}, {"B", resB}} {
			for _, n := range side.r.Notes() {
				fmt.Fprintf(m.Out, "%s: %s\n", side.name, n)
			}
		}
		if !sameWork(resA, resB) {
			fmt.Fprintln(m.Out, "Warning: the two servers did not do the same work (token totals differ); compare the throughputs with care.")
		}
		return code
	}

	if *jsonOut {
		printJSON(m.Out, resA)
	} else {
		resA.Render(m.Out)
	}
	if rs != nil && block != nil && !*jsonOut {
		if !checked {
			fmt.Fprintf(m.Out, "Thresholds of %s gate.bench not checked: the load differs from the block's.\n", rs.server.Addr())
		} else {
			fmt.Fprintf(m.Out, "Thresholds of %s gate.bench:\n", rs.server.Addr())
			for _, c := range checks {
				mark := "pass"
				if !c.OK {
					mark = "FAIL"
				}
				fmt.Fprintf(m.Out, "  %s  %s\n", mark, c.Message)
			}
		}
	}
	for _, c := range checks {
		if !c.OK {
			code = ExitError
		}
	}
	return code
}

// sameWork reports whether two runs generated and read the same tokens.
func sameWork(a, b *gate.BenchResult) bool {
	return a.TotalOutputTokens == b.TotalOutputTokens && a.Completed == b.Completed &&
		(!a.InputTokensExact || !b.InputTokensExact || a.TotalInputTokens == b.TotalInputTokens)
}

// parseGoodput reads vLLM's --goodput syntax: "ttft:MS tpot:MS e2el:MS",
// separated by spaces or commas.
func parseGoodput(s string, spec *gate.BenchSpec) error {
	for _, part := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' }) {
		name, val, found := strings.Cut(part, ":")
		msv, err := strconv.ParseFloat(val, 64)
		if !found || err != nil || msv <= 0 {
			return fmt.Errorf("-goodput %q: write SLOs as name:milliseconds, e.g. ttft:500 tpot:50", part)
		}
		d := time.Duration(msv * float64(time.Millisecond))
		switch name {
		case "ttft":
			spec.GoodputTTFT = d
		case "tpot":
			spec.GoodputTPOT = d
		case "e2el":
			spec.GoodputE2EL = d
		default:
			return fmt.Errorf("-goodput: unknown SLO %q; use ttft, tpot or e2el", name)
		}
	}
	return nil
}

// runOneBench runs spec against one target, drawing a progress bar on a
// terminal.
func runOneBench(ctx context.Context, m *Meta, t gate.Target, rs *resolvedServer, spec gate.BenchSpec, quiet bool) (*gate.BenchResult, error) {
	full := spec.WithDefaults()
	client := gate.NewClient(max(full.Concurrency, 64))
	defer client.CloseIdleConnections()
	var progress func(done, total int)
	var bar *benchBar
	if m.ErrTerminal {
		bar = &benchBar{w: m.Err, label: "Benchmarking " + targetName(t, rs)}
		progress = bar.update
	} else if !quiet {
		fmt.Fprintf(m.Err, "Benchmarking %s at %s...\n", targetName(t, rs), t.BaseURL)
	}
	res, err := gate.Bench(ctx, client, t, spec, progress)
	if bar != nil {
		bar.finish()
	}
	return res, err
}

// benchBar draws "label [=====>    ] 45/100" on one terminal line.
type benchBar struct {
	w     io.Writer
	label string
	mu    sync.Mutex
	last  time.Time
	drawn bool
}

func (p *benchBar) update(done, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Since(p.last) < 100*time.Millisecond && done != total {
		return
	}
	p.last = time.Now()
	p.drawn = true
	if total <= 0 {
		fmt.Fprintf(p.w, "\r%s: %d requests done", p.label, done)
		return
	}
	const width = 30
	fill := width * done / total
	line := strings.Repeat("=", fill)
	if fill < width {
		line += ">" + strings.Repeat(" ", width-fill-1)
	}
	fmt.Fprintf(p.w, "\r%s [%s] %d/%d", p.label, line, done, total)
}

func (p *benchBar) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// appendBenchJournal records a bench of a configured server: the engine
// and model from the state when roofline started the server (else from the
// configuration), the GPUs from the inventory, the figures and verdict.
func appendBenchJournal(m *Meta, rs *resolvedServer, t gate.Target, res *gate.BenchResult, checks []gate.ThresholdCheck, checked bool) {
	if rs == nil || res == nil {
		return
	}
	served := journal.Served{Server: rs.server.Name, Model: journal.ModelInfo{Name: t.Model}, GPUs: rs.server.GPUs}
	if eng := rs.engine; eng != nil {
		served.Engine = journal.EngineInfo{Kind: eng.Kind, Version: eng.Version, Identity: eng.Image}
		switch {
		case eng.Image != "":
		case eng.Rehearsal:
			served.Engine.Identity = "rehearsal"
		case len(eng.Command) > 0:
			served.Engine.Identity = strings.Join(eng.Command, " ")
		}
	}
	if rs.model != nil {
		served.Model.Path = rs.model.Path
	}
	dir := stateDir(rs.cfg)
	if st, err := state.Read(filepath.Join(dir, state.StateFileName)); err == nil && st != nil {
		if s := st.Servers[rs.server.Name]; s != nil {
			served = servedOf(s)
			if served.GPUs == nil {
				served.GPUs = rs.server.GPUs
			}
		}
	}
	var violations []gate.Violation
	for _, c := range checks {
		if !c.OK {
			violations = append(violations, c.Violation)
		}
	}
	e := journal.Bench(time.Now(), served, journalHost(benchSnapshot(rs.cfg)), t.BaseURL, res.Summary(violations, checked))
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
