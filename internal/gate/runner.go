package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/journal"
)

// Spec is what a server's gate block asks for beyond health.
type Spec struct {
	SmokeToolcall bool
	Reasoning     bool
	Bench         *config.Bench // nil: no benchmark gate
	// CheckHealth, when set, judges a passed health report further (the
	// version the engine serves against the pin); its error fails the
	// health gate.
	CheckHealth func(*HealthResult) error
}

// Result is the outcome of a Run: the verdict, each gate's report as JSON
// (the state keeps them verbatim) and one line per gate for apply's output.
type Result struct {
	Passed    bool
	CheckedAt time.Time
	Health    json.RawMessage
	Smoke     json.RawMessage
	Bench     json.RawMessage
	Summary   []string
}

// Runner runs the promotion gates of a started server in their order:
// health beyond /health, then the smoke test and the benchmark when the
// spec asks for them. The first failure ends the run and is its error.
type Runner struct {
	// Conns bounds the client's connections (the benchmark's concurrency);
	// 64 when 0.
	Conns int
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Run gates t. The Result is never nil; Passed is false with an error that
// says which gate failed and why.
func (r Runner) Run(ctx context.Context, t Target, spec Spec) (*Result, error) {
	conns := r.Conns
	if conns <= 0 {
		conns = 64
	}
	now := r.Now
	if now == nil {
		now = time.Now
	}
	client := NewClient(conns)
	defer client.CloseIdleConnections()
	res := &Result{CheckedAt: now().UTC()}

	h, err := Health(ctx, client, t)
	res.Health = rawJSON(h)
	if h != nil {
		res.Summary = append(res.Summary, "Gate health: "+checksLine(h.OK, h.Checks))
	}
	if err != nil {
		return res, err
	}
	if h != nil && !h.OK {
		return res, fmt.Errorf("health: %s", ChecksText(h.Failed()))
	}
	if spec.CheckHealth != nil {
		if err := spec.CheckHealth(h); err != nil {
			return res, err
		}
	}
	if spec.SmokeToolcall {
		sm, err := Smoke(ctx, client, t, SmokeOptions{Reasoning: spec.Reasoning})
		res.Smoke = rawJSON(sm)
		if sm != nil {
			res.Summary = append(res.Summary, "Gate smoke: "+checksLine(sm.OK && err == nil, sm.Steps))
		}
		if err != nil {
			return res, fmt.Errorf("smoke: %w", err)
		}
	}
	if spec.Bench != nil {
		summary, err := runBench(ctx, client, t, spec.Bench)
		res.Bench = rawJSON(summary)
		if summary != nil {
			res.Summary = append(res.Summary, "Gate bench: "+benchLine(summary, spec.Bench, err == nil))
		}
		if err != nil {
			return res, fmt.Errorf("bench: %w", err)
		}
	}
	res.Passed = true
	return res, nil
}

// runBench runs the gate's benchmark and checks its thresholds; the error
// lists every threshold missed.
func runBench(ctx context.Context, client *http.Client, t Target, b *config.Bench) (*journal.BenchSummary, error) {
	res, err := Bench(ctx, client, t, SpecFromConfig(b), nil)
	if err != nil {
		return nil, err
	}
	v := CheckThresholds(res, b)
	summary := res.Summary(v, true)
	if len(v) > 0 {
		msgs := make([]string, len(v))
		for i, x := range v {
			msgs[i] = x.Message
		}
		return summary, errors.New(strings.Join(msgs, "; "))
	}
	return summary, nil
}

// checksLine is one gate's line in apply's output: the verdict and the
// checks it ran.
func checksLine(ok bool, cs []Check) string {
	verdict := "passed"
	if !ok {
		verdict = "FAILED"
	}
	var names []string
	for _, c := range cs {
		switch {
		case c.Skipped:
			names = append(names, c.Name+" (skipped)")
		case !c.OK:
			names = append(names, c.Name+" FAILED: "+c.Detail)
		default:
			names = append(names, c.Name)
		}
	}
	return fmt.Sprintf("%s (%d checks: %s)", verdict, len(cs), strings.Join(names, "; "))
}

// benchLine is the bench gate's figures, each against its threshold.
func benchLine(b *journal.BenchSummary, t *config.Bench, ok bool) string {
	verdict := "passed"
	if !ok {
		verdict = "FAILED"
	}
	against := func(v float64, unit, op string, limit float64) string {
		s := fmt.Sprintf("%.1f%s", v, unit)
		if limit > 0 {
			s += fmt.Sprintf(" (%s %.1f%s)", op, limit, unit)
		}
		return s
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	parts := []string{
		fmt.Sprintf("%d requests at concurrency %d", b.NumPrompts, b.MaxConcurrency),
		"output " + against(b.OutputThroughput, " tok/s", "min", t.MinOutputTokensPerSecond),
		"requests " + against(b.RequestThroughput, "/s", "min", t.MinRequestsPerSecond),
		"TTFT p99 " + against(b.P99TTFTMs, " ms", "max", ms(t.MaxTTFTP99)),
		"TPOT p99 " + against(b.P99TPOTMs, " ms", "max", ms(t.MaxTPOTP99)),
		"ITL p99 " + against(b.P99ITLMs, " ms", "max", ms(t.MaxITLP99)),
		fmt.Sprintf("failed %d (max %d)", b.Failed, t.MaxFailedRequests),
	}
	return verdict + ": " + strings.Join(parts, ", ")
}

// ChecksText joins failed checks into one message ("name: detail; ...").
func ChecksText(cs []Check) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, c.Name+": "+c.Detail)
	}
	if len(parts) == 0 {
		return "failed"
	}
	return strings.Join(parts, "; ")
}

// rawJSON encodes a gate report; nil for none (a nil report too: the state
// then records no report rather than null).
func rawJSON[T any](v *T) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}
