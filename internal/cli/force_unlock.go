package cli

import (
	"bufio"
	"fmt"
	"strings"
)

func init() {
	register(&Command{
		Name:     "force-unlock",
		Synopsis: "Release a stuck state lock",
		Usage: `Usage: roofline force-unlock [options] LOCK_ID

  Removes the state lock with the given ID, which a failed "state is
  locked" error prints. A roofline that is killed releases its lock by
  itself (the operating system drops it), so this is needed only when the
  holder still runs but is stuck. The holder then loses the lock: its later
  attempts to save the state fail instead of overwriting newer changes.
  Asks for "yes" first.

Options:
  -force            Do not ask for confirmation.
  -state-dir=DIR    Use the state in DIR instead of the configuration's state_dir.
`,
		Run: runForceUnlock,
	})
}

func runForceUnlock(m *Meta, args []string) int {
	fs := newFlags("force-unlock")
	force := fs.Bool("force", false, "")
	dir := stateDirFlag(fs)
	if !parseFlags(m, fs, args) {
		return ExitError
	}
	if fs.NArg() != 1 {
		return usageError(m, "force-unlock", "expected one argument, the lock ID")
	}
	id := fs.Arg(0)
	sm, ok := openState(m, *dir)
	if !ok {
		return ExitError
	}
	st, err := sm.LockStatus()
	if err != nil {
		fmt.Fprintf(m.Err, "Error: cannot read the state lock: %v\n", err)
		return ExitError
	}
	if st.Info == nil || st.Info.ID == "" {
		fmt.Fprintf(m.Err, "Error: the state is not locked (%s holds no lock); nothing to unlock.\n", sm.LockPath())
		return ExitError
	}
	if st.Info.ID != id {
		fmt.Fprintf(m.Err, "Error: lock ID %q does not match the lock on the state, which is:\n%s\nNothing was unlocked. Check the ID, and that the holder above is the one you mean to unlock.\n",
			id, st.Info.String())
		return ExitError
	}
	if !*force {
		fmt.Fprintf(m.Out, "roofline will remove this lock on the state:\n%s\n", st.Info.String())
		switch {
		case !st.Held:
			fmt.Fprintln(m.Out, "Its holder ended without releasing it; the next roofline command would take it over anyway.")
		case st.Info.HolderState() == "running":
			fmt.Fprintf(m.Out, "Its holder (pid %d) is still running. Stopping it instead (kill %d) releases the lock safely; "+
				"if you unlock now, its later attempts to save the state fail.\n", st.Info.PID, st.Info.PID)
		default:
			fmt.Fprintln(m.Out, "Its holder still holds it. Make sure no roofline command is using this state before you go on.")
		}
		fmt.Fprint(m.Out, "\nDo you really want to force-unlock?\n  Only 'yes' will be accepted to confirm.\n\n  Enter a value: ")
		answer, err := bufio.NewReader(m.In).ReadString('\n')
		fmt.Fprintln(m.Out)
		if strings.TrimSpace(answer) != "yes" {
			if err != nil && strings.TrimSpace(answer) == "" {
				fmt.Fprintln(m.Err, "Error: force-unlock cancelled: no answer was given (pass -force to skip the question).")
			} else {
				fmt.Fprintln(m.Err, "Error: force-unlock cancelled; the lock is unchanged.")
			}
			return ExitError
		}
	}
	if err := sm.ForceUnlock(id); err != nil {
		fmt.Fprintf(m.Err, "Error: %v\n", err)
		return ExitError
	}
	fmt.Fprintf(m.Out, "The state lock %s has been removed. roofline commands can lock the state again.\n", id)
	return ExitOK
}
