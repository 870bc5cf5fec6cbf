package agent

import (
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/engine/logdiag"
	"github.com/roofline/roofline/internal/fsx"
	"github.com/roofline/roofline/internal/journal"
	"github.com/roofline/roofline/internal/jsonplan"
	"github.com/roofline/roofline/internal/state"
)

// Observation is what one look at a server's process and /health found;
// the CLI fills it with the same observer plan's refresh uses.
type Observation struct {
	Alive bool
	// ProxyGone: the engine runs but its proxy (the public port) is gone;
	// the agent has a new proxy started, never the engine restarted.
	ProxyGone bool
	// Healthy is /health's answer; nil when not probed (not ready yet).
	Healthy *bool
	Detail  string
}

// Observer looks at one server of the state.
type Observer interface {
	Observe(ctx context.Context, s *state.Server) Observation
}

// Generator asks a server for a short real generation.
type Generator interface {
	Generate(ctx context.Context, s *state.Server) error
}

// Report is one observation of every server in the state: what
// roofline check prints, /metrics exports and /snapshot returns.
type Report struct {
	Time    time.Time      `json:"time"`
	BootID  string         `json:"boot_id,omitempty"`
	Servers []ServerReport `json:"servers"`
	// Drift counts the servers whose reality differs from the state.
	Drift int `json:"drift"`
}

// ServerReport is one server's line.
type ServerReport struct {
	Name   string `json:"name"`
	Status string `json:"status"` // the state's
	PID    int    `json:"pid,omitempty"`
	Port   int    `json:"port"`
	Alive  bool   `json:"alive"`
	// ProxyGone: the engine runs, its proxy does not.
	ProxyGone bool `json:"proxy_gone,omitempty"`
	// Healthy is /health's answer (nil: not probed); Generation the last
	// short generation's (nil: not run yet).
	Healthy    *bool  `json:"healthy"`
	Generation *bool  `json:"generation"`
	Up         bool   `json:"up"`
	Detail     string `json:"detail,omitempty"`
	// Drift says how reality differs from the state; "" when it does not.
	Drift string `json:"drift,omitempty"`

	// What the agent did (from its memory, or the journal for check).
	Restarts     int       `json:"restarts"`
	Failures     int       `json:"failed_restarts"`
	GaveUp       bool      `json:"gave_up"`
	NextRestart  time.Time `json:"next_restart,omitzero"`
	LastAction   string    `json:"last_action,omitempty"`
	FailureClass string    `json:"failure_class,omitempty"`
	FailureCause string    `json:"failure_cause,omitempty"`

	KVTokensMeasured  int64         `json:"kv_tokens_measured,omitempty"`
	KVTokensPredicted int64         `json:"kv_tokens_predicted,omitempty"`
	GatePassed        *bool         `json:"gate_passed,omitempty"`
	GateCheckedAt     time.Time     `json:"gate_checked_at,omitzero"`
	Bench             *BenchFigures `json:"bench,omitempty"`
}

// BenchFigures are the figures of a server's last gate benchmark in the
// report: the documents' own type (docs/agent.md), not the journal's.
type BenchFigures = jsonplan.BenchResult

// benchFigures converts the journal's bench summary.
func benchFigures(b *journal.BenchSummary) *BenchFigures { return b.Document() }

// observeAll looks at every server of st in parallel; gen says which
// servers also get a short generation.
func observeAll(ctx context.Context, st *state.File, obs Observer, gen Generator, wantGen func(name string) bool) []ServerReport {
	names := st.Names()
	out := make([]ServerReport, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		s := st.Servers[name]
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = observeOne(ctx, s, obs, gen, wantGen != nil && wantGen(name))
		}()
	}
	wg.Wait()
	return out
}

func observeOne(ctx context.Context, s *state.Server, obs Observer, gen Generator, generate bool) ServerReport {
	r := ServerReport{Name: s.Name, Status: s.Status, PID: s.PID, Port: s.Port}
	o := obs.Observe(ctx, s)
	r.Alive, r.ProxyGone, r.Healthy, r.Detail = o.Alive, o.ProxyGone, o.Healthy, o.Detail
	if generate && gen != nil && r.Alive && s.Status == state.StatusReady && (r.Healthy == nil || *r.Healthy) {
		ok := true
		if err := gen.Generate(ctx, s); err != nil {
			ok = false
			r.Detail = "/health answers, but a short generation failed: " + err.Error()
		}
		r.Generation = &ok
	}
	r.Up = r.Alive && s.Status == state.StatusReady && (r.Healthy == nil || *r.Healthy) && (r.Generation == nil || *r.Generation)
	if s.Footprint != nil {
		r.KVTokensMeasured = s.Footprint.KVTokens
	}
	if s.Predicted != nil {
		r.KVTokensPredicted = s.Predicted.KVTokens
	}
	if s.Gate != nil {
		p := s.Gate.Passed
		r.GatePassed = &p
		r.GateCheckedAt = s.Gate.CheckedAt
		if len(s.Gate.Bench) > 0 {
			var b journal.BenchSummary
			if json.Unmarshal(s.Gate.Bench, &b) == nil {
				r.Bench = benchFigures(&b)
			}
		}
	}
	r.Drift = driftOf(s, r)
	if !r.Alive && s.LogPath != "" {
		// The cause of a dead or failed server is in its log.
		d := classifyLog(s.LogPath, s.Engine.Kind)
		if d.Class != "" && d.Class != "unknown" {
			r.FailureClass, r.FailureCause = d.Class, d.Summary
		}
	}
	return r
}

// driftOf says how the server differs from what the state records.
func driftOf(s *state.Server, r ServerReport) string {
	switch {
	case s.Status == state.StatusFailed:
		return "its last start failed; nothing serves"
	case !r.Alive:
		return "the process is gone"
	case r.ProxyGone:
		return "the proxy is gone; the engine runs"
	case s.Status == state.StatusStarting:
		return "started but not past its gates"
	case s.Status == state.StatusStopping:
		return "a stop was requested and not confirmed"
	case r.Healthy != nil && !*r.Healthy:
		return "running but /health fails"
	case r.Generation != nil && !*r.Generation:
		return "/health answers but generation fails"
	}
	return ""
}

// history is what the journal says the agent did to one server.
type history struct {
	restarts, failures int
	gaveUp             bool
	class, cause, last string
	// beforeRollout is the history a rollout entry reset: the agent's own
	// restarts write a rollout entry (apply does) just before their
	// "restarted" entry, which puts it back.
	beforeRollout *history
}

// historyOf reads the agent's journal entries: restarts and failed restarts
// since the server was last applied (an apply's rollout entry starts over).
func historyOf(entries []journal.Entry) map[string]*history {
	out := map[string]*history{}
	for _, e := range entries {
		h := out[e.Server]
		if h == nil {
			h = &history{}
			out[e.Server] = h
		}
		if e.Kind == journal.KindRollout {
			prev := *h
			*h = history{beforeRollout: &prev}
			continue
		}
		if e.Kind != journal.KindAgent || e.Agent == nil {
			continue
		}
		if e.Agent.Action == journal.AgentRestarted && h.beforeRollout != nil {
			*h = *h.beforeRollout
		}
		h.beforeRollout = nil
		h.last = e.Agent.Action
		switch e.Agent.Action {
		case journal.AgentRestarted:
			h.restarts++
			h.failures, h.gaveUp = 0, false
		case journal.AgentRestartFailed:
			h.failures++
			h.class, h.cause = e.Agent.Class, e.Agent.Cause
		case journal.AgentGaveUp:
			h.gaveUp = true
			h.class, h.cause = e.Agent.Class, e.Agent.Cause
		}
	}
	return out
}

// CheckHost is Check on this host: the journal of the state directory
// dir (unreadable: no history), this boot's id, the time now.
func CheckHost(ctx context.Context, st *state.File, dir string, obs Observer, gen Generator) *Report {
	entries, _ := journal.Read(journal.Path(dir))
	boot, _ := HostBootID()
	return Check(ctx, st, obs, gen, entries, boot, time.Now())
}

// Check observes every server once, read-only: roofline check. The
// journal adds what an agent did (restarts, give-ups and their causes).
func Check(ctx context.Context, st *state.File, obs Observer, gen Generator, entries []journal.Entry, bootID string, now time.Time) *Report {
	rep := &Report{Time: now.UTC(), BootID: bootID}
	rep.Servers = observeAll(ctx, st, obs, gen, func(string) bool { return true })
	hist := historyOf(entries)
	for i := range rep.Servers {
		r := &rep.Servers[i]
		if h := hist[r.Name]; h != nil {
			r.Restarts, r.Failures, r.GaveUp, r.LastAction = h.restarts, h.failures, h.gaveUp, h.last
			if h.class != "" && !r.Up {
				r.FailureClass, r.FailureCause = h.class, h.cause
			}
		}
		if r.Drift != "" {
			rep.Drift++
		}
	}
	return rep
}

// classifyLog names the cause of a failure from the last MiB of a log of an
// engine of kind (every kind's rules when the state names none).
func classifyLog(path, kind string) logdiag.Diagnosis {
	f, fi, err := fsx.OpenRegular(path)
	if err != nil {
		return logdiag.Diagnosis{}
	}
	defer f.Close()
	off := max(fi.Size()-1<<20, 0)
	d, _ := engine.LogsOf(kind).ClassifyReader(io.NewSectionReader(f, off, fi.Size()-off))
	return d
}
