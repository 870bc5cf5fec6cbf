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
	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/proxy"
	"github.com/roofline/roofline/internal/state"
)

// observer is refresh's view of a server in the state: its process (by
// identity, not pid alone) and a quick health probe.
type observer struct {
	drivers *driver.Set
	client  *http.Client
	// stateDir holds the proxies' target files (where each proxy points).
	stateDir string
}

func newObserver(drivers *driver.Set, stateDir string) *observer {
	return &observer{drivers: drivers, client: &http.Client{Timeout: 2 * time.Second}, stateDir: stateDir}
}

func (o *observer) Observe(ctx context.Context, s *state.Server) *plan.Observation {
	inst := s.Instance
	var found *state.Instance
	if !s.Running() {
		if s.Status == state.StatusFailed {
			return &plan.Observation{Alive: false, Detail: "its last start failed; nothing runs"}
		}
		if found = o.find(ctx, s.Instance); found == nil {
			return &plan.Observation{Alive: false, Detail: "no process was recorded"}
		}
		inst = *found
	}
	res := o.observe(ctx, s, inst)
	res.Found = found
	return res
}

// find looks for an instance started with the recorded launch id whose
// identity never reached the state; nil when there is none. Only the
// server's own driver is asked: a container's processes carry the launch
// id too, and must be found as the container.
func (o *observer) find(ctx context.Context, rec state.Instance) *state.Instance {
	if rec.LaunchID == "" {
		return nil
	}
	d, err := o.drivers.In(rec.Driver)
	if err != nil {
		return nil
	}
	found, err := d.Find(ctx, rec.LaunchID)
	if err != nil || len(found) == 0 {
		return nil
	}
	if found[0].LogPath == "" {
		found[0].LogPath = rec.LogPath
	}
	return &found[0]
}

func (o *observer) observe(ctx context.Context, s *state.Server, inst state.Instance) *plan.Observation {
	obs, err := o.drivers.Read(ctx, inst)
	if err != nil {
		return &plan.Observation{Alive: true, Detail: "could not be observed: " + err.Error()}
	}
	if !obs.Alive {
		detail := obs.Detail
		if len(obs.PIDs) > 0 {
			detail += fmt.Sprintf("; %d worker process(es) of it are left and will be stopped", len(obs.PIDs))
		}
		if s.LogPath != "" {
			if tail := apply.LastLines(s.LogPath, 1); len(tail) > 0 {
				detail += "; last log line: " + tail[0]
			}
		}
		return &plan.Observation{Alive: false, Detail: detail, GPUPids: obs.PIDs}
	}
	return o.serving(ctx, s, inst.Describe(), obs.PIDs)
}

// serving completes the observation of a server whose engine runs (who
// names it: "pid 123", "container 0a1b2c"): its proxy, and a quick health
// probe once it passed its gates.
func (o *observer) serving(ctx context.Context, s *state.Server, who string, pids []int) *plan.Observation {
	if p := s.Proxy; p != nil && p.Running() {
		if po, err := o.drivers.Read(ctx, *p); err == nil && !po.Alive {
			return &plan.Observation{Alive: false, Detail: fmt.Sprintf("the proxy on port %d (pid %d) is gone; the engine (%s) is restarted behind a new one", s.Port, p.PID, who), GPUPids: pids}
		}
	}
	res := &plan.Observation{Alive: true, GPUPids: pids}
	if s.Proxy != nil && o.stateDir != "" {
		res.ProxyPort = proxy.BackendPort(o.stateDir, s.Name)
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
