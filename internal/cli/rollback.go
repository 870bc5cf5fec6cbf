package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/roofline/roofline/internal/apply"
)

func init() {
	register(&Command{
		Name:     "rollback",
		Synopsis: "Switch a server back to its previous instance, kept by keep_previous",
		Usage: `Usage: roofline rollback [options] SERVER

  Points the proxy of SERVER back at the instance the last rollout replaced,
  which lifecycle { keep_previous = "10m" } kept running, drained and idle:
  no reload, traffic moves within a second and no request fails. The
  instance it switches away from is kept in its place, so a second rollback
  switches forward again. The state then differs from the configuration:
  the next plan replaces the server (or roll back the configuration too).

Options:
  -lock-timeout=DURATION  Wait this long for the state lock. Default 0s.
`,
		Run: runRollback,
	})
}

func runRollback(m *Meta, args []string) int {
	fs := newFlags("rollback")
	lockTimeout := fs.Duration("lock-timeout", 0, "")
	if !parseFlags(m, fs, args) {
		return ExitError
	}
	if fs.NArg() != 1 {
		return usageError(m, "rollback", "name one SERVER")
	}
	name := strings.TrimPrefix(fs.Arg(0), "server.")
	b, st, unlock, ok := openLocked(m, "rollback", *lockTimeout)
	if !ok {
		return ExitError
	}
	defer unlock()
	ap := &apply.Applier{State: b.states, Drivers: b.drivers, StateDir: b.stateDir}
	after, took, err := ap.Rollback(context.Background(), st, name)
	if err != nil {
		fmt.Fprintf(m.Err, "Error: %v\n", err)
		return ExitError
	}
	s := after.Server(name)
	fmt.Fprintf(m.Out, "server.%s: switched back to pid %d in %s; the instance it replaced (pid %d) is kept: roofline rollback %s switches forward again.\n",
		name, s.PID, took.Round(time.Millisecond), s.Deposed.PID, name)
	return ExitOK
}
