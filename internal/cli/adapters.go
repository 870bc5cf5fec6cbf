package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/roofline/roofline/internal/apply"
	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/driver/process"
	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/state"
)

// procDriver adapts the process driver to apply's small Driver interface.
type procDriver struct{ d driver.Driver }

var _ apply.Driver = procDriver{}

func newProcDriver() procDriver { return procDriver{d: process.New()} }

func (p procDriver) Start(ctx context.Context, spec apply.Spec) (*state.Instance, error) {
	h, err := p.d.Start(ctx, driver.LaunchSpec{Name: spec.Name, Argv: spec.Argv, Env: spec.Env, Dir: spec.Dir, LogPath: spec.LogPath})
	if err != nil {
		return nil, err
	}
	return &state.Instance{Driver: state.DriverProcess, ID: state.ProcessID(h.PID), PID: h.PID, Group: h.PGID, StartTime: h.StartTime,
		BootID: h.BootID, Cmdline: h.Cmdline, LaunchID: spec.Env[apply.LaunchEnv], LogPath: h.LogPath}, nil
}

func handleOf(p *state.Instance) *driver.Handle {
	return &driver.Handle{PID: p.PID, PGID: p.Group, StartTime: p.StartTime, BootID: p.BootID, Cmdline: p.Cmdline, LogPath: p.LogPath}
}

func (p procDriver) Alive(ctx context.Context, proc *state.Instance) bool {
	if proc == nil || proc.PID <= 0 {
		return false
	}
	o, err := p.d.Read(ctx, handleOf(proc))
	return err == nil && o != nil && o.Alive
}

func (p procDriver) Stop(ctx context.Context, proc *state.Instance, grace time.Duration) error {
	if proc == nil || proc.PID <= 0 {
		return nil
	}
	return p.d.Stop(ctx, handleOf(proc), grace)
}

// observer is refresh's view of a server in the state: its process (by
// identity, not pid alone) and a quick health probe.
type observer struct {
	d      driver.Driver
	client *http.Client
	// stateDir holds the proxies' target files (where each proxy points).
	stateDir string
}

func newObserver(stateDir string) *observer {
	return &observer{d: process.New(), client: &http.Client{Timeout: 2 * time.Second}, stateDir: stateDir}
}

func (o *observer) Observe(ctx context.Context, s *state.Server) *plan.Observation {
	if s.Driver == state.DriverDocker {
		return o.observeContainer(ctx, s)
	}
	if s.PID <= 0 {
		if s.Status == state.StatusFailed {
			return &plan.Observation{Alive: false, Detail: "its last start failed; nothing runs"}
		}
		return &plan.Observation{Alive: false, Detail: "no process was recorded"}
	}
	obs, err := o.d.Read(ctx, driver.HandleOf(s))
	if err != nil {
		return &plan.Observation{Alive: true, Detail: "could not be observed: " + err.Error()}
	}
	if obs == nil || !obs.Alive {
		detail := fmt.Sprintf("pid %d is no longer running", s.PID)
		if obs != nil && len(obs.PIDs) > 0 {
			detail += fmt.Sprintf("; %d worker process(es) of it are left and will be stopped", len(obs.PIDs))
		}
		if s.LogPath != "" {
			if tail := apply.LastLines(s.LogPath, 1); len(tail) > 0 {
				detail += "; last log line: " + tail[0]
			}
		}
		return &plan.Observation{Alive: false, Detail: detail, GPUPids: pidsOf(obs)}
	}
	return o.serving(ctx, s, fmt.Sprintf("pid %d", s.PID), obs.PIDs)
}

// serving completes the observation of a server whose engine runs (who
// names it: "pid 123", "container 0a1b2c"): its proxy, and a quick health
// probe once it passed its gates.
func (o *observer) serving(ctx context.Context, s *state.Server, who string, pids []int) *plan.Observation {
	if p := s.Proxy; p != nil && p.PID > 0 {
		if po, err := o.d.Read(ctx, handleOf(p)); err == nil && (po == nil || !po.Alive) {
			return &plan.Observation{Alive: false, Detail: fmt.Sprintf("the proxy on port %d (pid %d) is gone; the engine (%s) is restarted behind a new one", s.Port, p.PID, who), GPUPids: pids}
		}
	}
	res := &plan.Observation{Alive: true, GPUPids: pids}
	if s.Proxy != nil && o.stateDir != "" {
		res.ProxyPort = apply.ProxyPort(o.stateDir, s.Name)
	}
	if s.Status == state.StatusReady {
		port := s.Port
		if s.BackendPort != 0 {
			port = s.BackendPort
		}
		host := s.Host
		if host == "" || host == "0.0.0.0" {
			host = "127.0.0.1"
		}
		healthy := false
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+host+":"+strconv.Itoa(port)+"/health", nil)
		if resp, err := o.client.Do(req); err == nil {
			resp.Body.Close()
			healthy = resp.StatusCode == http.StatusOK
			if !healthy {
				res.Detail = fmt.Sprintf("%s runs, but /health answers %d", who, resp.StatusCode)
			}
		} else {
			res.Detail = fmt.Sprintf("%s runs, but /health does not answer: %v", who, err)
		}
		res.Healthy = &healthy
		slog.Debug("health probe", "server", s.Name, "port", port, "healthy", healthy, "detail", res.Detail)
	}
	return res
}

func pidsOf(o *driver.Observed) []int {
	if o == nil {
		return nil
	}
	return o.PIDs
}

// observeContainer is refresh's view of a server that runs in a container:
// gone, exited, restarted by hand or replaced by a container started by hand
// under its name are drift; the log mirror is refreshed on the way.
func (o *observer) observeContainer(ctx context.Context, s *state.Server) *plan.Observation {
	d, err := dockerDriver()
	if err != nil {
		return &plan.Observation{Alive: true, Detail: "could not be observed: " + err.Error()}
	}
	st, err := d.Check(ctx, apply.ProcOf(s), s.Name, s.LaunchID)
	if err != nil {
		return &plan.Observation{Alive: true, Detail: "could not be observed: " + err.Error()}
	}
	if !st.Alive {
		detail := st.Detail
		if s.LogPath != "" {
			if tail := apply.LastLines(s.LogPath, 1); len(tail) > 0 {
				detail += "; last log line: " + tail[0]
			}
		}
		return &plan.Observation{Alive: false, Detail: detail}
	}
	id := s.ID
	if len(id) > 12 {
		id = id[:12]
	}
	return o.serving(ctx, s, "container "+id, st.PIDs)
}
