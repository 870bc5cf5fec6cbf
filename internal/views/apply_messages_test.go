package views

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/plan"
)

func TestApplyMessages(t *testing.T) {
	for _, tc := range []struct {
		name     string
		show     func(v *View)
		out, err string // exact text on each stream
	}{
		{"apply complete", func(v *View) { v.ApplyComplete(false, 1, 2, 3, false) }, "\nApply complete! Resources: 1 added, 2 changed, 3 destroyed.\n", ""},
		{"destroy complete", func(v *View) { v.ApplyComplete(true, 0, 0, 2, false) }, "\nDestroy complete! Resources: 0 added, 0 changed, 2 destroyed.\n", ""},
		{"no approval at a pipe", func(v *View) { v.NoApproval("destroy", false) }, "",
			"Error: No way to ask for approval\n\ndestroy needs \"yes\" typed at a terminal, and stdin is not a terminal. Nothing was planned or changed. Use -auto-approve, or save a plan with roofline plan -out=FILE, review it, and run roofline apply FILE.\n"},
		{"cluster plan errors", func(v *View) { v.ApplyPlanErrors(true) }, "", "\nThe cluster plan has errors: fix them and run apply again. Nothing was changed.\n"},
		{"cluster failed", func(v *View) { v.ClusterApplyFailed(errors.New(`cluster "k": timeout`)) }, "",
			"\nError: cluster \"k\": timeout\n\nApply failed on the cluster. Run roofline plan to see what runs there.\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			tc.show(&View{Out: &out, Err: &errb})
			if out.String() != tc.out || errb.String() != tc.err {
				t.Errorf("out %q err %q, want %q %q", out.String(), errb.String(), tc.out, tc.err)
			}
		})
	}
	var out bytes.Buffer
	(&View{Out: &out, Err: &out}).ApplyComplete(false, 1, 0, 0, true)
	if !strings.Contains(out.String(), "Applied changes may be incomplete") || !strings.Contains(out.String(), "-target option") {
		t.Errorf("a targeted apply has no warning: %q", out.String())
	}
}

// TestApplyView: apply's human and JSON views print the same steps, each
// in its own form (the JSON one only on the stream).
func TestApplyView(t *testing.T) {
	p := &plan.Plan{}
	steps := func(a Apply) {
		a.NoApproval("destroy", true)
		a.Plan(p, true)
		a.NoChanges(true, true)
		a.Hooks(p).Begin("server.web", "Creating")
		a.Starting()
		a.Failed(errors.New("server.web: start: exec: no such file"))
		a.Complete(false, 1, 0, 0, false)
	}
	var out, errb bytes.Buffer
	steps(NewApply(ViewHuman, &View{Out: &out, Err: &errb}, false, func() int { return 80 }))
	for _, want := range []string{"The saved plan has no changes.\n", "server.web: Creating\n", "\nApply complete! Resources: 1 added, 0 changed, 0 destroyed.\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("human stdout lacks %q:\n%s", want, out.String())
		}
	}
	for _, want := range []string{"-input=false (or ROOFLINE_INPUT=0) forbids prompts", "exec: no such file"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("human stderr lacks %q:\n%s", want, errb.String())
		}
	}

	out.Reset()
	errb.Reset()
	steps(NewApply(ViewJSON, &View{Out: &out, Err: &errb}, false, nil))
	var types []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m Message
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		types = append(types, m.Type)
		if m.Type == "diagnostic" && m.Diagnostic.Summary == "Plan file or auto-approve required" && !strings.HasPrefix(m.Diagnostic.Detail, "destroy -json needs") {
			t.Errorf("approval: %+v", m.Diagnostic)
		}
	}
	want := []string{"version", "diagnostic", "version", "change_summary", "change_summary", "apply_start", "diagnostic", "change_summary"}
	if !slices.Equal(types, want) || errb.Len() > 0 {
		t.Errorf("JSON messages %q, want %q; stderr %q", types, want, errb.String())
	}
}
