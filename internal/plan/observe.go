package plan

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/roofline/roofline/internal/state"
)

// Instances is what observation needs of the drivers: read an instance,
// and find the instances a driver started with a launch id (newest first).
type Instances interface {
	Read(ctx context.Context, i state.Instance) (alive bool, detail string, pids []int, err error)
	Find(ctx context.Context, driver, launchID string) ([]state.Instance, error)
}

// LiveObserver is refresh's Observer of a host: whether a server's
// instance (by identity, not pid alone) and its proxy still run, and a
// quick GET /health once it passed its gates. It decides what plan reports
// as drift; the CLI fills in the drivers and the HTTP client.
type LiveObserver struct {
	Instances Instances
	// Health answers GET url with the status code (a short timeout).
	Health func(ctx context.Context, url string) (int, error)
	// ProxyBackend is the backend port server name's proxy forwards to
	// (its target file); 0 when unknown. nil: not read.
	ProxyBackend func(name string) int
	// LastLogLine is the last line of a log file; "" for none.
	LastLogLine func(path string) string
}

// Observe observes s; an instance a killed run started without recording
// it is found by its launch id (Observation.Found).
func (o *LiveObserver) Observe(ctx context.Context, s *state.Server) *Observation {
	inst := s.Instance
	var found *state.Instance
	if !s.Running() {
		if s.Status == state.StatusFailed {
			return &Observation{Alive: false, Detail: "its last start failed; nothing runs"}
		}
		if found = o.find(ctx, s.Instance); found == nil {
			return &Observation{Alive: false, Detail: "no process was recorded"}
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
func (o *LiveObserver) find(ctx context.Context, rec state.Instance) *state.Instance {
	if rec.LaunchID == "" {
		return nil
	}
	found, err := o.Instances.Find(ctx, rec.Driver, rec.LaunchID)
	if err != nil || len(found) == 0 {
		return nil
	}
	if found[0].LogPath == "" {
		found[0].LogPath = rec.LogPath
	}
	return &found[0]
}

func (o *LiveObserver) observe(ctx context.Context, s *state.Server, inst state.Instance) *Observation {
	alive, detail, pids, err := o.Instances.Read(ctx, inst)
	if err != nil {
		return &Observation{Alive: true, Detail: "could not be observed: " + err.Error()}
	}
	if !alive {
		if len(pids) > 0 {
			detail += fmt.Sprintf("; %d worker process(es) of it are left and will be stopped", len(pids))
		}
		if s.LogPath != "" && o.LastLogLine != nil {
			if l := o.LastLogLine(s.LogPath); l != "" {
				detail += "; last log line: " + l
			}
		}
		return &Observation{Alive: false, Detail: detail, GPUPids: pids}
	}
	return o.serving(ctx, s, inst.Describe(), pids)
}

// serving completes the observation of a server whose engine runs (who
// names it: "pid 123", "container 0a1b2c"): its proxy, and a quick health
// probe once it passed its gates.
func (o *LiveObserver) serving(ctx context.Context, s *state.Server, who string, pids []int) *Observation {
	res := &Observation{Alive: true, GPUPids: pids}
	defer func() {
		if !res.ProxyGone {
			return
		}
		// Whatever the engine's /health says, nothing answers on the
		// server's port. The engine is left alone: a new proxy in front
		// of it takes seconds, a restart of the engine minutes.
		which := fmt.Sprintf("pid %d", s.Proxy.PID)
		if !s.Proxy.Running() {
			which = "its start failed"
		}
		gone := fmt.Sprintf("the proxy on port %d (%s) is gone; the engine (%s) still runs behind it", s.Port, which, who)
		if res.Detail != "" {
			gone += "; " + res.Detail
		}
		unhealthy := false
		res.Detail, res.Healthy = gone, &unhealthy
	}()
	if p := s.Proxy; p != nil && p.Running() {
		if alive, _, _, err := o.Instances.Read(ctx, *p); err == nil && !alive {
			res.ProxyGone = true
		}
	} else if p != nil {
		// Its launch id was recorded, never its pid: a start that failed
		// (apply said so), unless a killed run started it (apply records
		// that one first).
		res.ProxyGone = o.find(ctx, *p) == nil
	}
	if s.Proxy != nil && o.ProxyBackend != nil {
		res.ProxyPort = o.ProxyBackend(s.Name)
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
		if code, err := o.Health(ctx, "http://"+host+":"+strconv.Itoa(port)+"/health"); err == nil {
			healthy = code == 200
			if !healthy {
				res.Detail = fmt.Sprintf("%s runs, but /health answers %d", who, code)
			}
		} else {
			res.Detail = fmt.Sprintf("%s runs, but /health does not answer: %v", who, err)
		}
		res.Healthy = &healthy
		slog.Debug("health probe", "server", s.Name, "port", port, "healthy", healthy, "detail", res.Detail)
	}
	return res
}
