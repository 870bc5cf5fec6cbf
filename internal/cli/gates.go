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
	if err != nil {
		return res, err
	}
	if h != nil && !h.OK {
		return res, fmt.Errorf("health: %s", checksText(h.Failed()))
	}
	if spec != nil && spec.SmokeToolcall {
		sm, err := gate.Smoke(ctx, client, gt, gate.SmokeOptions{Reasoning: spec.Reasoning})
		res.Smoke = mustJSON(sm)
		if err != nil {
			return res, fmt.Errorf("smoke: %w", err)
		}
	}
	if spec != nil && spec.Bench != nil {
		summary, err := runBenchGate(ctx, client, gt, spec)
		res.Bench = mustJSON(summary)
		if err != nil {
			return res, fmt.Errorf("bench: %w", err)
		}
	}
	res.Passed = true
	return res, nil
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

// journalFor appends a rollout entry to the journal in the state directory.
func journalFor(b *backend, snap func() *gpu.Snapshot) func(s *state.Server, c *plan.Change) {
	return func(s *state.Server, c *plan.Change) {
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
			e.Gate = gs
		}
		_ = journal.Append(journal.Path(b.stateDir), e)
	}
}
