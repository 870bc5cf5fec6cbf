package gate

import (
	"context"

	"github.com/roofline/roofline/internal/journal"
)

// BenchHooks are what the bench command sees of its runs.
type BenchHooks struct {
	// Started begins a side's run: progress (nil for none) goes to the load
	// generator, done ends it.
	Started func(name, url string) (progress func(done, total int), done func())
	// Record records a finished run of a side (the journal).
	Record func(s Side, sum *journal.BenchSummary)
}

// RunOn runs the load on s and checks the thresholds that apply. A run
// that finished is recorded with its verdict; an interrupted one is not,
// and comes back with what it measured (nil for nothing) and the error.
func (p BenchPlan) RunOn(ctx context.Context, s Side, h BenchHooks) (*BenchResult, []ThresholdCheck, error) {
	res, err := p.run(ctx, s, h)
	if res == nil {
		return nil, nil, err
	}
	checks := p.Thresholds(res)
	if err == nil {
		h.Record(s, res.Summary(Violations(checks), p.Checked))
	}
	return res, checks, err
}

// Compare runs the load on a, then on b. a's thresholds go into its record
// only; b's block is not checked. failed names the side whose run did not
// finish.
func (p BenchPlan) Compare(ctx context.Context, a, b Side, h BenchHooks) (resA, resB *BenchResult, failed string, err error) {
	if resA, _, err = p.RunOn(ctx, a, h); err != nil {
		return nil, nil, a.Name(), err
	}
	unchecked := p
	unchecked.Checked = false
	if resB, _, err = unchecked.RunOn(ctx, b, h); err != nil {
		return nil, nil, b.Name(), err
	}
	return resA, resB, "", nil
}

// run runs the spec against one side, with the hooks' progress.
func (p BenchPlan) run(ctx context.Context, s Side, h BenchHooks) (*BenchResult, error) {
	client := NewClient(max(p.Spec.WithDefaults().Concurrency, 64))
	defer client.CloseIdleConnections()
	progress, done := h.Started(s.Name(), s.Target.BaseURL)
	defer done()
	return Bench(ctx, client, s.Target, p.Spec, progress)
}
