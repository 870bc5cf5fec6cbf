package process

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/state"
)

// RefusedError is a stop that was not attempted because the target is not
// provably the engine roofline started: nothing was signalled.
type RefusedError struct {
	PID, Group int
	Why        string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("refusing to signal process group %d (pid %d): %s. Nothing was signalled. The state may be damaged or edited; "+
		"look at the process with \"ps -o pid,pgid,sid,lstart,cmd -p %d\", stop the engine by hand if it is one, then run roofline refresh",
		e.Group, e.PID, e.Why, e.PID)
}

// mayStop checks, before any signal, that h's group is one roofline made:
// a signal to group ≤ 1 reaches every process of the host (kill(-1)) or
// init's, one to roofline's own group or session stops roofline itself, and
// a group that is not the recorded leader's own is someone else's. Start
// makes each engine the leader of a new session, so pid = group = session.
func (d *Driver) mayStop(h *state.Instance, obs *driver.Observed) error {
	sid := sessionOf(h)
	refuse := func(why string, args ...any) error {
		err := &RefusedError{PID: h.PID, Group: sid, Why: fmt.Sprintf(why, args...)}
		slog.Warn("signal refused", "pid", h.PID, "group", sid, "why", err.Why)
		return err
	}
	if sid <= 1 || h.PID <= 1 {
		return refuse("a group or pid of 1 or less is never an engine's; signalling it would reach init or every process of the host")
	}
	self := os.Getpid()
	if sid == self || h.PID == self || sid == syscall.Getpgrp() {
		return refuse("it is roofline's own process group")
	}
	if me, err := d.proc.stat(self); err == nil && me.Session == sid {
		return refuse("it is roofline's own session")
	}
	if h.Group > 0 && h.Group != h.PID && h.StartTime != 0 {
		return refuse("the recorded group is not the process's own (roofline starts every engine as the leader of its own session, pid = group)")
	}
	if obs.Alive {
		st, err := d.proc.stat(h.PID)
		if err == nil && (st.Session != sid || st.PGRP != sid) {
			return refuse("pid %d no longer leads it (its group is %d, its session %d)", h.PID, st.PGRP, st.Session)
		}
	}
	for _, pid := range obs.PIDs {
		if pid <= 1 || pid == self {
			return refuse("its members include pid %d", pid)
		}
	}
	return nil
}

// stopEscaped stops the processes that carry h's launch id but left its
// session (an engine child that called setsid): SIGTERM, the grace period,
// then SIGKILL. Each is checked again just before each signal. A process
// that both leaves the session and clears its environment is not found
// (docs/security.md).
func (d *Driver) stopEscaped(ctx context.Context, h *state.Instance, grace time.Duration) error {
	if h == nil || h.LaunchID == "" {
		return nil
	}
	pids := d.escaped(h)
	if len(pids) == 0 {
		return nil
	}
	slog.Info("stopping processes that left the engine's session", "launch_id", h.LaunchID, "pids", pids)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		for _, pid := range pids {
			if d.carries(pid, h.LaunchID) {
				_ = d.kill(pid, sig)
			}
		}
		wait := grace
		if sig == syscall.SIGKILL {
			wait = d.KillWait
		}
		deadline := time.Now().Add(wait)
		for {
			if pids = d.escaped(h); len(pids) == 0 {
				return nil
			}
			if !time.Now().Before(deadline) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("stop interrupted with processes %v (they left the engine's session) signalled but maybe still running: %w", pids, ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return fmt.Errorf("processes %v carry the engine's launch id %s but are still there %s after SIGKILL; check them with \"ps -o pid,stat,wchan,cmd -p PID\"",
		pids, h.LaunchID, d.KillWait)
}

// escaped lists the live processes outside h's session whose environment
// holds h's launch id.
func (d *Driver) escaped(h *state.Instance) []int {
	entries, err := os.ReadDir(string(d.proc))
	if err != nil {
		return nil
	}
	sid := sessionOf(h)
	self := os.Getpid()
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 1 || pid == self {
			continue
		}
		st, err := d.proc.stat(pid)
		if err != nil || st.State == 'Z' || st.Session == sid {
			continue
		}
		if d.carries(pid, h.LaunchID) {
			out = append(out, pid)
		}
	}
	return out
}

// carries reports whether pid's environment holds the launch id.
func (d *Driver) carries(pid int, launchID string) bool {
	environ, err := os.ReadFile(filepath.Join(string(d.proc), strconv.Itoa(pid), "environ"))
	if err != nil {
		return false
	}
	return bytes.Contains(append([]byte{0}, environ...), []byte("\x00"+driver.LaunchEnv+"="+launchID+"\x00"))
}
