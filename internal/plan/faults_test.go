package plan

import (
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/state"
)

// TestStoppingRecordIsRechecked: a destroy killed right after it recorded
// "stopping" left a healthy server. Refresh finds it alive and still ours:
// plan updates the record instead of showing it stopping forever; a dead
// one is started again.
func TestStoppingRecordIsRechecked(t *testing.T) {
	first := run(t, tc{hcl: qwenServer})
	st, obs := stateFrom(first)
	st.Servers["qwen"].Status = state.StatusStopping
	p := run(t, tc{hcl: qwenServer, prior: st, observed: obs})
	c := p.Change("qwen")
	if c.Action != Update || !strings.Contains(c.Reason, "still runs and is still the one roofline started") {
		t.Fatalf("alive: action %q reason %q", c.Action.Symbol(), c.Reason)
	}
	if len(p.Drift) != 1 || !strings.Contains(p.Drift[0].Summary, "recorded as stopping, but still running") {
		t.Errorf("drift %+v", p.Drift)
	}
	obs["qwen"].Alive = false
	obs["qwen"].Detail = "exited"
	if c := run(t, tc{hcl: qwenServer, prior: st, observed: obs}).Change("qwen"); c.Action != Create {
		t.Fatalf("dead: action %q reason %q", c.Action.Symbol(), c.Reason)
	}
}
