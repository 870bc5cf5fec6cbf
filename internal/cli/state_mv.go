package cli

import (
	"time"

	"github.com/roofline/roofline/internal/apply"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/journal"
	"github.com/roofline/roofline/internal/views"
)

func init() {
	register(&Command{
		Name:     "state mv",
		Synopsis: "Rename a server without restarting it",
		Usage:    views.UsageStateMv,
		Run:      runStateMv,
	})
}

func runStateMv(m *Meta, args []string) int {
	fs := newFlags("state mv")
	dryRun := fs.Bool("dry-run", false, "")
	lockTimeout := fs.Duration("lock-timeout", 0, "")
	dir := fs.String("state-dir", "", "")
	if !parseConfigFlags(m, fs, args) {
		return ExitError
	}
	if fs.NArg() != 2 {
		return usageError(m, "state mv", "expected two addresses: SOURCE DESTINATION, such as server.beta server.gamma")
	}
	from, to, err := config.ParseMove(fs.Arg(0), fs.Arg(1))
	if err != nil {
		return usageError(m, "state mv", err.Error())
	}
	sm, f, unlock, ok := stateFor(m, *dir, "state mv", !*dryRun, *lockTimeout)
	if !ok {
		return ExitError
	}
	defer unlock()
	s := f.Server(from)
	if s == nil || f.Server(to) != nil {
		m.view().MoveRefused(from, to, s == nil, f.Names())
		return ExitError
	}
	if *dryRun {
		m.view().WouldMove(from, to)
		return ExitOK
	}
	moveErr := apply.Move(sm.Dir(), f, from, to)
	if err := sm.Write(f); err != nil {
		m.view().Errorf("%v. The state still records server.%s.", err, from)
		return ExitError
	}
	if err := journal.Append(journal.Path(sm.Dir()), journal.MoveEntry(from, to, time.Now())); err != nil {
		m.view().Warnf("the journal does not record the rename: %v", err)
	}
	m.view().Moved(from, to, s.PID, moveErr)
	return ExitOK
}
