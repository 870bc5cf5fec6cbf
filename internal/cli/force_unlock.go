package cli

import (
	"github.com/roofline/roofline/internal/views"
)

func init() {
	register(&Command{
		Name:     "force-unlock",
		Synopsis: "Release a stuck state lock",
		Usage:    views.UsageForceUnlock,
		Run:      runForceUnlock,
	})
}

func runForceUnlock(m *Meta, args []string) int {
	fs := newFlags("force-unlock")
	force := fs.Bool("force", false, "")
	dir := fs.String("state-dir", "", "")
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
		m.view().Errorf("cannot read the state lock: %v", err)
		return ExitError
	}
	view := views.NewForceUnlock(m.view())
	if st.Info == nil || st.Info.ID == "" {
		view.NotLocked(sm.LockPath())
		return ExitError
	}
	if st.Info.ID != id {
		view.Mismatch(id, st.Info)
		return ExitError
	}
	if !*force && !view.Ask(*st, m.In) {
		return ExitError
	}
	if err := sm.ForceUnlock(id); err != nil {
		m.view().Errorf("%v", err)
		return ExitError
	}
	view.Unlocked(id)
	return ExitOK
}
