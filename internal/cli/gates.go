package cli

import (
	"context"
	"time"

	"github.com/roofline/roofline/internal/apply"
	"github.com/roofline/roofline/internal/gate"
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

// Check runs the promotion gates (gate.Runner: health beyond /health, then
// the smoke test and the benchmark the spec asks for).
func (g gates) Check(ctx context.Context, t apply.Target, spec *plan.GateSpec) (*state.GateResult, error) {
	var gs gate.Spec
	if spec != nil {
		gs = gate.Spec{SmokeToolcall: spec.SmokeToolcall, Reasoning: spec.Reasoning, Bench: spec.Bench}
	}
	gs.CheckHealth = gate.ServesVersion(t.Version)
	r, err := gate.Runner{}.Run(ctx, gateTarget(t), gs)
	return &state.GateResult{Passed: r.Passed, CheckedAt: r.CheckedAt, Health: r.Health, Smoke: r.Smoke, Bench: r.Bench, Summary: r.Summary}, err
}
