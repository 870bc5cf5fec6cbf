// Package apply carries out a plan: it stops and starts engine processes
// through a driver, waits for health, runs the gates, and writes the state
// before and after every step so that a killed apply never loses a process.
package apply

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-multierror"
	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/engine/logdiag"
	"github.com/roofline/roofline/internal/fsx"
	"github.com/roofline/roofline/internal/journal"
	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/proxy"
	"github.com/roofline/roofline/internal/proxy/launch"
	"github.com/roofline/roofline/internal/secret"
	"github.com/roofline/roofline/internal/state"
)

// Target is where a server answers.
type Target struct {
	BaseURL string
	Model   string // served name
	Engine  string // "vllm" | "sglang"
	// APIKey authenticates the gates' requests; never printed or stored.
	APIKey string
	// Version is the pinned engine version; the health gate compares the
	// engine's own report with it.
	Version string
}

// Gates checks a started server.
type Gates interface {
	// WaitReady polls until the engine is ready, the timeout passes, or
	// exited reports that the process died.
	WaitReady(ctx context.Context, t Target, timeout time.Duration, exited func() bool, progress func(elapsed time.Duration)) error
	// Check runs the promotion gates (health beyond /health, smoke, bench)
	// and returns their result; Passed false with an error that explains.
	Check(ctx context.Context, t Target, g *plan.GateSpec) (*state.GateResult, error)
}

// Hooks reports progress; the CLI prints it.
type Hooks interface {
	Begin(addr, verb string)
	Progress(addr string, elapsed time.Duration, lastLogLine string)
	End(addr, verb string, elapsed time.Duration, detail string)
}

// GateReporter is implemented by Hooks that report each new instance's
// gate results as they come (apply -json's gate_result messages).
type GateReporter interface {
	GateResult(addr string, res *state.GateResult, err error)
}

// Noter is implemented by Hooks that show the steps of a rollout (started,
// gates passed, switched, draining, old instance stopped) as they happen.
type Noter interface {
	Note(addr, msg string)
}

func (a *Applier) note(addr, format string, args ...any) {
	if n, ok := a.Hooks.(Noter); ok {
		n.Note(addr, fmt.Sprintf(format, args...))
	}
}

// ServerError is one server's failure, with the classified cause from its log.
type ServerError struct {
	Addr      string
	Phase     string // "start", "health", "gates", "stop", "proxy"
	Err       error
	Diagnosis *logdiag.Diagnosis
	LogTail   []string
	// KeptOld is true when a rollout failed and the old server keeps serving.
	KeptOld bool
}

func (e *ServerError) Error() string { return fmt.Sprintf("%s: %s: %v", e.Addr, e.Phase, e.Err) }

func (e *ServerError) Unwrap() error { return e.Err }

// Proxies starts a server's proxy, or points the one that runs at a new
// backend; record is called before the start and after it.
type Proxies interface {
	Ensure(ctx context.Context, r launch.Request, record func(p *state.Instance, started bool) error) (*state.Instance, error)
	// SetLimits gives a running proxy new limits, without a restart.
	SetLimits(ctx context.Context, name string, current *state.Instance, limits *state.ProxyLimits) error
}

// StateWriter persists the state.
type StateWriter interface {
	Write(*state.File) error
}

// Applier applies plans.
type Applier struct {
	State StateWriter
	// Drivers start, observe and stop instances, each with the driver its
	// server names.
	Drivers  *driver.Set
	Gates    Gates
	Hooks    Hooks
	StateDir string
	// Proxies brings up the front proxies of create-before-destroy servers
	// (proxy/launch).
	Proxies Proxies
	// Parallelism bounds concurrent starts and stops (Terraform's default is 10).
	Parallelism int
	// StopGrace is how long an engine gets between SIGTERM and SIGKILL.
	StopGrace time.Duration
	// Journal is the journal file (journal.Path) each rollout is recorded
	// in, with the GPUs of the plan; "": none.
	Journal string
	// JournalFailures records failed starts and rollouts too, with their
	// phase, classified cause and error (apply does; the agent's restarts
	// record only the rollouts that went through).
	JournalFailures bool
	// MoveJournal records a rename (MoveEntry); nil to skip.
	MoveJournal func(from, to string)
	// Now is the clock.
	Now func() time.Time
	// Secrets is the command's output mask: keys read at apply (from
	// api_key_file) are added to it. nil masks nothing.
	Secrets *secret.Set

	// Stopping, when closed, asks apply to stop the Terraform way: every
	// server whose change has begun finishes it (a rollout in flight runs
	// to its end, drain included); no other change starts. Cancelling ctx
	// instead abandons the waits at once.
	Stopping <-chan struct{}

	mu      sync.Mutex
	st      *state.File
	outcome map[string]string // addr -> what happened, for Outcomes
	host    *journal.Host     // the plan's GPUs, for the journal
}

// Outcome is what apply did to one server of the plan.
type Outcome struct {
	Addr string
	// What: "done", "failed", "not started" (apply was asked to stop
	// before it began), or "unchanged".
	What string
	// Status is the server's status in the state afterwards ("ready",
	// "failed", ...; "" when it is not in the state), and PID its process.
	Status string
	PID    int
}

// Outcomes lists, per changed server, what apply did and what the state
// records now: the summary after an interrupted apply.
func (a *Applier) Outcomes(p *plan.Plan) []Outcome {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []Outcome
	for _, c := range p.Changes {
		if c.Action == plan.NoOp {
			continue
		}
		o := Outcome{Addr: c.Addr, What: a.outcome[c.Addr]}
		if o.What == "" {
			o.What = "unchanged"
		}
		if s := a.st.Server(c.Name); s != nil {
			o.Status, o.PID = s.Status, s.PID
		}
		out = append(out, o)
	}
	return out
}

func (a *Applier) setOutcome(addr, what string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.outcome == nil {
		a.outcome = map[string]string{}
	}
	a.outcome[addr] = what
}

// stopping reports whether apply was asked to start nothing new.
func (a *Applier) stopping() bool {
	if a.Stopping == nil {
		return false
	}
	select {
	case <-a.Stopping:
		return true
	default:
		return false
	}
}

// journalRollout records the rollout of s in the journal; failed is set
// for a failed one. A journal that cannot be written fails no rollout.
func (a *Applier) journalRollout(s *state.Server, failed *journal.Failure) {
	if a.Journal == "" || (failed != nil && !a.JournalFailures) {
		return
	}
	_ = journal.Append(a.Journal, journal.RolloutOf(a.now(), s, a.host, failed))
}

func (a *Applier) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// update changes the state under the lock and writes it.
func (a *Applier) update(f func(st *state.File)) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	f(a.st)
	return a.State.Write(a.st)
}

// Apply carries out p against the state st (which it does not modify) and
// returns the new state. Every server's error is collected; the others go on.
func (a *Applier) Apply(ctx context.Context, p *plan.Plan, st *state.File) (*state.File, error) {
	if st == nil {
		st = state.NewFile()
	}
	a.st = st.Clone()
	a.host = journal.HostOf(p.Snapshot)
	if a.Parallelism <= 0 {
		a.Parallelism = 10
	}
	if a.StopGrace <= 0 {
		a.StopGrace = 30 * time.Second
	}
	var errs *multierror.Error
	var errMu sync.Mutex
	addErr := func(err error) {
		if err != nil {
			errMu.Lock()
			errs = multierror.Append(errs, err)
			errMu.Unlock()
		}
	}
	sem := make(chan struct{}, a.Parallelism)
	begun := map[string]bool{}
	var begunMu sync.Mutex
	// run starts f for change c unless apply was asked to stop before c
	// began; a change that began (the destroy of a destroy-then-create)
	// always finishes.
	run := func(wg *sync.WaitGroup, c *plan.Change, f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			begunMu.Lock()
			if a.stopping() && !begun[c.Addr] {
				begunMu.Unlock()
				a.setOutcome(c.Addr, "not started")
				return
			}
			begun[c.Addr] = true
			begunMu.Unlock()
			if err := f(); err != nil {
				a.setOutcome(c.Addr, "failed")
				addErr(err)
				return
			}
			a.setOutcome(c.Addr, "done")
		}()
	}

	// First record what an interrupted run started but never recorded.
	addErr(a.adopt(ctx))
	// A rollout interrupted earlier left a deposed instance: put the state
	// back to the instance that serves before doing anything else.
	addErr(a.recoverDeposed(ctx, p))

	if p.Mode == plan.ModeRefreshOnly {
		addErr(a.refreshOnly(ctx, p))
		return a.st, errs.ErrorOrNil()
	}

	// Imports first: the state records the processes taken over, so what
	// follows (a replacement for a difference) acts on them.
	for _, c := range p.Changes {
		if c.Import != nil && c.Before != nil {
			rec := c.Before.Clone()
			addErr(a.update(func(st *state.File) { st.Set(rec) }))
			if a.Hooks != nil && c.Action == plan.NoOp {
				a.Hooks.End(c.Addr, "Import complete", 0, fmt.Sprintf("pid %d recorded; it was not touched", rec.PID))
			}
		}
	}

	// Renames (moved blocks): what follows acts on the new names.
	for _, c := range p.Changes {
		if c.PreviousName != "" {
			addErr(a.move(c))
		}
	}

	// Phase 1: stops that free GPUs and ports, in parallel.
	var wg sync.WaitGroup
	for _, c := range p.Changes {
		if c.Action == plan.Delete || c.Action == plan.DeleteThenCreate {
			run(&wg, c, func() error { return a.destroy(ctx, c) })
		}
	}
	wg.Wait()
	if ctx.Err() != nil {
		return a.st, multierror.Append(errs, ctx.Err())
	}

	// Phase 2: creates and replacements, independent servers in parallel.
	for _, c := range p.Changes {
		switch c.Action {
		case plan.Create, plan.DeleteThenCreate, plan.CreateThenDelete:
			run(&wg, c, func() error { return a.create(ctx, c) })
		case plan.Update:
			a.mu.Lock()
			s := a.st.Server(c.Name).Clone()
			a.mu.Unlock()
			newProxy, err := a.replaceLostProxy(ctx, c, s)
			if err != nil {
				addErr(err)
				continue
			}
			limits := !newProxy && s != nil && s.Proxy != nil && c.After.Proxy && !s.ProxyLimits.Equal(c.After.ProxyLimits)
			if limits {
				if err := a.Proxies.SetLimits(ctx, c.Name, s.Proxy, c.After.ProxyLimits); err != nil {
					addErr(&ServerError{Addr: c.Addr, Phase: "proxy", Err: fmt.Errorf("new proxy limits: %w; the proxy and the engine keep running as they were", err)})
					continue
				}
			}
			addErr(a.update(func(st *state.File) {
				if s := st.Server(c.Name); s != nil {
					s.GateHash = c.After.GateHash
					if s.Proxy != nil && c.After.Proxy {
						s.ProxyLimits = c.After.ProxyLimits
					}
					if s.Status == state.StatusStopping {
						// Refresh found it alive and ours after an
						// interrupted stop (plan's reason says so).
						s.Status = state.StatusReady
					}
				}
			}))
			if a.Hooks != nil {
				detail := "gate settings recorded"
				if limits {
					detail = "the proxy's new limits are in force (no restart)"
				}
				if newProxy {
					a.mu.Lock()
					now := a.st.Server(c.Name)
					a.mu.Unlock()
					detail = fmt.Sprintf("a new proxy (pid %d) serves port %d; the engine (pid %d) was not restarted", now.Proxy.PID, now.Port, now.PID)
				}
				if c.Before != nil && c.Before.Deposed != nil && !newProxy {
					detail = fmt.Sprintf("old instance (pid %d) stopped", c.Before.Deposed.PID)
					a.mu.Lock()
					now := a.st.Server(c.Name)
					a.mu.Unlock()
					if now != nil && now.Deposed != nil && now.Deposed.PID == c.Before.Deposed.PID && now.Deposed.Status == state.StatusKept {
						// A finished rollout with keep_previous.
						detail = fmt.Sprintf("previous instance (pid %d) kept for rollback", now.Deposed.PID)
					}
				}
				a.Hooks.End(c.Addr, "Modifications complete", 0, detail)
			}
		}
	}
	wg.Wait()
	return a.st, errs.ErrorOrNil()
}

// move re-keys a renamed server: state, log file, proxy files, journal.
// The process is not touched.
func (a *Applier) move(c *plan.Change) error {
	var err error
	if uerr := a.update(func(st *state.File) { err = Move(a.StateDir, st, c.PreviousName, c.Name) }); uerr != nil {
		return &ServerError{Addr: c.Addr, Phase: "move", Err: uerr}
	}
	if a.MoveJournal != nil {
		a.MoveJournal(c.PreviousName, c.Name)
	}
	if a.Hooks != nil && err == nil && c.Action == plan.NoOp {
		a.Hooks.End(c.Addr, "Move complete", 0, "was server."+c.PreviousName+"; the process was not touched")
	}
	if err != nil {
		return &ServerError{Addr: c.Addr, Phase: "move", Err: err}
	}
	return nil
}

// refreshOnly records what refresh found: servers whose process is gone
// are forgotten.
func (a *Applier) refreshOnly(ctx context.Context, p *plan.Plan) error {
	var gone []string
	for _, d := range p.Drift {
		name := state.ServerName(d.Addr)
		a.mu.Lock()
		s := a.st.Server(name)
		a.mu.Unlock()
		if s != nil && !a.alive(ctx, s.Instance) {
			gone = append(gone, name)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	return a.update(func(st *state.File) {
		for _, n := range gone {
			st.Remove(n)
		}
	})
}

func hasProc(s *state.Server) bool { return s.Running() }

// alive reports whether the instance runs what was started; an instance
// that cannot be observed counts as not alive.
func (a *Applier) alive(ctx context.Context, i state.Instance) bool {
	obs, err := a.Drivers.Read(ctx, i)
	return err == nil && obs.Alive
}

// statusOf is the status file proxy p writes (proxy.StatusFileOf).
func statusOf(p *state.Instance, stateDir, name string) string {
	var cmdline []string
	if p != nil {
		cmdline = p.Cmdline
	}
	return proxy.StatusFileOf(cmdline, stateDir, name)
}

// moving reports whether a rollout from old to d moves the public endpoint:
// a new proxy listens on the new address, the old one drains and stops.
func moving(old *state.Server, d *plan.Desired) bool {
	return old != nil && old.Proxy != nil && d.Proxy && (old.Port != d.Port || old.Host != d.Host)
}

// desiredOf is server name's desired state in p; nil when p removes it.
func desiredOf(p *plan.Plan, name string) *plan.Desired {
	for _, c := range p.Changes {
		if c.Name == name {
			return c.After
		}
	}
	return nil
}

// changeOf is the change of server name in p, by its name or, for a
// rename, its previous one; nil when p does not cover it.
func changeOf(p *plan.Plan, name string) *plan.Change {
	for _, c := range p.Changes {
		if c.Name == name || c.PreviousName == name {
			return c
		}
	}
	return nil
}

// drainLimit is the drain_timeout of server name in p, or the default.
func drainLimit(p *plan.Plan, name string) time.Duration {
	for _, c := range p.Changes {
		if c.Name == name && c.After != nil && c.After.DrainTimeout > 0 {
			return c.After.DrainTimeout
		}
	}
	return plan.DefaultDrainTimeout
}

// recoverDeposed finishes create-before-destroy rollouts that a killed
// apply left with two instances. Where the proxy really points (its target
// file) and whether the new instance passed its gates decide, through
// plan.RecoveryOf, which way: forward (the new instance serves; the old
// drains and stops) or back (the proxy is pointed at the old instance
// first, then the new one stops). The instance that serves is never stopped.
func (a *Applier) recoverDeposed(ctx context.Context, p *plan.Plan) error {
	var errs error
	for _, name := range a.st.Names() {
		a.mu.Lock()
		s := a.st.Servers[name].Clone()
		a.mu.Unlock()
		if s.Deposed == nil {
			continue
		}
		addr := s.Addr()
		if s.Deposed.Status == state.StatusKept {
			// A previous instance kept for rollback: stopped once its
			// window ended (or the server goes), else left alone. A server
			// the plan does not cover (-target, refresh-only) keeps it:
			// only a plan that has the server decides its window.
			c := changeOf(p, name)
			if c == nil {
				continue
			}
			// Gone only when seen gone: one that cannot be observed is
			// never forgotten.
			obs, rerr := a.Drivers.Read(ctx, s.Deposed.Instance)
			gone := rerr == nil && !obs.Alive
			if gone || plan.KeptExpired(s, c.After, a.now()) {
				if err := a.Drivers.Stop(ctx, s.Deposed.Instance, a.StopGrace); err != nil {
					errs = errors.Join(errs, &ServerError{Addr: addr, Phase: "stop", Err: fmt.Errorf("the previous instance (pid %d): %w", s.Deposed.PID, err)})
					continue
				}
				switch {
				case gone:
					a.note(addr, "The previous instance kept for rollback (pid %d) is gone: forgotten", s.Deposed.PID)
				case c.Kept != nil && c.Kept.Stop != "" && !strings.HasPrefix(c.Kept.Stop, "window ended"):
					// The server goes, or a new rollout replaces it.
					a.note(addr, "The previous instance kept for rollback (pid %d) stopped: %s", s.Deposed.PID, c.Kept.Stop)
				default:
					a.note(addr, "The rollback window ended: the previous instance (pid %d) stopped", s.Deposed.PID)
				}
				errs = errors.Join(errs, a.update(func(st *state.File) { st.Servers[name].Deposed = nil }))
			}
			continue
		}
		newAlive := hasProc(s) && a.alive(ctx, s.Instance)
		switch plan.RecoveryOf(s, proxy.BackendPort(a.StateDir, name), newAlive) {
		case plan.RecoverForward:
			if s.Proxy != nil && a.alive(ctx, *s.Proxy) {
				if err := proxy.Point(ctx, proxy.TargetFile(a.StateDir, name), statusOf(s.Proxy, a.StateDir, name), proxy.TargetLine(s.BackendPort, s.Engine.Kind, s.Engine.Version), 10*time.Second); err != nil {
					errs = errors.Join(errs, &ServerError{Addr: addr, Phase: "proxy", Err: fmt.Errorf("finishing the interrupted rollout: %w; both instances are left running", err)})
					continue
				}
			}
			a.note(addr, "Finishing an interrupted rollout: the new instance (pid %d) passed its gates and serves", s.PID)
			if err := a.update(func(st *state.File) {
				cur := st.Servers[name]
				cur.Status = state.StatusReady
				if cur.ReadyAt.IsZero() {
					cur.ReadyAt = a.now().UTC()
				}
			}); err != nil {
				errs = errors.Join(errs, err)
				continue
			}
			var keep time.Duration
			if d := desiredOf(p, name); d != nil {
				keep = d.KeepPrevious
			}
			if _, err := a.retire(ctx, addr, name, s.Deposed, s.Proxy, s.BackendPort, drainLimit(p, name), keep); err != nil {
				errs = errors.Join(errs, err)
			}
		case plan.RecoverBack:
			old := s.Deposed
			// The proxy that serves the old instance: its own when the
			// rollout moved the endpoint, else the shared one.
			oldProxy := s.Proxy
			if old.Proxy != nil {
				oldProxy = old.Proxy
			}
			if oldProxy != nil && old.BackendPort != 0 && proxy.BackendPort(a.StateDir, name) != old.BackendPort {
				if !a.alive(ctx, *oldProxy) {
					// The next proxy starts from the target file.
					_ = proxy.WriteTarget(proxy.TargetFile(a.StateDir, name), proxy.TargetLine(old.BackendPort, old.Engine.Kind, old.Engine.Version))
				} else if err := proxy.Point(ctx, proxy.TargetFile(a.StateDir, name), statusOf(oldProxy, a.StateDir, name), proxy.TargetLine(old.BackendPort, old.Engine.Kind, old.Engine.Version), 10*time.Second); err != nil {
					errs = errors.Join(errs, &ServerError{Addr: addr, Phase: "proxy", Err: fmt.Errorf("pointing the proxy back at the old instance: %w; both instances are left running", err)})
					continue
				}
			}
			if hasProc(s) {
				if oldProxy != nil && old.BackendPort != 0 && a.alive(ctx, *oldProxy) {
					// Requests the new instance took while the proxy pointed at it.
					_, _ = proxy.Drain(ctx, statusOf(oldProxy, a.StateDir, name), proxy.BackendAddr(old.BackendPort), drainLimit(p, name), nil)
				}
				if err := a.Drivers.Stop(ctx, s.Instance, a.StopGrace); err != nil {
					errs = errors.Join(errs, err)
					continue
				}
			}
			a.note(addr, "Rolled back an interrupted rollout: the old instance (pid %d) serves; the new one (pid %d) stopped", old.PID, s.PID)
			if old.Proxy != nil && s.Proxy != nil {
				// The endpoint move is undone: the new proxy goes.
				_ = a.Drivers.Stop(ctx, *s.Proxy, 5*time.Second)
			} else {
				old.Proxy = s.Proxy
			}
			errs = errors.Join(errs, a.update(func(st *state.File) { st.Set(old) }))
		}
	}
	return errs
}

// retire drains the old instance of a rollout after the switch and stops
// it, then forgets it. Reaching the drain limit is no failure: the old
// instance stops and the requests it still streams are cut, and counted.
// Interrupted, it leaves the old instance running and recorded as deposed;
// the next apply finishes the drain.
func (a *Applier) retire(ctx context.Context, addr, name string, old *state.Server, current *state.Instance, newBackend int, limit, keep time.Duration) (cut int64, err error) {
	// The old instance's requests flow through its own proxy when the
	// rollout moved the endpoint, else through the server's.
	via := current
	if old.Proxy != nil {
		via = old.Proxy
	}
	if limit <= 0 {
		limit = plan.DefaultDrainTimeout
	}
	start := a.now()
	var left int64
	// A proxy that is gone streams nothing: its last status file would
	// hold the drain to the limit for requests that died with it.
	if via == nil || a.alive(ctx, *via) {
		left, err = proxy.Drain(ctx, statusOf(via, a.StateDir, name), proxy.BackendAddr(newBackend), limit, func(n int64, el time.Duration) {
			a.note(addr, "Draining %d request(s) of the old instance (pid %d)... [%s elapsed, limit %s]", n, old.PID, el.Round(time.Second), limit)
		})
	}
	if ctx.Err() != nil {
		return 0, &ServerError{Addr: addr, Phase: "drain", Err: fmt.Errorf("interrupted while the old instance (pid %d) drained %d request(s); the new instance serves, the old one keeps running until they finish and is stopped by the next apply", old.PID, left)}
	}
	if err != nil {
		// The proxy's status cannot be read (the proxy is gone): nothing
		// can still flow through it to the old instance.
		left = 0
	}
	if keep > 0 && old.Proxy == nil {
		// keep_previous: the drained instance stays, idle, for rollback.
		a.note(addr, "The previous instance (pid %d) is kept for %s: roofline rollback %s switches back to it", old.PID, keep, addr)
		return 0, a.update(func(st *state.File) {
			if cur := st.Servers[name]; cur != nil && cur.Deposed != nil {
				cur.Deposed.Status = state.StatusKept
			}
		})
	}
	if err := a.Drivers.Stop(ctx, old.Instance, a.StopGrace); err != nil {
		return 0, &ServerError{Addr: addr, Phase: "stop", Err: fmt.Errorf("the new instance serves, but the old one (pid %d) did not stop: %w", old.PID, err)}
	}
	if old.Proxy != nil {
		// The old endpoint's proxy: it lets what it still streams finish
		// (up to 30 s) before it exits.
		if err := a.Drivers.Stop(ctx, *old.Proxy, 35*time.Second); err != nil {
			return 0, &ServerError{Addr: addr, Phase: "stop", Err: fmt.Errorf("the new instance serves, but the proxy of the old endpoint (pid %d) did not stop: %w", old.Proxy.PID, err)}
		}
		a.note(addr, "The old endpoint's proxy on port %d stopped", old.Port)
	}
	if left > 0 {
		a.note(addr, "Drain limit (%s) reached: the old instance (pid %d) stopped, cutting %d request(s) still streaming", limit, old.PID, left)
	} else {
		a.note(addr, "Old instance (pid %d) drained and stopped after %s", old.PID, a.now().Sub(start).Round(100*time.Millisecond))
	}
	return left, a.update(func(st *state.File) {
		if cur := st.Servers[name]; cur != nil {
			cur.Deposed = nil
		}
	})
}

// destroy stops a server (and, when it is deleted for good, its proxy) and
// removes it from the state.
func (a *Applier) destroy(ctx context.Context, c *plan.Change) error {
	a.mu.Lock()
	s := a.st.Server(c.Name).Clone()
	a.mu.Unlock()
	if s == nil {
		return nil
	}
	start := a.now()
	if a.Hooks != nil {
		a.Hooks.Begin(c.Addr, "Destroying...")
	}
	if err := a.update(func(st *state.File) { st.Servers[c.Name].Status = state.StatusStopping }); err != nil {
		return err
	}
	if hasProc(s) {
		if err := a.Drivers.Stop(ctx, s.Instance, a.StopGrace); err != nil {
			return &ServerError{Addr: c.Addr, Phase: "stop", Err: err}
		}
	}
	if dep := s.Deposed; dep != nil && hasProc(dep) {
		// A previous instance kept for rollback holds GPU memory too: it
		// goes with the server, never forgotten while it runs.
		if err := a.Drivers.Stop(ctx, dep.Instance, a.StopGrace); err != nil {
			return &ServerError{Addr: c.Addr, Phase: "stop", Err: fmt.Errorf("the kept previous instance (pid %d): %w", dep.PID, err)}
		}
	}
	keepProxy := c.Action == plan.DeleteThenCreate && c.After != nil && c.After.Proxy && s.Proxy != nil
	if s.Proxy != nil && !keepProxy {
		if err := a.Drivers.Stop(ctx, *s.Proxy, 5*time.Second); err != nil {
			return &ServerError{Addr: c.Addr, Phase: "stop", Err: fmt.Errorf("proxy: %w", err)}
		}
	}
	err := a.update(func(st *state.File) {
		if keepProxy {
			// The next instance reuses the proxy: keep a record that holds
			// only it.
			st.Set(&state.Server{Name: s.Name, Proxy: s.Proxy, Port: s.Port, Host: s.Host, Status: state.StatusStopping, Instance: state.Instance{Driver: s.Driver}})
			return
		}
		st.Remove(c.Name)
	})
	if a.Hooks != nil {
		detail := ""
		if s.PID != 0 {
			detail = fmt.Sprintf("pid %d stopped", s.PID)
		}
		a.Hooks.End(c.Addr, "Destruction complete", a.now().Sub(start), detail)
	}
	return err
}

// APIKey is the server's API key: from api_key (in memory, from the
// configuration), or read now from api_key_file. The agent's checks use it
// too.
func APIKey(d *plan.Desired) (string, error) {
	switch {
	case !d.Keyed:
		return "", nil
	case d.APIKeyFile != "":
		k, err := ReadKeyFile(d.APIKeyFile)
		if err != nil {
			return "", fmt.Errorf("reading api_key_file: %w", err)
		}
		return k, nil
	case d.APIKey != "":
		return d.APIKey, nil
	default:
		return "", errors.New("the plan does not carry the api_key (a plan file made by an older roofline, which did not seal it): run roofline plan -out again, or apply without a plan file")
	}
}

// LogPath is where apply writes server name's engine log in a state
// directory (config.ServerLogPath answers the same for a configuration).
func LogPath(stateDir, name string) string {
	return filepath.Join(stateDir, "logs", name+".log")
}

// maxKeyFile bounds an API key file: a key is one line.
const maxKeyFile = 4096

// ReadKeyFile reads an API key file (api_key_file, -api-key-file): a
// regular file of at most 4 KiB, the key its content with surrounding
// space trimmed.
func ReadKeyFile(path string) (string, error) {
	b, err := fsx.ReadFile(path, maxKeyFile)
	if err != nil {
		return "", err
	}
	k := strings.TrimSpace(string(b))
	if k == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return k, nil
}

// withHost returns argv with the value of --host replaced, or added.
func withHost(argv []string, host string) []string {
	out := append([]string(nil), argv...)
	for i := 0; i < len(out); i++ {
		if out[i] == "--host" && i+1 < len(out) {
			out[i+1] = host
			return out
		}
		if strings.HasPrefix(out[i], "--host=") {
			out[i] = "--host=" + host
			return out
		}
	}
	return append(out, "--host", host)
}

// withPort returns argv with the value of --port replaced.
func withPort(argv []string, port int) []string {
	out := append([]string(nil), argv...)
	for i := 0; i < len(out); i++ {
		if out[i] == "--port" && i+1 < len(out) {
			out[i+1] = strconv.Itoa(port)
			return out
		}
		if len(out[i]) > 7 && out[i][:7] == "--port=" {
			out[i] = "--port=" + strconv.Itoa(port)
			return out
		}
	}
	return append(out, "--port", strconv.Itoa(port))
}

func targetFor(host string, port int, d *plan.Desired) Target {
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return Target{BaseURL: "http://" + net.JoinHostPort(host, strconv.Itoa(port)), Model: d.Model.ServedName, Engine: d.Engine.Kind, Version: d.Engine.Version}
}

// replaceLostProxy starts a new proxy in front of the engine of s when its
// proxy is gone and the engine runs (plan's "the proxy is gone" update).
// The engine is never stopped here: it holds the weights, and a new proxy
// takes seconds. It reports whether it started one.
func (a *Applier) replaceLostProxy(ctx context.Context, c *plan.Change, s *state.Server) (bool, error) {
	if s == nil || s.Proxy == nil || !c.After.Proxy || s.BackendPort == 0 || a.alive(ctx, *s.Proxy) {
		return false, nil
	}
	// The engine may have gone since the plan (a saved plan): a new proxy
	// would front nothing. Nothing is started; the next plan starts the
	// server again.
	if obs, err := a.Drivers.Read(ctx, s.Instance); err != nil || !obs.Alive {
		why := "is gone too"
		if err != nil {
			why = "cannot be observed (" + err.Error() + ")"
		} else if obs.Detail != "" {
			why += " (" + obs.Detail + ")"
		}
		return false, &ServerError{Addr: c.Addr, Phase: "proxy", Err: fmt.Errorf("its proxy is gone and its engine (%s) %s: nothing serves on port %d, and no new proxy was started; the state records both as they were. Run roofline plan: it starts the server again", s.Instance.Describe(), why, s.Port)}
	}
	key, err := APIKey(c.After)
	if err != nil {
		return false, &ServerError{Addr: c.Addr, Phase: "proxy", Err: fmt.Errorf("%w; the engine (pid %d) keeps running on 127.0.0.1:%d, with no proxy in front", err, s.PID, s.BackendPort)}
	}
	a.Secrets.Add(key)
	if err := a.ensureProxy(ctx, s, c.After, s.BackendPort, key); err != nil {
		return false, &ServerError{Addr: c.Addr, Phase: "proxy", Err: fmt.Errorf("starting a new proxy on port %d: %w; the engine (pid %d) keeps running on 127.0.0.1:%d, and the state records it", s.Port, err, s.PID, s.BackendPort)}
	}
	return true, nil
}

// ensureProxy starts the server's proxy if it has none, or points the one
// that runs at the new engine and waits until it forwards there.
func (a *Applier) ensureProxy(ctx context.Context, rec *state.Server, d *plan.Desired, enginePort int, key string) error {
	r := launch.Request{Name: d.Name, Host: d.Host, Port: d.Port, Backend: enginePort, Kind: d.Engine.Kind, Version: d.Engine.Version,
		Current: rec.Proxy, Moving: rec.Deposed != nil && rec.Deposed.Proxy != nil, Limits: d.ProxyLimits}
	// An engine that takes a key only on its command line (SGLang): the
	// proxy enforces it. The proxy listens where the engine would have.
	if k := engine.LookupOrDefault(d.Engine.Kind); k.APIKeyEnv == "" {
		r.Key = key
		if d.Host == "" {
			r.Host = k.DefaultHost
		}
	}
	_, err := a.Proxies.Ensure(ctx, r, func(p *state.Instance, started bool) error {
		if !started {
			return a.update(func(st *state.File) {
				if s := st.Server(rec.Name); s != nil {
					s.Proxy = p
				}
			})
		}
		rec.Proxy = p
		return a.update(func(st *state.File) { st.Set(rec.Clone()) })
	})
	return err
}

// fail stops what this apply started for the server, restores the old
// instance of a rollout, classifies the log and returns the explained error.
func (a *Applier) fail(ctx context.Context, c *plan.Change, rec, old *state.Server, cbd bool, phase string, cause error, proc *state.Instance, start time.Time) error {
	oldProxy := rec.Proxy
	if cbd && old.Proxy != nil && moving(old, c.After) {
		oldProxy = old.Proxy
	}
	if cbd && oldProxy != nil && old.BackendPort != 0 && proxy.BackendPort(a.StateDir, rec.Name) != old.BackendPort {
		// The proxy points at the new instance (or is not known to point at
		// the old one): point it back at the old one before stopping the new.
		// This must finish even when apply is interrupted.
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		err := proxy.Point(bctx, proxy.TargetFile(a.StateDir, rec.Name), statusOf(oldProxy, a.StateDir, rec.Name), proxy.TargetLine(old.BackendPort, old.Engine.Kind, old.Engine.Version), 10*time.Second)
		if err == nil {
			_, _ = proxy.Drain(bctx, statusOf(oldProxy, a.StateDir, rec.Name), proxy.BackendAddr(old.BackendPort), 5*time.Second, nil)
		}
		cancel()
		if err != nil {
			// Stop nothing: the state keeps both instances and the next
			// apply decides from where the proxy points.
			return &ServerError{Addr: c.Addr, Phase: phase, Err: fmt.Errorf("%w; pointing the proxy back at the old instance failed too (%v): both instances are left running and recorded", cause, err)}
		}
	}
	if proc != nil {
		_ = a.Drivers.Stop(ctx, *proc, a.StopGrace)
	}
	if cbd && oldProxy != rec.Proxy && rec.Proxy != nil {
		// A port move failed: the new endpoint's proxy goes too.
		_ = a.Drivers.Stop(ctx, *rec.Proxy, 5*time.Second)
	}
	tail := readTail(rec.LogPath, 4<<20)
	diag := engine.LogsOf(rec.Engine.Kind).Classify(tail)
	se := &ServerError{Addr: c.Addr, Phase: phase, Err: cause, Diagnosis: &diag, LogTail: engineLines(tail, 15), KeptOld: cbd}
	_ = a.update(func(st *state.File) {
		if cbd {
			restored := old.Clone()
			restored.Proxy = oldProxy
			st.Set(restored)
			return
		}
		failed := rec.Clone()
		failed.Status = state.StatusFailed
		failed.Forget()
		failed.Deposed = nil
		st.Set(failed)
	})
	a.journalRollout(rec, &journal.Failure{Phase: se.Phase, Error: se.Err.Error(), KeptOld: se.KeptOld, Class: diag.Class})
	if a.Hooks != nil {
		a.Hooks.End(c.Addr, "Failed", a.now().Sub(start), diag.Class)
	}
	return se
}

func footprintOf(fp *logdiag.Footprint) *state.Footprint {
	out := &state.Footprint{}
	if fp.WeightsGiB != nil {
		out.WeightsGiB = *fp.WeightsGiB
	}
	if fp.KVCacheGiB != nil {
		out.KVCacheGiB = *fp.KVCacheGiB
	}
	if fp.KVTokens != nil {
		out.KVTokens = *fp.KVTokens
	}
	if fp.MaxConcurrency != nil {
		out.MaxConcurrency = *fp.MaxConcurrency
	}
	return out
}

// Rollback switches server name back to the previous instance kept by
// keep_previous: the proxy is pointed at it (no reload: it runs, loaded and
// idle), and the instance it replaces is kept in its place, so that a second
// rollback switches forward again. It returns how long the switch took.
func (a *Applier) Rollback(ctx context.Context, st *state.File, name string) (*state.File, time.Duration, error) {
	a.st = st.Clone()
	s := a.st.Server(name)
	switch {
	case s == nil:
		return a.st, 0, fmt.Errorf("no server %q in the state", name)
	case s.Deposed == nil || s.Deposed.Status != state.StatusKept:
		return a.st, 0, fmt.Errorf("server.%s has no previous instance to roll back to (lifecycle { keep_previous = \"10m\" } keeps one after a rollout)", name)
	case s.Proxy == nil:
		return a.st, 0, fmt.Errorf("server.%s has no running proxy to switch", name)
	case !a.alive(ctx, *s.Proxy):
		return a.st, 0, fmt.Errorf("server.%s cannot switch: its proxy (pid %d) is gone; the engine (pid %d) and the previous instance (pid %d) still run, as the state records. Run roofline apply: it starts a new proxy in front of the engine; then roll back", name, s.Proxy.PID, s.PID, s.Deposed.PID)
	case !a.alive(ctx, s.Deposed.Instance):
		return a.st, 0, fmt.Errorf("the previous instance of server.%s (pid %d) is no longer running", name, s.Deposed.PID)
	}
	prev := s.Deposed.Clone()
	start := time.Now()
	if err := proxy.Point(ctx, proxy.TargetFile(a.StateDir, name), statusOf(s.Proxy, a.StateDir, name), proxy.TargetLine(prev.BackendPort, prev.Engine.Kind, prev.Engine.Version), 10*time.Second); err != nil {
		return a.st, 0, err
	}
	took := time.Since(start)
	cur := s.Clone()
	cur.Deposed, cur.Proxy = nil, nil
	cur.Status = state.StatusKept
	// The kept instance has been ready since its own start: its ReadyAt
	// (status's uptime, the load time) stays. Only a record without one
	// (written before ready times were kept) gets the switch's time.
	prev.Status, prev.Proxy, prev.Deposed = state.StatusReady, s.Proxy, cur
	if prev.ReadyAt.IsZero() {
		prev.ReadyAt = a.now().UTC()
	}
	err := a.update(func(st *state.File) { st.Set(prev) })
	return a.st, took, err
}

// unrecorded explains a state write that failed after an engine started
// (a full disk, a read-only state directory): the engine keeps running,
// what the state holds, and how the next command finds it.
func unrecorded(err error, pid int, launchID, what string) error {
	return fmt.Errorf("%w. The engine (pid %d) is still running, but the state could not record %s. "+
		"The state holds its launch id %s (written before the start), so the next roofline plan finds it and adopts it once the state can be written; "+
		"to stop it by hand: kill -TERM -%d", err, pid, what, launchID, pid)
}
