// Package process is the driver for engines run as local processes.
//
// Each engine runs in its own session and process group (setsid), with no
// shell in between, its stdout and stderr going straight to its log file,
// so it survives roofline exiting and a Ctrl-C in roofline's terminal. Its
// identity is pid + start time + boot id; stop signals the whole session.
package process

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/fsx"
	"github.com/roofline/roofline/internal/state"
)

// Driver starts engines as local processes. The zero value is not usable;
// call New.
type Driver struct {
	proc procFS
	// LookupEnv reads roofline's environment for the base variables
	// (driver.BaseEnvKeys); os.LookupEnv by default.
	LookupEnv func(string) (string, bool)
	// KillWait bounds the wait after SIGKILL (default 10 s).
	KillWait time.Duration
	// IndexMaxAge is how long Read reuses its scan of /proc for session
	// members (default 250 ms): a refresh of many servers scans once. Stop
	// always scans afresh, so it never signals a pid from an old scan.
	IndexMaxAge time.Duration

	// kill sends signals (syscall.Kill); tests pass a recorder, so that
	// the refusal of a dangerous target is tested without sending one.
	kill func(pid int, sig syscall.Signal) error

	mu      sync.Mutex
	exits   map[int]exitRecord // children this Driver started and reaped
	index   map[int][]int      // session id → live pids
	indexAt time.Time
}

type exitRecord struct {
	startTime uint64
	state     *os.ProcessState
}

var _ driver.Driver = (*Driver)(nil)

// New returns a process driver for this host.
func New() *Driver {
	return &Driver{proc: liveProc, LookupEnv: os.LookupEnv, KillWait: 10 * time.Second,
		IndexMaxAge: 250 * time.Millisecond, exits: map[int]exitRecord{}, kill: syscall.Kill}
}

// Start launches spec in a new session (see driver.Driver). The log file is
// created 0600; a non-empty log from an earlier run is kept as LogPath.1
// (replacing an older one), so each run's log starts clean and the one
// before stays readable. With spec.StateLogs, stale LogPath.N go (pruneOld).
func (d *Driver) Start(ctx context.Context, spec driver.LaunchSpec) (state.Instance, error) {
	i, err := d.start(ctx, spec)
	if err != nil {
		return state.Instance{}, err
	}
	return *i, nil
}

func (d *Driver) start(ctx context.Context, spec driver.LaunchSpec) (*state.Instance, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return nil, fmt.Errorf("cannot start server %s: empty command line (this is a bug in roofline)", spec.Name)
	}
	if spec.LogPath == "" {
		return nil, fmt.Errorf("cannot start server %s: no log path (this is a bug in roofline)", spec.Name)
	}
	env := driver.BuildEnv(withNoEnvClobber(spec.EnvWithLaunchID()), d.LookupEnv)
	path, err := lookPath(spec.Argv[0], envValue(env, "PATH"), spec.Dir)
	if err != nil {
		return nil, fmt.Errorf("cannot start server %s: %w", spec.Name, err)
	}
	if err := os.MkdirAll(filepath.Dir(spec.LogPath), 0o700); err != nil {
		return nil, fmt.Errorf("cannot start server %s: log directory: %w", spec.Name, err)
	}
	if err := keepPrevious(spec.LogPath); err != nil {
		return nil, fmt.Errorf("cannot start server %s: %w", spec.Name, err)
	}
	if spec.StateLogs != nil {
		pruneOld(spec.LogPath, spec.StateLogs)
	}
	logf, err := fsx.OpenAppend(spec.LogPath, 0o600)
	if err != nil {
		return nil, fmt.Errorf("cannot start server %s: log file: %w", spec.Name, err)
	}
	defer logf.Close() // the child holds its own descriptor

	cmd := &exec.Cmd{
		Path:   path,
		Args:   slices.Clone(spec.Argv),
		Env:    env,
		Dir:    spec.Dir,
		Stdout: logf, // an *os.File is handed to the child as is: no copying goroutine, no pipe to break when roofline exits
		Stderr: logf,
		// Stdin nil: /dev/null. Setsid: a new session and process group,
		// detached from roofline's terminal, so signals for roofline (Ctrl-C)
		// do not reach the engine and Stop can signal all it started.
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start server %s: %w", spec.Name, err)
	}
	pid := cmd.Process.Pid
	// Read the identity before reaping: even if the process has already
	// exited, it stays a zombie with its stat until Wait.
	st, statErr := d.proc.stat(pid)
	cmdline, _ := d.proc.cmdline(pid)
	boot, bootErr := d.proc.bootID()
	d.reap(cmd, st.StartTime)
	if err := errors.Join(statErr, bootErr); err != nil {
		// Without an identity the process could never be recognised again.
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		return nil, fmt.Errorf("cannot start server %s: cannot read the new process's identity: %w", spec.Name, err)
	}
	if len(cmdline) == 0 {
		cmdline = slices.Clone(spec.Argv) // exited already; keep what was run
	}
	launchID := spec.LaunchID
	if launchID == "" {
		launchID = spec.Env[driver.LaunchEnv]
	}
	return &state.Instance{
		Driver: state.DriverProcess, ID: state.ProcessID(pid),
		PID: pid, Group: st.PGRP, StartTime: st.StartTime, BootID: boot,
		Cmdline: cmdline, LaunchID: launchID, LogPath: spec.LogPath,
	}, nil
}

// withNoEnvClobber adds SPT_NOENV=1 unless env sets it: Python's
// setproctitle (used by vLLM and SGLang) otherwise overwrites the memory
// that /proc/<pid>/environ shows, and FindByEnv could not find the engine.
// It only limits a process title to the length of the command line.
func withNoEnvClobber(env map[string]string) map[string]string {
	if _, ok := env["SPT_NOENV"]; ok {
		return env
	}
	out := make(map[string]string, len(env)+1)
	for k, v := range env {
		out[k] = v
	}
	out["SPT_NOENV"] = "1"
	return out
}

// Find returns the sessions started with launchID (see FindByEnv).
func (d *Driver) Find(ctx context.Context, launchID string) ([]state.Instance, error) {
	if launchID == "" {
		return nil, nil
	}
	found, err := d.FindByEnv(ctx, driver.LaunchEnv, launchID)
	for i := range found {
		found[i].LaunchID = launchID
	}
	return found, err
}

// FindByEnv returns an instance for each session whose processes have key=value
// in their environment. Apply passes every engine a unique launch id this
// way and records it in the state before Start, so an engine whose pid never
// reached the state (roofline killed between Start and the state write) is
// still found and adopted, or stopped. The handle is the session leader's;
// when the leader has exited and only workers are left, it has StartTime 0,
// which Read and Stop treat as "leader gone, stop the session". Reading
// another user's environ needs root, so engines of other users are not seen.
func (d *Driver) FindByEnv(ctx context.Context, key, value string) ([]state.Instance, error) {
	boot, err := d.proc.bootID()
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(string(d.proc))
	if err != nil {
		return nil, err
	}
	needle := []byte("\x00" + key + "=" + value + "\x00")
	sessions := map[int]bool{}
	var order []int
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		environ, err := os.ReadFile(filepath.Join(string(d.proc), e.Name(), "environ"))
		if err != nil || !bytes.Contains(append([]byte{0}, environ...), needle) {
			continue
		}
		st, err := d.proc.stat(pid)
		if err != nil || st.State == 'Z' || sessions[st.Session] {
			continue
		}
		sessions[st.Session] = true
		order = append(order, st.Session)
	}
	var out []state.Instance
	for _, sid := range order {
		h := state.Instance{Driver: state.DriverProcess, ID: state.ProcessID(sid), PID: sid, Group: sid, BootID: boot}
		if leader, err := d.proc.stat(sid); err == nil && leader.State != 'Z' {
			h.Group, h.StartTime = leader.PGRP, leader.StartTime
			h.Cmdline, _ = d.proc.cmdline(sid)
			if target, err := os.Readlink(filepath.Join(string(d.proc), strconv.Itoa(sid), "fd", "1")); err == nil && filepath.IsAbs(target) {
				h.LogPath = target
			}
		}
		out = append(out, h)
	}
	return out, nil
}

// reap waits for a child in the background so that it does not stay a
// zombie while roofline runs, and keeps its exit status for ExitStatus.
func (d *Driver) reap(cmd *exec.Cmd, startTime uint64) {
	go func() {
		_ = cmd.Wait()
		d.mu.Lock()
		d.exits[cmd.Process.Pid] = exitRecord{startTime: startTime, state: cmd.ProcessState}
		d.mu.Unlock()
	}()
}

// ExitStatus returns how the process behind h exited, when this Driver
// started it and it has exited (ok false otherwise). Apply uses it to say
// "exited with status 1" next to the log tail.
func (d *Driver) ExitStatus(h state.Instance) (ps *os.ProcessState, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.exits[h.PID]
	if !ok || r.startTime != h.StartTime {
		return nil, false
	}
	return r.state, true
}

// Read observes the process behind h (see driver.Driver). The process is
// ours only if the boot id and the start time of its pid are the recorded
// ones: a pid reused by another process has another start time.
func (d *Driver) Read(ctx context.Context, h state.Instance) (*driver.Observed, error) {
	obs, err := d.read(&h, false)
	if err != nil {
		return nil, err
	}
	if obs == nil {
		if !h.Running() {
			return &driver.Observed{Detail: "no process was recorded"}, nil
		}
		return &driver.Observed{Detail: fmt.Sprintf("pid %d is no longer running", h.PID)}, nil
	}
	if !obs.Alive {
		obs.Detail = fmt.Sprintf("pid %d is no longer running", h.PID)
	}
	return obs, nil
}

// members returns the live pids of session sid, from a scan at most
// IndexMaxAge old unless fresh.
func (d *Driver) members(sid int, fresh bool) ([]int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if fresh || d.index == nil || time.Since(d.indexAt) > d.IndexMaxAge {
		idx, err := d.proc.sessions()
		if err != nil {
			return nil, err
		}
		d.index, d.indexAt = idx, time.Now()
	}
	return slices.Clone(d.index[sid]), nil
}

func (d *Driver) read(h *state.Instance, fresh bool) (*driver.Observed, error) {
	if h == nil || h.PID <= 0 {
		return nil, nil
	}
	boot, err := d.proc.bootID()
	if err != nil {
		return nil, err
	}
	if h.BootID != "" && h.BootID != boot {
		return nil, nil // the host rebooted since: nothing of it can run
	}
	leader, err := d.proc.stat(h.PID)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Exited; its workers may live on (checked below).
	case err != nil:
		return nil, err
	case h.StartTime == 0:
		// A handle from FindByEnv for a session whose leader had exited:
		// a live leader now would be a pid reused after the session ended.
		if leader.State != 'Z' {
			return nil, nil
		}
	case leader.StartTime != h.StartTime:
		// The pid belongs to another process now. The kernel reuses a pid
		// only when no process has it as session id any more, so nothing
		// of ours is left.
		return nil, nil
	}
	alive := err == nil && leader.State != 'Z'
	// A dead leader is the rare case where the answer decides what gets
	// stopped: look afresh rather than trust a scan from before it died.
	members, err := d.members(sessionOf(h), fresh || !alive)
	if err != nil {
		return nil, err
	}
	if alive && (len(members) == 0 || members[0] != h.PID) {
		// Started after the cached scan: the leader leads its session.
		members = append([]int{h.PID}, slices.DeleteFunc(members, func(p int) bool { return p == h.PID })...)
	}
	if !alive && len(members) == 0 {
		return nil, nil
	}
	obs := &driver.Observed{Alive: alive, PID: h.PID, PIDs: members}
	if alive {
		obs.RSSBytes = uint64(max(leader.RSSPages, 0)) * uint64(os.Getpagesize())
		if cl, err := d.proc.cmdline(h.PID); err == nil {
			obs.Cmdline = cl
			obs.CmdlineChanged = len(h.Cmdline) > 0 && !state.ArgvEqual(h.Cmdline, cl)
		}
	}
	return obs, nil
}

func sessionOf(h *state.Instance) int {
	if h.Group > 0 {
		return h.Group // Start made the process a session leader: sid = pgid = pid
	}
	return h.PID
}

// Stop ends the process behind h and every process of its session (see
// driver.Driver). It signals the process group and also each session member
// found in /proc, since an engine's workers may have moved to a group of
// their own. If ctx ends first, Stop returns with the processes signalled
// but possibly still running.
func (d *Driver) Stop(ctx context.Context, i state.Instance, grace time.Duration) error {
	h := &i
	if err := d.stopSession(ctx, h, grace); err != nil {
		return err
	}
	return d.stopEscaped(ctx, h, grace)
}

func (d *Driver) stopSession(ctx context.Context, h *state.Instance, grace time.Duration) error {
	obs, err := d.read(h, true)
	if err != nil || obs == nil {
		return err
	}
	if err := d.mayStop(h, obs); err != nil {
		return err
	}
	sid := sessionOf(h)
	d.signal(obs, sid, syscall.SIGTERM)
	gone, err := d.waitGone(ctx, h, grace)
	if err != nil || gone {
		return err
	}
	obs, err = d.read(h, true)
	if err != nil || obs == nil {
		return err
	}
	if err := d.mayStop(h, obs); err != nil {
		return err
	}
	d.signal(obs, sid, syscall.SIGKILL)
	if gone, err = d.waitGone(ctx, h, d.KillWait); err != nil || gone {
		return err
	}
	obs, _ = d.read(h, true)
	var left []int
	if obs != nil {
		left = obs.PIDs
	}
	return fmt.Errorf("processes %v of pid %d are still there %s after SIGKILL; they are probably stuck in the kernel (state D, a GPU driver hang?): "+
		"check with \"ps -o pid,stat,wchan,cmd -s %d\" and nvidia-smi", left, h.PID, d.KillWait, sid)
}

func (d *Driver) signal(obs *driver.Observed, sid int, sig syscall.Signal) {
	slog.Info("signal", "signal", sig.String(), "session", sid, "pids", obs.PIDs, "group_alive", obs.Alive)
	if obs.Alive {
		_ = d.kill(-sid, sig) // the group Start created (mayStop checked it)
	}
	for _, pid := range obs.PIDs {
		if pid > 1 && pid != os.Getpid() {
			_ = d.kill(pid, sig) // ESRCH: exited meanwhile
		}
	}
}

// waitGone polls until nothing of h remains, up to wait.
func (d *Driver) waitGone(ctx context.Context, h *state.Instance, wait time.Duration) (bool, error) {
	deadline := time.Now().Add(wait)
	poll := 10 * time.Millisecond
	for {
		obs, err := d.read(h, true)
		if err != nil {
			return false, err
		}
		if obs == nil {
			return true, nil
		}
		if !time.Now().Before(deadline) {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("stop of pid %d interrupted with its processes signalled but maybe still running: %w", h.PID, ctx.Err())
		case <-time.After(min(poll, time.Until(deadline))):
		}
		poll = min(2*poll, 200*time.Millisecond)
	}
}

// lookPath resolves a command name like a shell would, but in the PATH of
// the child's environment, not roofline's.
func lookPath(name, path, dir string) (string, error) {
	if strings.Contains(name, "/") {
		full := name
		if !filepath.IsAbs(full) && dir != "" {
			full = filepath.Join(dir, full)
		}
		if err := executable(full); err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		return name, nil
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		full := filepath.Join(d, name)
		if executable(full) == nil {
			return full, nil
		}
	}
	return "", fmt.Errorf("%q is not found in PATH=%s; give the engine's command as an absolute path, or set PATH in the engine's env", name, path)
}

func executable(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return fmt.Errorf("not an executable file (mode %v)", st.Mode())
	}
	return nil
}

func envValue(env []string, key string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}
