package rehearsal

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// scheduler is the batching model. At most maxSeqs sequences run at once
// (vLLM --max-num-seqs, SGLang --max-running-requests); the others wait in
// FIFO order, as the engines' schedulers keep them. While r sequences run,
// every running sequence gets its next token after
//
//	ITL × (1 + alpha·(r−1)/maxSeqs)
//
// so a full batch is (1+alpha) times slower per stream than a lone one, and the
// first token comes TTFT (plus prompt_tokens/prefill rate) after admission.
// Tokens are emitted against absolute deadlines (next = previous deadline +
// interval), never by cumulative sleeps, so a late wake-up does not push back
// every later token of the stream.
type scheduler struct {
	ttft    time.Duration
	itl     time.Duration
	alpha   float64
	maxSeqs int
	prefill float64 // prompt tokens per second of prefill; 0 = TTFT fixed

	mu      sync.Mutex
	running int
	waiting []*waiter
}

type waiter struct {
	n     int
	ready chan struct{}
}

func newScheduler(ttft, itl time.Duration, alpha float64, maxSeqs int, prefill float64) *scheduler {
	if maxSeqs < 1 {
		maxSeqs = 1
	}
	return &scheduler{ttft: ttft, itl: itl, alpha: alpha, maxSeqs: maxSeqs, prefill: prefill}
}

// admit blocks until n sequences may run (n is capped at maxSeqs so that a
// large request can still run alone). queued says whether it had to wait; ok
// is false if ctx ended first.
func (s *scheduler) admit(ctx context.Context, n int) (got int, queued, ok bool) {
	n = min(max(n, 1), s.maxSeqs)
	s.mu.Lock()
	if len(s.waiting) == 0 && s.running+n <= s.maxSeqs {
		s.running += n
		s.mu.Unlock()
		return n, false, true
	}
	w := &waiter{n: n, ready: make(chan struct{})}
	s.waiting = append(s.waiting, w)
	s.mu.Unlock()
	select {
	case <-w.ready:
		return n, true, true
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, o := range s.waiting {
			if o == w {
				s.waiting = append(s.waiting[:i], s.waiting[i+1:]...)
				return n, true, false
			}
		}
		// Admitted while giving up: hand the slots back.
		s.running -= n
		s.wakeLocked()
		return n, true, false
	}
}

// release returns n slots and admits waiters in order.
func (s *scheduler) release(n int) {
	s.mu.Lock()
	s.running -= n
	s.wakeLocked()
	s.mu.Unlock()
}

func (s *scheduler) wakeLocked() {
	for len(s.waiting) > 0 && s.running+s.waiting[0].n <= s.maxSeqs {
		w := s.waiting[0]
		s.waiting = s.waiting[1:]
		s.running += w.n
		close(w.ready)
	}
}

// counts returns the running and waiting sequence counts.
func (s *scheduler) counts() (running, waiting int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.waiting {
		waiting += w.n
	}
	return s.running, waiting
}

// factor is the slow-down of one decode step with the current batch.
func (s *scheduler) factor() float64 {
	s.mu.Lock()
	r := s.running
	s.mu.Unlock()
	if r < 1 {
		r = 1
	}
	return 1 + s.alpha*float64(r-1)/float64(s.maxSeqs)
}

// firstTokenDelay is the time from admission to the first token.
func (s *scheduler) firstTokenDelay(promptTokens int) time.Duration {
	d := scale(s.ttft, s.factor())
	if s.prefill > 0 {
		d += time.Duration(float64(promptTokens) / s.prefill * float64(time.Second))
	}
	return d
}

// nextInterval is the gap to the next token of a running stream.
func (s *scheduler) nextInterval() time.Duration { return scale(s.itl, s.factor()) }

func scale(d time.Duration, f float64) time.Duration { return time.Duration(float64(d) * f) }

// pacer waits for absolute deadlines with one reusable timer.
type pacer struct {
	t *time.Timer
}

// wakeLate is the running mean (EWMA, nanoseconds) of how late a timer
// fires on this host: the Go runtime's timers ride on epoll's millisecond
// timeout and the scheduler adds its own delay, so a sleep to T wakes at
// T + ~0.5 ms on a quiet 2-core machine. Every pacer aims that much early,
// so tokens leave on time on average: a real engine's first token is not
// half a millisecond late by construction, and the benchmark fidelity test
// measures the load generator, not our timer slack.
var wakeLate atomic.Int64

const maxWakeLead = 2 * time.Millisecond

// until sleeps until deadline; it returns false if ctx ends first.
func (p *pacer) until(ctx context.Context, deadline time.Time) bool {
	lead := time.Duration(wakeLate.Load())
	target := deadline.Add(-lead)
	d := time.Until(target)
	if d <= 0 {
		return ctx.Err() == nil
	}
	defer func() {
		late := time.Since(target)
		if late < 0 || late > maxWakeLead {
			return // a stall, not timer slack
		}
		old := wakeLate.Load()
		wakeLate.Store(old + (int64(late)-old)/16)
	}()
	if p.t == nil {
		p.t = time.NewTimer(d)
	} else {
		p.t.Reset(d)
	}
	select {
	case <-p.t.C:
		return true
	case <-ctx.Done():
		p.t.Stop()
		return false
	}
}

func (p *pacer) stop() {
	if p.t != nil {
		p.t.Stop()
	}
}
