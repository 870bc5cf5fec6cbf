package agent

import (
	"errors"
	"reflect"
	"testing"

	"github.com/roofline/roofline/internal/engine/logdiag"
	"github.com/roofline/roofline/internal/state"
)

func TestTriage(t *testing.T) {
	st := state.NewFile()
	srv := func(name, launch, status string) *state.Server {
		return &state.Server{Name: name, Status: status, Instance: state.Instance{LaunchID: launch}}
	}
	st.Set(srv("ok", "l1", state.StatusReady))
	st.Set(srv("hangs", "l2", state.StatusReady))
	st.Set(srv("replaced", "new", state.StatusReady))
	st.Set(srv("finished", "l4", state.StatusReady))
	st.Set(srv("undeclared", "l5", state.StatusReady))
	kept := srv("kept", "l6", state.StatusReady)
	kept.Deposed = srv("kept", "l0", state.StatusKept)
	st.Set(kept)
	keptGone := srv("kept-undeclared", "l7", state.StatusReady)
	keptGone.Deposed = srv("kept-undeclared", "l0", state.StatusKept)
	st.Set(keptGone)
	configured := func(name string) bool { return name != "undeclared" && name != "kept-undeclared" }

	reqs := []Request{
		{Name: "ok", LaunchID: "l1", Status: state.StatusReady},
		{Name: "hangs", LaunchID: "l2", Status: state.StatusReady, Replace: true},
		{Name: "gone", LaunchID: "l3"},
		{Name: "replaced", LaunchID: "old"},
		{Name: "finished", LaunchID: "l4", Status: state.StatusStarting},
		{Name: "undeclared", LaunchID: "l5"},
	}
	r := Pending(reqs)
	r.Triage(reqs, st, configured)
	skipped := map[string]string{}
	for _, o := range r.Outs {
		if o.Skipped != "" {
			skipped[o.Name] = o.Skipped
		}
	}
	want := map[string]string{
		"gone":       "it is no longer in the state",
		"replaced":   "another roofline replaced it meanwhile",
		"finished":   "the apply that was starting it has finished",
		"undeclared": "it is no longer in the configuration: roofline apply removes it",
	}
	if !reflect.DeepEqual(skipped, want) {
		t.Errorf("skipped = %q\nwant %q", skipped, want)
	}
	if !r.Out("undeclared").Lasting || r.Out("replaced").Lasting {
		t.Error("only a configuration change is a lasting reason")
	}
	if !reflect.DeepEqual(r.Targets, []string{"ok", "hangs"}) || !reflect.DeepEqual(r.Replace, []string{"hangs"}) || !reflect.DeepEqual(r.Kept, []string{"kept"}) {
		t.Errorf("targets %v replace %v kept %v", r.Targets, r.Replace, r.Kept)
	}

	// Nothing to restart: kept instances are not planned either.
	none := []Request{{Name: "gone"}}
	r = Pending(none)
	r.Triage(none, st, configured)
	if r.Targets != nil || r.Kept != nil {
		t.Errorf("targets %v kept %v", r.Targets, r.Kept)
	}

	r = Pending(reqs)
	r.Out("ok").Restarted = true
	r.Out("gone").Skipped = "x"
	outs := r.FailAll(errors.New("state locked"), "")
	for _, o := range outs {
		if failed := o.Err != nil; failed != (o.Name != "ok" && o.Name != "gone") || (failed && o.Cause != "state locked") {
			t.Errorf("FailAll: %+v", o)
		}
	}
	if r.Out("nobody") != nil {
		t.Error("Out of a name no request has")
	}
}

func TestOutcomeFailed(t *testing.T) {
	cause := errors.New("exited with status 1")
	for _, tc := range []struct {
		name        string
		d           *logdiag.Diagnosis
		class, text string
	}{
		{"classified", &logdiag.Diagnosis{Class: "oom_weights", Summary: "the weights do not fit"}, "oom_weights", "the weights do not fit"},
		{"unknown", &logdiag.Diagnosis{Class: "unknown", Summary: "?"}, "health", "exited with status 1"},
		{"no diagnosis", nil, "health", "exited with status 1"},
	} {
		var o Outcome
		err := errors.New("server.a: health: exited")
		o.Failed(err, "health", cause, tc.d)
		if o.Err != err || o.Class != tc.class || o.Cause != tc.text {
			t.Errorf("%s: %+v", tc.name, o)
		}
	}
}
