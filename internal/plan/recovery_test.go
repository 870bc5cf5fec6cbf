package plan

import (
	"testing"

	"github.com/roofline/roofline/internal/state"
)

// TestRecoveryOf: an interrupted rollout goes forward only when the new
// instance runs and passed its gates or already serves; otherwise back.
func TestRecoveryOf(t *testing.T) {
	rows := []struct {
		name      string
		status    string
		passed    bool
		proxyPort int
		alive     bool
		want      Recovery
	}{
		{"intent only, nothing started", state.StatusStarting, false, 2001, false, RecoverBack},
		{"started, gates not passed", state.StatusStarting, false, 2001, true, RecoverBack},
		{"gates passed, not switched yet", state.StatusStarting, true, 2001, true, RecoverForward},
		{"switched, switch not recorded", state.StatusStarting, false, 2002, true, RecoverForward},
		{"switch recorded, drain interrupted", state.StatusReady, true, 2002, true, RecoverForward},
		{"proxy target unreadable, ready", state.StatusReady, true, 0, true, RecoverForward},
		{"switched, but the new one died", state.StatusReady, true, 2002, false, RecoverBack},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			s := &state.Server{Name: "q", Status: r.status, BackendPort: 2002, Deposed: &state.Server{Name: "q", BackendPort: 2001}}
			if r.passed {
				s.Gate = &state.GateResult{Passed: true}
			}
			if got := RecoveryOf(s, r.proxyPort, r.alive); got != r.want {
				t.Fatalf("got %d, want %d", got, r.want)
			}
		})
	}
}
