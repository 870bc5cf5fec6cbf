// Package agent keeps the servers of one state running: roofline agent.
// It converges the current state, never a new configuration: on each tick
// it observes every server (process, /health, now and then a short
// generation) and restarts one that died, exited or hangs, with
// exponential backoff, through the same plan, driver and health gate as
// apply (the Restarter the CLI builds), until too many restarts in a row
// failed; then it stops trying and reports the classified cause. What it
// does goes to the journal; its view is published as a Report (/metrics,
// /snapshot) and roofline check makes the same observation once.
package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/roofline/roofline/internal/fsx"
	"github.com/roofline/roofline/internal/journal"
	"github.com/roofline/roofline/internal/state"
)

// Request asks for one server to be started again.
type Request struct {
	Name string
	// LaunchID is the instance the agent saw failing: under the lock the
	// restarter leaves the server alone when another roofline replaced it
	// in the meantime.
	LaunchID string
	// Status is the state's status the agent saw: a server it saw
	// "starting" that is no longer starting under the lock was finished by
	// the apply that held it.
	Status string
	// Replace: the process runs but hangs; stop it and start a new one.
	Replace bool
	Reason  string
}

// Outcome is what became of one Request.
type Outcome struct {
	Name string
	// Restarted: a new process passed the health gate.
	Restarted bool
	PID       int
	// Skipped says why nothing was done (another roofline fixed it, the
	// configuration changed since the last apply, ...); not a failure.
	Skipped string
	// Lasting: the reason for the skip stays until someone runs apply (a
	// changed configuration), so the agent asks again only after its
	// backoff instead of every tick.
	Lasting bool
	// Err is a failed restart, with the classifier's verdict.
	Err          error
	Class, Cause string
}

// Restarter starts servers again under the state lock, waiting while
// another roofline holds it.
type Restarter interface {
	Restart(ctx context.Context, reqs []Request) []Outcome
}

// States reads the state (without the lock).
type States interface {
	Read() (*state.File, error)
}

// Retirer stops the previous instances whose rollback window has ended
// (keep_previous, the serving-path issue), under the state lock, and names
// them. The agent calls it once per tick when it is set; the CLI sets it
// once the state records kept previous instances.
type Retirer interface {
	Retire(ctx context.Context, now time.Time) ([]string, error)
}

// Agent keeps one state directory's servers up. Fill the fields, then Run.
type Agent struct {
	States    States
	Observer  Observer
	Generator Generator
	Restarter Restarter
	Retirer   Retirer // optional
	// Dir is the state directory: the journal and the agent's boot id file
	// live there.
	Dir string
	// BootID reads the host's boot id (/proc/sys/kernel/random/boot_id);
	// a test seam.
	BootID func() (string, error)
	Now    func() time.Time
	Logf   func(format string, args ...any)

	mu       sync.Mutex
	settings Settings
	servers  map[string]*tracker
	report   *Report
	ticks    uint64
	busy     bool // a restart batch runs
	wg       sync.WaitGroup
}

// tracker is the agent's memory of one server.
type tracker struct {
	configHash   string
	unhealthy    int // failed checks in a row while running
	healthySince time.Time
	lastGen      time.Time
	genOK        *bool
	restarting   bool

	restarts    int // successful restarts since the agent started
	failures    int // failed restarts in a row
	backoff     time.Duration
	nextAttempt time.Time
	gaveUp      bool
	class       string
	cause       string
	lastAction  string
}

// New returns an agent with settings s.
func New(s Settings) *Agent {
	return &Agent{settings: s, servers: map[string]*tracker{}}
}

// Settings returns the settings in force.
func (a *Agent) Settings() Settings {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.settings
}

// SetSettings replaces the settings (SIGHUP); backoffs already scheduled
// keep their time.
func (a *Agent) SetSettings(s Settings) {
	a.mu.Lock()
	a.settings = s
	a.mu.Unlock()
}

// Report returns the last tick's report (nil before the first tick).
func (a *Agent) Report() *Report {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.report
}

// Ticks counts finished ticks.
func (a *Agent) Ticks() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ticks
}

func (a *Agent) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a *Agent) logf(format string, args ...any) {
	if a.Logf != nil {
		a.Logf(format, args...)
	}
}

// Run ticks until ctx ends, then waits for a restart in flight to give up
// waiting (the servers keep running; the state says what runs). onTick is
// called after every tick (the systemd watchdog).
func (a *Agent) Run(ctx context.Context, onTick func()) error {
	a.init()
	for {
		a.Tick(ctx)
		if onTick != nil {
			onTick()
		}
		select {
		case <-ctx.Done():
			a.wg.Wait()
			return nil
		case <-time.After(a.Settings().Tick):
		}
	}
}

// init restores what the journal says the agent did before (a new agent
// takes over the restart counts and give-ups of the one before), and notes
// a reboot.
func (a *Agent) init() {
	entries, _ := journal.Read(journal.Path(a.Dir))
	hist := historyOf(entries)
	st, _ := a.States.Read()
	a.mu.Lock()
	for name, h := range hist {
		s := st.Server(name)
		if s == nil {
			continue
		}
		t := a.trackerLocked(name, s)
		t.failures, t.gaveUp, t.class, t.cause, t.lastAction = h.failures, h.gaveUp, h.class, h.cause, h.last
		t.restarts = h.restarts
	}
	a.mu.Unlock()
	a.checkBoot()
}

// checkBoot compares the boot id with the one the agent last ran under:
// after a reboot nothing of the servers runs, and the first tick starts
// them all again (the recorded processes carry the old boot id, so the
// driver sees them gone).
func (a *Agent) checkBoot() {
	if a.BootID == nil || a.Dir == "" {
		return
	}
	id, err := a.BootID()
	if err != nil {
		a.logf("cannot read the boot id: %v", err)
		return
	}
	path := filepath.Join(a.Dir, "agent", "boot_id")
	prev, err := os.ReadFile(path)
	if err == nil && strings.TrimSpace(string(prev)) != id {
		a.logf("the host rebooted since the agent last ran (boot id %s, now %s): servers are started again", strings.TrimSpace(string(prev)), id)
		a.journal("", &journal.AgentEvent{Action: journal.AgentRebooted, Reason: "boot id " + strings.TrimSpace(string(prev)) + " → " + id})
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err == nil {
		if err := fsx.WriteFile(path, []byte(id+"\n"), 0o600); err != nil {
			a.logf("recording the boot id: %v", err)
		}
	}
}

func (a *Agent) trackerLocked(name string, s *state.Server) *tracker {
	t := a.servers[name]
	if t == nil || t.configHash != s.ConfigHash {
		// New, or applied with another configuration since: start over.
		t = &tracker{configHash: s.ConfigHash}
		a.servers[name] = t
	}
	return t
}

// Tick observes every server once and starts the restarts that are due.
func (a *Agent) Tick(ctx context.Context) {
	if a.Retirer != nil {
		retired, err := a.Retirer.Retire(ctx, a.now())
		if err != nil {
			a.logf("stopping previous instances: %v", err)
		}
		for _, name := range retired {
			a.logf("server.%s: the rollback window ended; its previous instance was stopped", name)
			a.journal(name, &journal.AgentEvent{Action: journal.AgentRetired, Reason: "the rollback window ended"})
		}
	}
	st, err := a.States.Read()
	if err != nil {
		a.logf("reading the state: %v", err)
		return
	}
	now := a.now()
	set := a.Settings()
	a.mu.Lock()
	for name := range a.servers {
		if st.Server(name) == nil {
			delete(a.servers, name)
		}
	}
	wantGen := map[string]bool{}
	skip := map[string]bool{}
	for _, name := range st.Names() {
		t := a.trackerLocked(name, st.Servers[name])
		skip[name] = t.restarting
		wantGen[name] = set.GenerateEvery > 0 && now.Sub(t.lastGen) >= set.GenerateEvery
	}
	a.mu.Unlock()

	live := &state.File{Servers: map[string]*state.Server{}}
	for name, s := range st.Servers {
		if !skip[name] {
			live.Servers[name] = s
		}
	}
	reports := observeAll(ctx, live, a.Observer, a.Generator, func(n string) bool { return wantGen[n] })
	if ctx.Err() != nil {
		return
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	var reqs []Request
	byName := map[string]ServerReport{}
	for _, r := range reports {
		byName[r.Name] = r
	}
	rep := &Report{Time: now.UTC()}
	if a.BootID != nil {
		rep.BootID, _ = a.BootID()
	}
	for _, name := range st.Names() {
		s := st.Servers[name]
		t := a.servers[name]
		r, observed := byName[name]
		if !observed {
			// A restart runs: report the last view, marked.
			r = ServerReport{Name: name, Status: s.Status, PID: s.PID, Port: s.Port, Detail: "the agent is restarting it"}
			if a.report != nil {
				for _, old := range a.report.Servers {
					if old.Name == name {
						r = old
						r.Detail = "the agent is restarting it"
					}
				}
			}
		} else {
			if r.Generation != nil {
				t.lastGen, t.genOK = now, r.Generation
			} else if t.genOK != nil && r.Up && !*t.genOK {
				// The last generation failed and has not been retried yet.
				r.Generation, r.Up = t.genOK, false
				r.Drift = "/health answers but generation fails"
			}
			if req, ok := a.decide(set, now, s, t, r); ok {
				reqs = append(reqs, req)
			}
		}
		r.Restarts, r.Failures, r.GaveUp, r.LastAction = t.restarts, t.failures, t.gaveUp, t.lastAction
		if !t.nextAttempt.IsZero() && t.nextAttempt.After(now) && !r.Up {
			r.NextRestart = t.nextAttempt.UTC()
		}
		if t.class != "" && !r.Up {
			r.FailureClass, r.FailureCause = t.class, t.cause
		}
		if r.Drift != "" {
			rep.Drift++
		}
		rep.Servers = append(rep.Servers, r)
	}
	a.report = rep
	a.ticks++
	if len(reqs) > 0 && !a.busy {
		a.busy = true
		for _, q := range reqs {
			a.servers[q.Name].restarting = true
		}
		a.wg.Add(1)
		go a.restart(ctx, reqs)
	}
}

// decide says whether s needs a restart now, and updates t's counters.
func (a *Agent) decide(set Settings, now time.Time, s *state.Server, t *tracker, r ServerReport) (Request, bool) {
	if r.Up {
		t.unhealthy = 0
		if t.healthySince.IsZero() {
			t.healthySince = now
		}
		if t.gaveUp || (t.failures > 0 || t.backoff > 0) && now.Sub(t.healthySince) >= set.ResetAfter {
			// Healthy long enough (or someone fixed and applied it).
			t.failures, t.backoff, t.gaveUp, t.class, t.cause = 0, 0, false, "", ""
			t.nextAttempt = time.Time{}
		}
		return Request{}, false
	}
	t.healthySince = time.Time{}
	req := Request{Name: s.Name, LaunchID: s.LaunchID, Status: s.Status}
	switch {
	case s.Status == state.StatusStopping:
		return Request{}, false // a destroy runs, or was cut short: not the agent's to undo
	case s.Status == state.StatusFailed:
		req.Reason = "its last start failed"
	case !r.Alive:
		req.Reason = "the process is gone"
		if r.Detail != "" {
			req.Reason += " (" + r.Detail + ")"
		}
	case r.ProxyGone:
		// Not a hang: a new proxy, at once, and never a Replace.
		req.Reason = r.Detail
	case s.Status == state.StatusStarting:
		// Either an apply runs (the restarter waits for its lock and then
		// finds it ready) or one was interrupted before its gates.
		req.Reason, req.Replace = "started but never passed its gates", true
	default:
		t.unhealthy++
		if t.unhealthy < set.HangChecks {
			return Request{}, false
		}
		req.Reason, req.Replace = fmt.Sprintf("it runs but failed %d checks in a row: %s", t.unhealthy, r.Detail), true
	}
	if t.gaveUp || now.Before(t.nextAttempt) {
		return Request{}, false
	}
	return req, true
}

// restart carries out one batch and books the outcomes.
func (a *Agent) restart(ctx context.Context, reqs []Request) {
	defer a.wg.Done()
	for _, q := range reqs {
		a.logf("server.%s needs a restart: %s", q.Name, q.Reason)
	}
	outs := a.Restarter.Restart(ctx, reqs)
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.busy = false
	set := a.settings
	done := map[string]bool{}
	for _, o := range outs {
		done[o.Name] = true
		t := a.servers[o.Name]
		if t == nil {
			continue
		}
		t.restarting = false
		q := reqOf(reqs, o.Name)
		switch {
		case o.Err != nil && ctx.Err() != nil:
			// The agent is stopping: not the server's failure.
		case o.Err != nil:
			t.failures++
			t.class, t.cause = o.Class, o.Cause
			if t.class == "" {
				t.class, t.cause = "unknown", o.Err.Error()
			}
			t.lastAction = journal.AgentRestartFailed
			a.schedule(set, t, now)
			a.logf("restarting server.%s failed (%d of %d): %s: %s", o.Name, t.failures, set.MaxRestarts, t.class, t.cause)
			a.journal(o.Name, &journal.AgentEvent{Action: journal.AgentRestartFailed, Reason: q.Reason, Attempt: t.failures, Class: t.class, Cause: t.cause})
			if t.failures >= set.MaxRestarts {
				t.gaveUp = true
				t.lastAction = journal.AgentGaveUp
				a.logf("server.%s: %d restarts in a row failed; the agent stops trying (cause %s). Fix it and run roofline apply.", o.Name, t.failures, t.class)
				a.journal(o.Name, &journal.AgentEvent{Action: journal.AgentGaveUp, Reason: fmt.Sprintf("%d restarts in a row failed", t.failures), Class: t.class, Cause: t.cause})
			}
		case o.Restarted:
			t.restarts++
			t.unhealthy, t.genOK, t.lastGen = 0, nil, time.Time{}
			t.lastAction = journal.AgentRestarted
			a.schedule(set, t, now)
			a.logf("server.%s is back (pid %d)", o.Name, o.PID)
			a.journal(o.Name, &journal.AgentEvent{Action: journal.AgentRestarted, Reason: q.Reason, PID: o.PID})
		default:
			if o.Skipped != "" {
				a.logf("server.%s: not restarted: %s", o.Name, o.Skipped)
			}
			if o.Lasting {
				t.lastAction = "skipped: " + o.Skipped
				a.schedule(set, t, now)
			}
		}
	}
	for _, q := range reqs {
		if t := a.servers[q.Name]; t != nil && !done[q.Name] {
			t.restarting = false
		}
	}
}

// schedule sets the earliest next restart: CrashLoopBackOff's doubling.
func (a *Agent) schedule(set Settings, t *tracker, now time.Time) {
	if t.backoff == 0 {
		t.backoff = set.BackoffInitial
	} else {
		t.backoff = min(2*t.backoff, set.BackoffMax)
	}
	t.nextAttempt = now.Add(t.backoff)
}

func reqOf(reqs []Request, name string) Request {
	i := slices.IndexFunc(reqs, func(q Request) bool { return q.Name == name })
	if i < 0 {
		return Request{Name: name}
	}
	return reqs[i]
}

func (a *Agent) journal(server string, ev *journal.AgentEvent) {
	if a.Dir == "" {
		return
	}
	if err := journal.Append(journal.Path(a.Dir), journal.Entry{Time: a.now().UTC(), Kind: journal.KindAgent, Server: server, Agent: ev}); err != nil {
		a.logf("writing the journal: %v", err)
	}
}
