package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/gpu/gputest"
	"github.com/roofline/roofline/internal/state"
)

// keptHCL is a proxied server that keeps its previous instance for 10m.
const keptHCL = `
server "qwen" {
  engine                 = engine.vllm_016
  model                  = model.qwen
  gpus                   = [0]
  port                   = 8000
  max_model_len          = 32768
  gpu_memory_utilization = 0.45
  lifecycle {
    create_before_destroy = true
    keep_previous         = "10m"
  }
}
`

// otherHCL is a second server on GPU 0 with the same share.
const otherHCL = `
server "other" {
  engine                 = engine.vllm_016
  model                  = model.qwen
  gpus                   = [0]
  port                   = 8001
  max_model_len          = 32768
  gpu_memory_utilization = 0.45
}
`

// keptState is the state after a rollout of keptHCL that kept the previous
// instance (pid 900), the switch readyAgo before the plan.
func keptState(t *testing.T, readyAgo time.Duration) (*state.File, map[string]*Observation, *Plan) {
	t.Helper()
	first := run(t, tc{hcl: keptHCL})
	st, obs := stateFrom(first)
	s := st.Servers["qwen"]
	s.ReadyAt = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).Add(-readyAgo)
	prev := s.Clone()
	prev.PID, prev.ID, prev.Status = 900, state.ProcessID(900), state.StatusKept
	prev.Engine.Version = "0.8.5"
	prev.ClaimBytes = first.Change("qwen").After.ClaimBytes
	s.Deposed = prev
	obs["qwen"].Kept = &Observation{Alive: true, GPUPids: []int{900}}
	return st, obs, first
}

func TestKeptInstanceInThePlan(t *testing.T) {
	st, obs, first := keptState(t, 2*time.Minute)
	claim := first.Change("qwen").After.ClaimBytes
	if claim == 0 {
		t.Fatal("plan predicts no claim for the server")
	}

	// Within its window: no change, and the plan shows it with its memory.
	p := run(t, tc{hcl: keptHCL, prior: st, observed: obs})
	c := wantAction(t, p, "qwen", NoOp)
	if p.HasChanges() || p.HasErrors() {
		t.Fatalf("a kept instance within its window is no change: %v", summaries(p))
	}
	k := c.Kept
	if k == nil || k.PID != 900 || k.Stop != "" || k.MemoryBytes != claim || k.MemorySource != "claimed at its start" ||
		!k.Until.Equal(time.Date(2026, 11, 30, 12, 8, 0, 0, time.UTC)) {
		t.Fatalf("kept instance: %+v", k)
	}
	golden(t, "kept-instance", p)

	// Its window ended: apply stops it, and the plan says so.
	st2, obs2, _ := keptState(t, 20*time.Minute)
	p = run(t, tc{hcl: keptHCL, prior: st2, observed: obs2})
	c = wantAction(t, p, "qwen", Update)
	if c.Kept == nil || c.Kept.Stop != "window ended" || !strings.Contains(c.Reason, "rollback window ended") {
		t.Fatalf("kept instance: %+v, reason %q", c.Kept, c.Reason)
	}
	golden(t, "kept-instance-window-ended", p)

	// keep_previous removed: the window ends now.
	noKeep := strings.Replace(keptHCL, `keep_previous         = "10m"`, "", 1)
	p = run(t, tc{hcl: noKeep, prior: st, observed: obs})
	if c := wantAction(t, p, "qwen", Update); c.Kept == nil || !strings.HasPrefix(c.Kept.Stop, "window ended") {
		t.Fatalf("kept instance without keep_previous: %+v", c.Kept)
	}

	// Gone: apply forgets it.
	gone := map[string]*Observation{"qwen": {Alive: true, GPUPids: obs["qwen"].GPUPids, Kept: &Observation{Detail: "pid 900 exited"}}}
	p = run(t, tc{hcl: keptHCL, prior: st, observed: gone})
	if c := wantAction(t, p, "qwen", Update); c.Kept == nil || !c.Kept.Gone || !strings.Contains(c.Reason, "is gone") {
		t.Fatalf("gone kept instance: %+v, reason %q", c.Kept, c.Reason)
	}

	// The server is destroyed: so is its kept instance.
	p = run(t, tc{hcl: keptHCL, prior: st, observed: obs, mode: ModeDestroy})
	if c := wantAction(t, p, "qwen", Delete); c.Kept == nil || c.Kept.Stop != "the server is destroyed" {
		t.Fatalf("destroy: %+v", c.Kept)
	}
}

// The memory checks count a kept instance: the GPUs hold both it and every
// server.
func TestKeptInstanceCountsInTheMemoryChecks(t *testing.T) {
	st, obs, _ := keptState(t, 2*time.Minute)
	both := keptHCL + otherHCL

	// Without the kept instance, 0.45 + 0.45 of GPU 0 fits.
	plain, plainObs, _ := keptState(t, 2*time.Minute)
	plain.Servers["qwen"].Deposed = nil
	plainObs["qwen"].Kept = nil
	if p := run(t, tc{hcl: both, prior: plain, observed: plainObs}); p.HasErrors() {
		t.Fatalf("two servers of 0.45 should fit: %v", summaries(p))
	}

	// With it, the GPU would need 3 × 0.45.
	p := run(t, tc{hcl: both, prior: st, observed: obs})
	var detail string
	for _, d := range p.Diagnostics {
		if d.Summary == "Servers on one GPU do not fit together" {
			detail = d.Detail
		}
	}
	if !strings.Contains(detail, "qwen's kept previous instance") || !strings.Contains(detail, "rollback window ends") {
		t.Fatalf("the kept instance must count on GPU 0: %v\n%s", summaries(p), detail)
	}

	// Its processes in the GPU snapshot: measured, and not foreign.
	measured := gputest.H100s(8, gputest.WithProcess(0, 900, 30<<30, "vllm serve"))
	p = run(t, tc{hcl: keptHCL, prior: st, observed: obs, snap: measured})
	c := wantAction(t, p, "qwen", NoOp)
	if c.Kept == nil || c.Kept.MemorySource != "measured" || c.Kept.MemoryBytes != 30<<30 {
		t.Fatalf("measured kept instance: %+v", c.Kept)
	}
	for _, s := range summaries(p) {
		if strings.Contains(s, "Foreign") {
			t.Errorf("the kept instance's process is roofline's, not foreign: %v", summaries(p))
		}
	}
}

// TestTargetCountsUntargetedKeptInstance: with -target, a server left out
// of the plan keeps its previous instance for rollback as well (apply does
// not touch it): a targeted server that does not fit beside both is an
// error, as in the plan of every server.
func TestTargetCountsUntargetedKeptInstance(t *testing.T) {
	st, obs, _ := keptState(t, 2*time.Minute)
	for _, targets := range [][]string{nil, {"other"}} {
		p := run(t, tc{hcl: keptHCL + otherHCL, prior: st, observed: obs, targets: targets})
		var detail string
		for _, d := range p.Diagnostics {
			if d.Summary == "Servers on one GPU do not fit together" {
				detail = d.Detail
			}
		}
		if !strings.Contains(detail, "qwen's kept previous instance") {
			t.Errorf("targets %v: the kept instance must count on GPU 0: %v\n%s", targets, summaries(p), detail)
		}
	}
}
