package cli

import (
	"context"
	"path/filepath"
	"strings"
	"time"

	"github.com/roofline/roofline/internal/apply"
	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/suggest"
	"github.com/roofline/roofline/internal/views"
)

func init() {
	register(&Command{
		Name:     "state",
		Hidden:   true, // its subcommands are listed instead
		Synopsis: "Inspect and change the state",
		Usage:    views.UsageState,
		Run:      runState,
	})
	register(&Command{
		Name:     "state list",
		Synopsis: "List the servers in the state",
		Usage:    views.UsageStateList,
		Run:      runStateList,
	})
	register(&Command{
		Name:     "state show",
		Synopsis: "Show one server in the state",
		Usage:    views.UsageStateShow,
		Run:      runStateShow,
	})
	register(&Command{
		Name:     "state rm",
		Synopsis: "Forget a server without stopping it",
		Usage:    views.UsageStateRm,
		Run:      runStateRm,
	})
}

func runState(m *Meta, args []string) int {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		m.view().UnknownSubcommand("state", args[0], suggest.DidYouMean(args[0], []string{"list", "show", "mv", "rm"}))
	}
	m.view().UsageErr(views.UsageState)
	return ExitError
}

// openState returns the state manager for -state-dir, or else for the
// configuration's state_dir. ok is false (and the reason printed) when the
// configuration is needed and does not load.
func openState(m *Meta, dir string) (*state.Filesystem, bool) {
	if dir == "" {
		cfg, ok := loadConfig(m)
		if !ok {
			m.view().Errorf("the state directory is set in the configuration, which did not load (see above). " +
				"Fix it, or name the directory: -state-dir=DIR (the default is .roofline next to the configuration).")
			return nil, false
		}
		dir = stateDir(cfg)
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return state.NewFilesystem(dir), true
}

// stateFor reads the state of -state-dir (or of the configuration) for a
// state subcommand. lock takes the state lock for op first (waiting up to
// timeout; not under -lock=false), so that nothing changes between the
// read and the write; unlock releases it.
func stateFor(m *Meta, dir, op string, lock bool, timeout time.Duration) (sm *state.Filesystem, f *state.File, unlock func(), ok bool) {
	if sm, ok = openState(m, dir); !ok {
		return nil, nil, nil, false
	}
	unlock = func() {}
	if lock && !m.NoLock {
		// A lock left by a roofline that ended is taken over, with a note.
		sm.OnStaleLock = m.view().StaleLockTakenOver
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		id, err := sm.Lock(ctx, state.NewLockInfo(op))
		cancel()
		if err != nil {
			m.view().Errorf("%v", err)
			return nil, nil, nil, false
		}
		unlock = func() {
			if err := sm.Unlock(id); err != nil {
				m.view().Errorf("%v", err)
			}
		}
	}
	f, err := sm.Read()
	if err != nil {
		m.view().Errorf("%v", err)
		unlock()
		return nil, nil, nil, false
	}
	return sm, f, unlock, true
}

func runStateList(m *Meta, args []string) int {
	fs := newFlags("state list")
	jsonOut := fs.Bool("json", false, "")
	dir := fs.String("state-dir", "", "")
	if !parseConfigFlags(m, fs, args) {
		return ExitError
	}
	if fs.NArg() > 0 {
		return usageError(m, "state list", "unexpected argument "+fs.Arg(0))
	}
	sm, f, _, ok := stateFor(m, *dir, "", false, 0)
	if !ok {
		return ExitError
	}
	views.NewStateList(views.TypeOf(*jsonOut), m.view()).List(sm.StatePath(), f)
	return ExitOK
}

func runStateShow(m *Meta, args []string) int {
	fs := newFlags("state show")
	jsonOut := fs.Bool("json", false, "")
	dir := fs.String("state-dir", "", "")
	if !parseConfigFlags(m, fs, args) {
		return ExitError
	}
	if fs.NArg() != 1 {
		return usageError(m, "state show", "expected one address, server.NAME")
	}
	_, f, _, ok := stateFor(m, *dir, "", false, 0)
	if !ok {
		return ExitError
	}
	servers, err := f.Lookup(fs.Args())
	if err != nil {
		m.view().Errorf("%v.", err)
		return ExitError
	}
	views.NewStateShow(views.TypeOf(*jsonOut), m.view()).Server(servers[0], newDrivers())
	return ExitOK
}

func runStateRm(m *Meta, args []string) int {
	fs := newFlags("state rm")
	dryRun := fs.Bool("dry-run", false, "")
	lockTimeout := fs.Duration("lock-timeout", 0, "")
	dir := fs.String("state-dir", "", "")
	if !parseConfigFlags(m, fs, args) {
		return ExitError
	}
	if fs.NArg() == 0 {
		return usageError(m, "state rm", "expected at least one address, server.NAME")
	}
	sm, f, unlock, ok := stateFor(m, *dir, "state rm", !*dryRun, *lockTimeout)
	if !ok {
		return ExitError
	}
	defer unlock()
	forgotten, err := apply.Forget(context.Background(), newDrivers(), f, fs.Args())
	if err != nil {
		m.view().Errorf("%v. Nothing was removed.", err)
		return ExitError
	}
	if !*dryRun {
		if err := sm.Write(f); err != nil {
			m.view().Errorf("%v", err)
			return ExitError
		}
	}
	m.view().StateRm(forgotten, *dryRun, f.Serial)
	return ExitOK
}
