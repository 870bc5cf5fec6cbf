package views

import (
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/state"
)

func TestForceUnlockAsk(t *testing.T) {
	st := state.LockStatus{Info: &state.LockInfo{ID: "lock-1", Operation: "apply", PID: 4242}}
	for _, tc := range []struct {
		answer string
		ok     bool
		err    string // stderr
	}{
		{"yes\n", true, ""},
		{"  yes  \n", true, ""},
		{"no\n", false, "Error: force-unlock cancelled; the lock is unchanged.\n"},
		{"yes, please\n", false, "Error: force-unlock cancelled; the lock is unchanged.\n"},
		{"", false, "Error: force-unlock cancelled: no answer was given (pass -force to skip the question).\n"},
	} {
		v, out, errOut := testView(false)
		if ok := NewForceUnlock(v).Ask(st, strings.NewReader(tc.answer)); ok != tc.ok || errOut.String() != tc.err {
			t.Errorf("%q: %v, stderr %q; want %v, %q", tc.answer, ok, errOut.String(), tc.ok, tc.err)
		}
		if !strings.HasSuffix(out.String(), "Enter a value: \n") {
			t.Errorf("%q: the prompt's line is not ended: %q", tc.answer, out.String())
		}
	}
}
