package views

import (
	"bytes"
	"errors"
	"strings"
	"testing"
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
