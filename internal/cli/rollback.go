package cli

import (
	"context"
	"strings"

	"github.com/roofline/roofline/internal/apply"
	"github.com/roofline/roofline/internal/views"
)

func init() {
	register(&Command{
		Name:     "rollback",
		Synopsis: "Switch a server back to its previous instance, kept by keep_previous",
		Usage:    views.UsageRollback,
		Run:      runRollback,
	})
}

func runRollback(m *Meta, args []string) int {
	fs := newFlags("rollback")
	lockTimeout := fs.Duration("lock-timeout", 0, "")
	if !parseConfigFlags(m, fs, args) {
		return ExitError
	}
	if fs.NArg() != 1 {
		return usageError(m, "rollback", "name one SERVER")
	}
	name := strings.TrimPrefix(fs.Arg(0), "server.")
	b, st, unlock, ok := openLocked(m, "rollback", *lockTimeout, false)
	if !ok {
		return ExitError
	}
	defer unlock()
	ap := &apply.Applier{State: b.states, Drivers: b.drivers, StateDir: b.stateDir}
	after, took, err := ap.Rollback(context.Background(), st, name)
	if err != nil {
		m.view().Errorf("%v", err)
		return ExitError
	}
	s := after.Server(name)
	m.view().RolledBack(name, s.PID, took, s.Deposed.PID)
	return ExitOK
}
