package cli

import (
	"context"
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
	_ = journal.Append(journal.Path(b.stateDir), journal.RolloutOf(time.Now(), s, journal.HostOf(snap()), failed))
}
