package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/roofline/roofline/internal/apply"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/gate"
	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/journal"
	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/state"
)

// gates runs the promotion gates for apply through the gate package.
type gates struct{ m *Meta }

var _ apply.Gates = gates{}

func newGates(m *Meta) gates { return gates{m: m} }

func gateTarget(t apply.Target) gate.Target {
	return gate.Target{BaseURL: t.BaseURL, Model: t.Model, Engine: t.Engine, APIKey: t.APIKey}
}

func (g gates) WaitReady(ctx context.Context, t apply.Target, timeout time.Duration, exited func() bool, progress func(time.Duration)) error {
	return gate.WaitReady(ctx, gateTarget(t), timeout,
		func(el time.Duration, _ string) {
			if progress != nil {
				progress(el)
			}
		},
		func() (bool, error) { return exited(), nil })
}

// Check runs health beyond /health, then the smoke test and the benchmark
// when the gate asks for them. The first failure ends the gate.
func (g gates) Check(ctx context.Context, t apply.Target, spec *plan.GateSpec) (*state.GateResult, error) {
	client := gate.NewClient(64)
	defer client.CloseIdleConnections()
	res := &state.GateResult{CheckedAt: time.Now().UTC()}
	gt := gateTarget(t)

	h, err := gate.Health(ctx, client, gt)
	res.Health = mustJSON(h)
	if h != nil {
		res.Summary = append(res.Summary, "Gate health: "+checksLine(h.OK, h.Checks))
	}
	if err != nil {
		return res, err
	}
	if h != nil && !h.OK {
		return res, fmt.Errorf("health: %s", checksText(h.Failed()))
	}
	if err := checkServedVersion(t, h); err != nil {
		return res, err
	}
	if spec != nil && spec.SmokeToolcall {
		sm, err := gate.Smoke(ctx, client, gt, gate.SmokeOptions{Reasoning: spec.Reasoning})
		res.Smoke = mustJSON(sm)
		if sm != nil {
			res.Summary = append(res.Summary, "Gate smoke: "+checksLine(sm.OK && err == nil, sm.Steps))
		}
		if err != nil {
			return res, fmt.Errorf("smoke: %w", err)
		}
	}
	if spec != nil && spec.Bench != nil {
		summary, err := runBenchGate(ctx, client, gt, spec)
		res.Bench = mustJSON(summary)
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

// checksLine is one gate's line in apply's output: the verdict and the
// checks it ran.
func checksLine(ok bool, cs []gate.Check) string {
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
	return fmt.Sprintf("%s (%d checks: %s)", verdict, len(cs), strings.Join(names, ", "))
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

func checksText(cs []gate.Check) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, c.Name+": "+c.Detail)
	}
	if len(parts) == 0 {
		return "failed"
	}
	return strings.Join(parts, "; ")
}

func mustJSON(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

// runBenchGate runs the gate's benchmark and checks its thresholds.
func runBenchGate(ctx context.Context, client *http.Client, t gate.Target, spec *plan.GateSpec) (*journal.BenchSummary, error) {
	res, err := gate.Bench(ctx, client, t, gate.SpecFromConfig(spec.Bench), nil)
	if err != nil {
		return nil, err
	}
	v := gate.CheckThresholds(res, spec.Bench)
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

// journalFailureFor records a failed start or rollout in the journal, with
// its phase, the classified cause and the error.
func journalFailureFor(b *backend, snap func() *gpu.Snapshot) func(s *state.Server, c *plan.Change, se *apply.ServerError) {
	return func(s *state.Server, c *plan.Change, se *apply.ServerError) {
		f := &journal.Failure{Phase: se.Phase, Error: se.Err.Error(), KeptOld: se.KeptOld}
		if se.Diagnosis != nil {
			f.Class = se.Diagnosis.Class
		}
		appendRollout(b, snap, s, f)
	}
}

// journalFor appends a rollout entry to the journal in the state directory.
func journalFor(b *backend, snap func() *gpu.Snapshot) func(s *state.Server, c *plan.Change) {
	return func(s *state.Server, c *plan.Change) { appendRollout(b, snap, s, nil) }
}

// appendRollout writes one rollout entry; failed is set for a failed one.
func appendRollout(b *backend, snap func() *gpu.Snapshot, s *state.Server, failed *journal.Failure) {
	e := journal.Entry{
		Time: time.Now().UTC(), Kind: journal.KindRollout, Server: s.Name,
		Engine: journal.EngineInfo{Kind: s.Engine.Kind, Version: s.Engine.Version, Identity: s.Engine.Identity},
		Model:  journal.ModelInfo{Name: s.Model.ServedName, Path: s.Model.Path, Fingerprint: s.Model.Fingerprint},
		Argv:   s.Argv,
	}
	if sn := snap(); sn != nil {
		e.DriverVersion, e.CUDAVersion = sn.DriverVersion, sn.CUDADriverVersion
		for _, g := range s.GPUs {
			if dev, ok := sn.GPU(g); ok {
				e.GPUs = append(e.GPUs, dev.Name)
			}
		}
	}
	if s.Gate != nil {
		gs := &journal.GateSummary{Passed: s.Gate.Passed, Health: "pass", Smoke: "skipped", Bench: "skipped"}
		if len(s.Gate.Smoke) > 0 {
			gs.Smoke = "pass"
		}
		if len(s.Gate.Bench) > 0 {
			gs.Bench = "pass"
			var bs journal.BenchSummary
			if json.Unmarshal(s.Gate.Bench, &bs) == nil {
				e.Bench = &bs
			}
		}
		if !s.Gate.Passed {
			gs.Health, gs.Smoke, gs.Bench = gateVerdict(s.Gate.Health), gateVerdict(s.Gate.Smoke), gateVerdict(s.Gate.Bench)
		}
		e.Gate = gs
	}
	if failed != nil {
		e.Failure = failed
		if e.Gate != nil {
			e.Gate.Passed = false
			e.Gate.Failures = append(e.Gate.Failures, failed.Error)
		}
	}
	_ = journal.Append(journal.Path(b.stateDir), e)
}

// gateVerdict reads a stored gate result: "pass", "fail" or "skipped".
func gateVerdict(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return "skipped"
	}
	var v struct {
		OK     *bool `json:"ok"`
		Passed *bool `json:"passed"`
	}
	if json.Unmarshal(raw, &v) == nil && ((v.OK != nil && !*v.OK) || (v.Passed != nil && !*v.Passed)) {
		return "fail"
	}
	return "pass"
}

// checkServedVersion compares the version the running engine reports
// (/version, /server_info) with the pin: plan checked the pinned version
// with a probe, and this makes sure the process that actually started is
// that install (a PATH or venv that differs between the probe and the
// engine would otherwise go unnoticed). An engine that reports no version
// passes.
func checkServedVersion(t apply.Target, h *gate.HealthResult) error {
	if h == nil || h.Version == "" || t.Version == "" || engine.SameVersion(t.Version, h.Version) {
		return nil
	}
	return fmt.Errorf("health: the engine reports version %s, but the configuration pins %s: the process that started is not the install plan checked. "+
		"Check the engine's command and its env (PATH, VIRTUAL_ENV, PYTHONPATH), which the probe and the engine share", h.Version, t.Version)
}
