package gate

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine"
)

// ServerTarget is where a configured server answers, from this host: its
// address (a wildcard host is reached on loopback), served model name and
// engine kind.
func ServerTarget(srv *config.Server, eng *config.Engine, mod *config.Model) Target {
	t := Target{BaseURL: LocalURL(srv.Host, srv.Port)}
	if mod != nil {
		t.Model = mod.ServedName
		if t.Model == "" {
			t.Model = mod.Name
		}
	}
	if eng != nil {
		t.Engine = eng.Kind
	}
	return t
}

// LocalURL is the base URL of a server that listens on host and port, from
// this host: a wildcard host is reached on loopback.
func LocalURL(host string, port int) string {
	switch host {
	case "", "0.0.0.0", "::", "[::]":
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(strings.Trim(host, "[]"), strconv.Itoa(port))
}

// Load is a bench command's load: what was asked on the command line
// (Set names the flags given) over the server's gate.bench block.
type Load struct {
	Concurrency  int
	RequestRate  float64
	Requests     int
	Duration     time.Duration
	InputTokens  int
	OutputTokens int
	// Set holds the names of the load's flags that were given:
	// "concurrency", "request-rate", "requests", "duration",
	// "input-tokens", "output-tokens", "endpoint".
	Set map[string]bool
}

// Changed reports whether any flag changed the load.
func (l Load) Changed() bool {
	for _, on := range l.Set {
		if on {
			return true
		}
	}
	return false
}

// Apply lays the load over spec, which holds the block's load (or none):
// a request rate without a concurrency is an open loop without a cap.
func (l Load) Apply(spec *BenchSpec) {
	if l.Set["concurrency"] {
		spec.Concurrency = l.Concurrency
	}
	if l.Set["request-rate"] {
		spec.RequestRate = l.RequestRate
		if !l.Set["concurrency"] {
			spec.Concurrency = 0
		}
	}
	if l.Set["requests"] || l.Set["duration"] {
		spec.Requests, spec.Duration = l.Requests, l.Duration
	}
	if l.Set["input-tokens"] {
		spec.InputTokens = l.InputTokens
	}
	if l.Set["output-tokens"] {
		spec.OutputTokens = l.OutputTokens
	}
}

// Validate refuses negative figures; flag names it the way the command
// line spells them.
func (l Load) Validate() error {
	for _, f := range []struct {
		name string
		bad  bool
	}{
		{"concurrency", l.Concurrency < 0}, {"request-rate", l.RequestRate < 0}, {"requests", l.Requests < 0},
		{"duration", l.Duration < 0}, {"input-tokens", l.InputTokens < 0}, {"output-tokens", l.OutputTokens < 0},
	} {
		if f.bad {
			return fmt.Errorf("-%s cannot be negative", f.name)
		}
	}
	return nil
}

// BenchPlan is what a bench command runs: the spec, and the block whose
// thresholds are checked (nil when they are not: no block, or a load other
// than the block's).
type BenchPlan struct {
	Spec  BenchSpec
	Block *config.Bench
	// Checked: the load is the block's, so its thresholds apply.
	Checked bool
}

// PlanBench makes the bench command's spec: the block's load (block may
// be nil), the load's flags over it, then the run's own settings. warmup 0
// means none; goodput is vLLM's --goodput syntax.
func PlanBench(block *config.Bench, load Load, endpoint string, warmup int, seed int64, goodput string) (BenchPlan, error) {
	spec := BenchSpec{Endpoint: endpoint, Seed: seed, Warmup: warmup}
	if warmup == 0 {
		spec.Warmup = -1 // 0 asked: none (the spec's 0 means the default)
	}
	if block != nil {
		fromBlock := SpecFromConfig(block)
		spec.Concurrency, spec.RequestRate, spec.Requests = fromBlock.Concurrency, fromBlock.RequestRate, fromBlock.Requests
		spec.InputTokens, spec.OutputTokens = fromBlock.InputTokens, fromBlock.OutputTokens
	}
	load.Apply(&spec)
	if goodput != "" {
		if err := ParseGoodput(goodput, &spec); err != nil {
			return BenchPlan{}, err
		}
	}
	if err := spec.WithDefaults().Validate(); err != nil {
		return BenchPlan{}, err
	}
	return BenchPlan{Spec: spec, Block: block, Checked: block != nil && !load.Changed()}, nil
}

// Thresholds checks the block's thresholds when they apply; nil otherwise.
func (p BenchPlan) Thresholds(res *BenchResult) []ThresholdCheck {
	if !p.Checked {
		return nil
	}
	return EvaluateThresholds(res, p.Block)
}

// Passed: no threshold check failed.
func Passed(checks []ThresholdCheck) bool {
	for _, c := range checks {
		if !c.OK {
			return false
		}
	}
	return true
}

// Violations are the failed checks.
func Violations(checks []ThresholdCheck) []Violation {
	var out []Violation
	for _, c := range checks {
		if !c.OK {
			out = append(out, c.Violation)
		}
	}
	return out
}

// ParseGoodput reads vLLM's --goodput syntax: "ttft:MS tpot:MS e2el:MS",
// separated by spaces or commas.
func ParseGoodput(s string, spec *BenchSpec) error {
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

// SameWork reports whether two runs generated and read the same tokens.
func SameWork(a, b *BenchResult) bool {
	return a.TotalOutputTokens == b.TotalOutputTokens && a.Completed == b.Completed &&
		(!a.InputTokensExact || !b.InputTokensExact || a.TotalInputTokens == b.TotalInputTokens)
}

// ServesVersion is a Spec.CheckHealth that compares the version the running
// engine reports (/version, /server_info) with the pin: plan checked the
// pinned version with a probe, and this makes sure the process that
// actually started is that install (a PATH or venv that differs between the
// probe and the engine would otherwise go unnoticed). An engine that
// reports no version, or no pin, passes.
func ServesVersion(pinned string) func(*HealthResult) error {
	return func(h *HealthResult) error {
		if h == nil || h.Version == "" || pinned == "" || engine.SameVersion(pinned, h.Version) {
			return nil
		}
		return fmt.Errorf("health: the engine reports version %s, but the configuration pins %s: the process that started is not the install plan checked. "+
			"Check the engine's command and its env (PATH, VIRTUAL_ENV, PYTHONPATH), which the probe and the engine share", h.Version, pinned)
	}
}
