// Package launch brings up a server's front proxy (internal/proxy) as a
// process of its own through the driver set, and points it at a backend.
// apply calls it, through its Proxies interface, when a create-before-destroy
// server's new engine has passed its gates.
package launch

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/proxy"
	"github.com/roofline/roofline/internal/state"
)

// Driver runs every proxy: the proxy is roofline's own binary, a process
// on the host whatever runs the engine behind it. A proxy record without a
// driver (written by hand) is one of its.
const Driver = state.DriverProcess

// Drivers is what bring-up needs of the driver set: start the proxy and
// see whether it still runs.
type Drivers interface {
	Start(ctx context.Context, spec driver.LaunchSpec) (state.Instance, error)
	Read(ctx context.Context, i state.Instance) (*driver.Observed, error)
}

// Launcher starts and points the proxies of one state directory.
type Launcher struct {
	Drivers  Drivers
	StateDir string
	// Command starts roofline's proxy: [self, "proxy"].
	Command []string
	// Ready bounds the wait for a proxy to forward to its backend; 30 s
	// when 0. A proxy that exits is seen at once; the bound is for one
	// that runs but is slow to start, as on a host whose cores are busy.
	Ready time.Duration
}

// Request says which server's proxy to bring up and where it forwards.
type Request struct {
	Name string
	// Host and Port are the server's public address, where the proxy
	// listens.
	Host string
	Port int
	// Backend is the engine's loopback port; Kind and Version the engine
	// behind it (the proxy answers its own errors in that engine's shape).
	Backend       int
	Kind, Version string
	// Key, when set, is enforced by the proxy: for an engine that takes
	// its key only on its command line. The file is in place before the
	// switch.
	Key string
	// Current is the proxy the server has, nil when none.
	Current *state.Instance
	// Moving: the server's endpoint moves and the old endpoint's proxy
	// runs on (with the default status file) until its instance drained.
	Moving bool
	// Limits are the server's proxy limits (its proxy block); nil: the
	// defaults.
	Limits *state.ProxyLimits
}

// Limits converts a server's proxy limits to the proxy's.
func Limits(l *state.ProxyLimits) proxy.Limits {
	if l == nil {
		return proxy.Limits{}
	}
	return proxy.Limits{MaxBody: l.MaxBody, MaxBuffered: l.MaxBuffered, MaxConns: l.MaxConnections,
		HeaderTimeout: l.HeaderTimeout, BodyTimeout: l.BodyTimeout, IdleTimeout: l.IdleTimeout}
}

// SetLimits gives the running proxy of server name new limits: it writes
// the limits file, which the proxy re-reads within 100 ms, and waits until
// the proxy reports them. Nothing restarts and no connection is cut (see
// internal/proxy's generation.go).
func (l Launcher) SetLimits(ctx context.Context, name string, current *state.Instance, limits *state.ProxyLimits) error {
	if current == nil {
		return nil
	}
	if !slices.Contains(current.Cmdline, "-limits-file") {
		return fmt.Errorf("the running proxy (pid %d) was started by a roofline without live limits: it keeps its limits until it restarts (at a port change, or after roofline destroy -target=server.%s)", current.PID, name)
	}
	want := Limits(limits)
	if err := proxy.WriteLimits(proxy.LimitsFile(l.StateDir, name), want); err != nil {
		return err
	}
	statusFile := proxy.StatusFileOf(current.Cmdline, l.StateDir, name)
	deadline := time.Now().Add(l.ready())
	for {
		if st, err := proxy.ReadStatus(statusFile); err == nil && st.Reports(want) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the proxy (pid %d) did not take the new limits within %s", current.PID, l.ready())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Ensure starts the server's proxy if it has none that runs, or points the
// one that runs at the new backend, and waits until it forwards there. It
// returns the proxy that serves. record is called with the new proxy before
// it starts (started false: only its launch id is known then, so that an
// interrupted run finds it) and again once it started.
func (l Launcher) Ensure(ctx context.Context, r Request, record func(p *state.Instance, started bool) error) (*state.Instance, error) {
	dir := proxy.Dir(l.StateDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	targetFile := proxy.TargetFile(l.StateDir, r.Name)
	var cmdline []string
	if r.Current != nil {
		cmdline = r.Current.Cmdline
	}
	statusFile := proxy.StatusFileOf(cmdline, l.StateDir, r.Name)
	if r.Current == nil && r.Moving {
		statusFile = proxy.MoveStatusFile(l.StateDir, r.Name, r.Port)
	}
	keyFile := proxy.KeyFile(l.StateDir, r.Name)
	if r.Key != "" {
		if err := proxy.WriteKeyFile(keyFile, r.Key); err != nil {
			return nil, err
		}
	} else if err := os.Remove(keyFile); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	line := proxy.TargetLine(r.Backend, r.Kind, r.Version)
	if r.Current != nil && l.alive(ctx, *r.Current) {
		if err := proxy.Point(ctx, targetFile, statusFile, line, l.ready()); err != nil {
			return r.Current, err
		}
		if slices.Contains(r.Current.Cmdline, "-limits-file") {
			return r.Current, l.SetLimits(ctx, r.Name, r.Current, r.Limits)
		}
		return r.Current, nil
	}
	if err := proxy.WriteLimits(proxy.LimitsFile(l.StateDir, r.Name), Limits(r.Limits)); err != nil {
		return nil, err
	}
	if err := proxy.WriteTarget(targetFile, line); err != nil {
		return nil, err
	}
	_ = os.Remove(statusFile)
	launchID := driver.NewLaunchID()
	if err := record(&state.Instance{Driver: Driver, LaunchID: launchID}, false); err != nil {
		return nil, err
	}
	listen := net.JoinHostPort(r.Host, strconv.Itoa(r.Port))
	argv := append(append([]string(nil), l.Command...), "-listen", listen, "-target-file", targetFile, "-status-file", statusFile, "-api-key-file", keyFile, "-limits-file", proxy.LimitsFile(l.StateDir, r.Name))
	logFile := proxy.LogFile(l.StateDir, r.Name)
	p, err := l.Drivers.Start(ctx, driver.LaunchSpec{Driver: Driver, Name: r.Name + "-proxy", Argv: argv,
		LogPath: logFile, Dir: l.StateDir, LaunchID: launchID})
	if err != nil {
		return nil, err
	}
	p.LaunchID = launchID
	if err := record(&p, true); err != nil {
		return &p, err
	}
	// Wait until it serves.
	backend := proxy.BackendAddr(r.Backend)
	deadline := time.Now().Add(l.ready())
	for time.Now().Before(deadline) {
		if st, err := proxy.ReadStatus(statusFile); err == nil && st.Target == backend {
			return &p, nil
		}
		if !l.alive(ctx, p) {
			return &p, fmt.Errorf("the proxy exited: %s", lastLine(logFile))
		}
		time.Sleep(20 * time.Millisecond)
	}
	return &p, fmt.Errorf("the proxy did not come up within %s", l.ready())
}

func (l Launcher) ready() time.Duration {
	if l.Ready > 0 {
		return l.Ready
	}
	return 30 * time.Second
}

// alive reports whether the instance runs what was started; one that
// cannot be observed counts as not alive.
func (l Launcher) alive(ctx context.Context, i state.Instance) bool {
	obs, err := l.Drivers.Read(ctx, i)
	return err == nil && obs.Alive
}

// lastLine is the last non-empty line of the proxy's log (its last 16 KiB).
func lastLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if info, err := f.Stat(); err == nil && info.Size() > 16<<10 {
		_, _ = f.Seek(info.Size()-16<<10, io.SeekStart)
	}
	b, _ := io.ReadAll(io.LimitReader(f, 16<<10))
	lines := bytes.Split(bytes.TrimRight(b, "\r\n"), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if l := bytes.TrimSpace(lines[i]); len(l) > 0 {
			return string(l)
		}
	}
	return ""
}
