package process

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/roofline/roofline/internal/portcheck"
	"github.com/roofline/roofline/internal/state"
)

// Described is a process roofline did not start, read for roofline import:
// its identity (as Start records one), environment and age.
type Described struct {
	Instance state.Instance // PID, Group, StartTime, BootID, Cmdline
	Session  int
	Env      map[string]string
	Uptime   time.Duration
	// OwnGroup: the process leads its own session and group (started with
	// setsid, by systemd, by a container runtime), so roofline's stop, which
	// signals the group, reaches it and its workers only. A process in its
	// shell's group is refused a stop instead (see mayStop).
	OwnGroup bool
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's start time; 100 on
// every Linux architecture roofline runs on.
const clockTicks = 100

// DescribeListener describes the process that listens on port (roofline
// import port:N), as far as this user can see.
func (d *Driver) DescribeListener(port int) (*Described, error) {
	pid, _, ok := portcheck.Owner(port)
	if !ok {
		return nil, fmt.Errorf("nothing this user can see listens on port %d", port)
	}
	return d.Describe(pid)
}

// Describe reads pid's command line, environment and stat. Reading another
// user's environ needs the same user (or root): the error says so.
func (d *Driver) Describe(pid int) (*Described, error) {
	st, err := d.proc.stat(pid)
	if err != nil {
		return nil, fmt.Errorf("pid %d: %w", pid, err)
	}
	if st.State == 'Z' {
		return nil, fmt.Errorf("pid %d has exited (a zombie)", pid)
	}
	cl, err := d.proc.cmdline(pid)
	if err != nil {
		return nil, fmt.Errorf("pid %d: %w", pid, err)
	}
	envB, err := os.ReadFile(filepath.Join(string(d.proc), strconv.Itoa(pid), "environ"))
	if err != nil {
		return nil, fmt.Errorf("pid %d: reading its environment: %w (run roofline as the engine's user, or root)", pid, err)
	}
	boot, err := d.proc.bootID()
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	for _, kv := range bytes.Split(bytes.TrimRight(envB, "\x00"), []byte{0}) {
		if k, v, ok := strings.Cut(string(kv), "="); ok {
			env[k] = v
		}
	}
	out := &Described{
		Instance: state.Instance{Driver: state.DriverProcess, ID: state.ProcessID(pid), PID: pid, Group: st.PGRP, StartTime: st.StartTime, BootID: boot, Cmdline: cl},
		Session:  st.Session, Env: env, OwnGroup: st.PGRP == pid && st.Session == pid,
	}
	if up, err := os.ReadFile(filepath.Join(string(d.proc), "uptime")); err == nil {
		if f := strings.Fields(string(up)); len(f) > 0 {
			if secs, err := strconv.ParseFloat(f[0], 64); err == nil {
				out.Uptime = time.Duration(secs*float64(time.Second)) - time.Duration(st.StartTime)*time.Second/clockTicks
			}
		}
	}
	return out, nil
}
