package plan

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/state"
)

func TestRestarts(t *testing.T) {
	before := func(hash string) *state.Server { return &state.Server{ConfigHash: hash} }
	after := func(hash string) *Desired { return &Desired{ConfigHash: hash} }
	for _, tc := range []struct {
		name        string
		changes     []*Change
		targets     []string
		kept        []string
		wantRestart []string
		wantSkipped map[string]RestartSkip
		wantChanges []string // names left in the plan
	}{
		{
			name:        "a dead server with its applied configuration restarts",
			changes:     []*Change{{Name: "a", Action: DeleteThenCreate, Before: before("h"), After: after("h")}},
			targets:     []string{"a"},
			wantRestart: []string{"a"},
			wantSkipped: map[string]RestartSkip{},
			wantChanges: []string{"a"},
		},
		{
			name:        "a lost proxy is an update the agent carries out: a new proxy, the engine left running",
			changes:     []*Change{{Name: "a", Action: Update, ProxyGone: true, Before: before("h"), After: after("h")}},
			targets:     []string{"a"},
			wantRestart: []string{"a"},
			wantSkipped: map[string]RestartSkip{},
			wantChanges: []string{"a"},
		},
		{
			name: "serving again, changed, removed, created: skipped with the reason",
			changes: []*Change{
				{Name: "noop", Action: NoOp, Before: before("h"), After: after("h")},
				{Name: "changed", Action: DeleteThenCreate, Before: before("h"), After: after("h2"), Reason: "gpus changed"},
				{Name: "gone", Action: Delete, Before: before("h")},
				{Name: "new", Action: Create, After: after("h")},
			},
			targets: []string{"noop", "changed", "gone", "new"},
			wantSkipped: map[string]RestartSkip{
				"noop":    {Reason: "nothing to do: it serves again"},
				"changed": {"its configuration changed since the last apply (gpus changed): the agent restarts only what was applied; run roofline apply", true},
				"gone":    {"the plan would delete it: left to roofline apply", true},
				"new":     {"the plan would create it: left to roofline apply", true},
			},
			wantChanges: []string{"noop", "changed", "gone", "new"},
		},
		{
			name: "kept servers ride along as no-ops after the restarts; others leave",
			changes: []*Change{
				{Name: "k", Action: Update, Before: before("h"), After: after("h")},
				{Name: "other", Action: Create, After: after("h")},
				{Name: "a", Action: DeleteThenCreate, Before: before("h"), After: after("h")},
			},
			targets:     []string{"a"},
			kept:        []string{"k"},
			wantRestart: []string{"a"},
			wantSkipped: map[string]RestartSkip{},
			wantChanges: []string{"a", "k"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Plan{Changes: tc.changes}
			restart, skipped := p.Restarts(tc.targets, tc.kept)
			if !reflect.DeepEqual(restart, tc.wantRestart) || !reflect.DeepEqual(skipped, tc.wantSkipped) {
				t.Errorf("restart %q skipped %v, want %q %v", restart, skipped, tc.wantRestart, tc.wantSkipped)
			}
			var names []string
			for _, c := range p.Changes {
				names = append(names, c.Name)
				if slices.Contains(tc.kept, c.Name) && c.Action != NoOp {
					t.Errorf("kept %s is %v, want a no-op", c.Name, c.Action)
				}
			}
			if !reflect.DeepEqual(names, tc.wantChanges) {
				t.Errorf("plan keeps %q, want %q", names, tc.wantChanges)
			}
		})
	}
}

func TestEndWindows(t *testing.T) {
	ended := &Change{Name: "a", Action: Update, After: &Desired{}, Reason: "the rollback window ended: stop the previous instance (pid 7)"}
	running := &Change{Name: "b", Action: Update, After: &Desired{}, Reason: "argv changed"}
	gone := &Change{Name: "c", Action: Delete}
	p := &Plan{Changes: []*Change{ended, running, gone}}
	if got := p.EndWindows(); !reflect.DeepEqual(got, []string{"a"}) {
		t.Fatalf("retired %q, want [a]", got)
	}
	if len(p.Changes) != 2 || p.Changes[0] != ended || p.Changes[1] != running || ended.Action != Update || running.Action != NoOp {
		t.Errorf("the plan is %v/%v, want a's update and b as a no-op", p.Changes[0].Action, p.Changes[1].Action)
	}

	none := &Plan{Changes: []*Change{{Name: "b", Action: NoOp, After: &Desired{}}, gone}}
	if got := none.EndWindows(); got != nil || len(none.Changes) != 2 {
		t.Errorf("no window ended: retired %q, %d changes; want none and the plan whole", got, len(none.Changes))
	}
}

func TestErrorsText(t *testing.T) {
	p := &Plan{Diagnostics: hcl.Diagnostics{
		{Severity: hcl.DiagError, Summary: "Bad engine", Detail: "no such engine"},
		{Severity: hcl.DiagWarning, Summary: "Old", Detail: "ignored"},
		{Severity: hcl.DiagError, Summary: "Port in use", Detail: "8000"},
	}}
	if got, want := p.ErrorsText(), "Bad engine: no such engine; Port in use: 8000"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

// TestAppliedCounts: a rollout that keeps its previous instance for
// rollback destroyed nothing ("0 destroyed"); one that stopped it, or a
// destroy-then-create, destroyed one.
func TestAppliedCounts(t *testing.T) {
	old := &state.Server{Name: "a", Instance: state.Instance{PID: 10}}
	p := &Plan{Changes: []*Change{
		{Name: "a", Action: CreateThenDelete, Before: old, After: &Desired{}},
		{Name: "b", Action: DeleteThenCreate, Before: &state.Server{Name: "b"}, After: &Desired{}},
	}}
	st := state.NewFile()
	st.Set(&state.Server{Name: "a", Instance: state.Instance{PID: 11}, Deposed: &state.Server{Name: "a", Instance: state.Instance{PID: 10}, Status: state.StatusKept}})
	if add, change, del := p.AppliedCounts(st); add != 2 || change != 0 || del != 1 {
		t.Errorf("kept: %d added, %d changed, %d destroyed; want 2, 0, 1", add, change, del)
	}
	st.Set(&state.Server{Name: "a", Instance: state.Instance{PID: 11}})
	if add, change, del := p.AppliedCounts(st); add != 2 || change != 0 || del != 2 {
		t.Errorf("stopped: %d added, %d changed, %d destroyed; want 2, 0, 2", add, change, del)
	}
}

// TestKeepsPrevious: which replacements keep the old instance for rollback,
// and so count as destroying nothing in the plan.
func TestKeepsPrevious(t *testing.T) {
	proxied := &state.Server{Name: "a", Port: 8000, Proxy: &state.Instance{PID: 9}}
	for _, tc := range []struct {
		name   string
		act    Action
		before *state.Server
		after  *Desired
		want   bool
	}{
		{"keep_previous rollout", CreateThenDelete, proxied, &Desired{Port: 8000, Proxy: true, KeepPrevious: time.Minute}, true},
		{"no keep_previous", CreateThenDelete, proxied, &Desired{Port: 8000, Proxy: true}, false},
		{"endpoint moves", CreateThenDelete, proxied, &Desired{Port: 8001, Proxy: true, KeepPrevious: time.Minute}, false},
		{"destroy first", DeleteThenCreate, proxied, &Desired{Port: 8000, Proxy: true, KeepPrevious: time.Minute}, false},
	} {
		if got := KeepsPrevious(tc.act, tc.before, tc.after); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
		p := &Plan{Changes: []*Change{{Name: "a", Action: tc.act, Before: tc.before, After: tc.after}}}
		if _, _, del := p.Counts(); (del == 0) != tc.want {
			t.Errorf("%s: plan destroys %d", tc.name, del)
		}
	}
}
