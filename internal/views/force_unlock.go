package views

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/roofline/roofline/internal/state"
)

// ForceUnlock is roofline force-unlock's view (it has no -json).
type ForceUnlock struct{ view *View }

// NewForceUnlock returns force-unlock's view.
func NewForceUnlock(v *View) *ForceUnlock { return &ForceUnlock{v} }

// NotLocked: there is no lock to remove.
func (f *ForceUnlock) NotLocked(lockPath string) {
	f.view.Errorf("the state is not locked (%s holds no lock); nothing to unlock.", lockPath)
}

// Mismatch: the ID given is not the lock's.
func (f *ForceUnlock) Mismatch(id string, info *state.LockInfo) {
	f.view.Errorf("lock ID %q does not match the lock on the state, which is:\n%s\nNothing was unlocked. Check the ID, and that the holder above is the one you mean to unlock.",
		id, info.String())
}

// Confirm shows the lock and its holder and asks for "yes".
func (f *ForceUnlock) Confirm(st state.LockStatus) {
	w := f.view.Out
	fmt.Fprintf(w, "roofline will remove this lock on the state:\n%s\n", st.Info.String())
	switch {
	case !st.Held:
		fmt.Fprintln(w, "Its holder ended without releasing it; the next roofline command would take it over anyway.")
	case st.Info.HolderState() == "running":
		fmt.Fprintf(w, "Its holder (pid %d) is still running. Stopping it instead (kill %d) releases the lock safely; "+
			"if you unlock now, its later attempts to save the state fail.\n", st.Info.PID, st.Info.PID)
	default:
		fmt.Fprintln(w, "Its holder still holds it. Make sure no roofline command is using this state before you go on.")
	}
	fmt.Fprint(w, "\nDo you really want to force-unlock?\n  Only 'yes' will be accepted to confirm.\n\n  Enter a value: ")
}

// Ask asks for "yes" (Confirm) on in, and says when the answer is not it.
func (f *ForceUnlock) Ask(st state.LockStatus, in io.Reader) bool {
	f.Confirm(st)
	answer, err := bufio.NewReader(in).ReadString('\n')
	f.Answered()
	if strings.TrimSpace(answer) != "yes" {
		f.Cancelled(err != nil && strings.TrimSpace(answer) == "")
		return false
	}
	return true
}

// Answered ends the prompt's line.
func (f *ForceUnlock) Answered() { fmt.Fprintln(f.view.Out) }

// Cancelled: the answer was not "yes" (noAnswer: there was none).
func (f *ForceUnlock) Cancelled(noAnswer bool) {
	if noAnswer {
		f.view.Errorf("force-unlock cancelled: no answer was given (pass -force to skip the question).")
		return
	}
	f.view.Errorf("force-unlock cancelled; the lock is unchanged.")
}

// Unlocked: the lock is gone.
func (f *ForceUnlock) Unlocked(id string) {
	fmt.Fprintf(f.view.Out, "The state lock %s has been removed. roofline commands can lock the state again.\n", id)
}
