package apply

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/proxy"
	"github.com/roofline/roofline/internal/secret"
	"github.com/roofline/roofline/internal/state"
)

// rollout is one create or replace in flight: what its steps share.
type rollout struct {
	c     *plan.Change
	d     *plan.Desired
	start time.Time

	logPath string
	key     string        // the API key, "" for none
	old     *state.Server // what the state had, nil for none
	rec     *state.Server // the new instance's record
	cbd     bool          // create-before-destroy: old serves until the switch
	oldLog  os.FileInfo   // the serving old instance's log file before the start

	enginePort int
	engineHost string
	proc       *state.Instance // the started instance
	t          Target          // where the engine answers
	cut        int64           // requests of the old instance cut at the drain limit
}

// create starts the desired server, waits for it, gates it, and promotes it;
// for create-before-destroy it switches the proxy and then stops the old one.
// Each step records the state before the next one begins.
func (a *Applier) create(ctx context.Context, c *plan.Change) error {
	r := &rollout{c: c, d: c.After, start: a.now()}
	if a.Hooks != nil {
		verb := "Creating..."
		if c.Action.IsReplace() {
			verb = "Replacing..."
		}
		a.Hooks.Begin(c.Addr, verb)
	}
	for _, step := range []func(context.Context, *rollout) error{
		a.prepare, a.place, a.depose, a.launch, a.waitReady, a.runGates, a.promote, a.report,
	} {
		if err := step(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// prepare makes the log folder, reads the API key and the old record, and
// stops a kept previous instance: a new rollout replaces the rollback
// target, and its GPU memory is needed.
func (a *Applier) prepare(ctx context.Context, r *rollout) error {
	c, d := r.c, r.d
	r.logPath = LogPath(a.StateDir, d.Name)
	if err := os.MkdirAll(filepath.Dir(r.logPath), 0o700); err != nil {
		return &ServerError{Addr: c.Addr, Phase: "start", Err: err}
	}
	key, err := APIKey(d)
	if err != nil {
		return &ServerError{Addr: c.Addr, Phase: "start", Err: err}
	}
	// A key read from a file now was never in the configuration: output
	// is masked against it from here on.
	a.Secrets.Add(key)
	r.key = key
	a.mu.Lock()
	r.old = a.st.Server(d.Name).Clone()
	a.mu.Unlock()
	if old := r.old; old != nil && old.Deposed != nil && old.Deposed.Status == state.StatusKept {
		if err := a.Drivers.Stop(ctx, old.Deposed.Instance, a.StopGrace); err != nil {
			return &ServerError{Addr: c.Addr, Phase: "stop", Err: fmt.Errorf("the kept previous instance (pid %d): %w", old.Deposed.PID, err)}
		}
		old.Deposed = nil
		if err := a.update(func(st *state.File) { st.Servers[d.Name].Deposed = nil }); err != nil {
			return &ServerError{Addr: c.Addr, Phase: "stop", Err: err}
		}
	}
	return nil
}

// place picks where the engine listens: the server's address, or behind the
// proxy a free backend port on loopback; and makes the new record.
func (a *Applier) place(_ context.Context, r *rollout) error {
	d := r.d
	argv := d.Argv
	r.enginePort, r.engineHost = d.Port, d.Host
	if d.Proxy {
		lo, hi := d.BackendPorts[0], d.BackendPorts[1]
		if lo <= 0 || hi < lo {
			lo, hi = plan.DefaultBackendPorts[0], plan.DefaultBackendPorts[1]
		}
		p, err := proxy.FreePort(lo, hi)
		if err != nil {
			return &ServerError{Addr: r.c.Addr, Phase: "start", Err: err}
		}
		r.enginePort = p
		// Behind the proxy the engine is private: loopback only.
		r.engineHost = "127.0.0.1"
		argv = withHost(withPort(argv, p), r.engineHost)
	}
	r.rec = &state.Server{
		Name: d.Name, Engine: d.Engine, Model: d.Model,
		Argv: argv, Env: d.Env, Sensitive: d.Sensitive, CommandLen: d.CommandLen,
		GPUs: d.GPUs, Host: d.Host, Port: d.Port, Image: d.Image,
		Instance: state.Instance{Driver: d.Driver, LogPath: r.logPath, LaunchID: driver.NewLaunchID()},
		Status:   state.StatusStarting, CreatedAt: a.now().UTC(),
		ConfigHash: d.ConfigHash, GateHash: d.GateHash, Predicted: d.Predicted, ClaimBytes: d.ClaimBytes, ProxyLimits: d.ProxyLimits,
	}
	if r.key != "" {
		prev := ""
		if r.old != nil {
			prev = r.old.APIKeyHash
		}
		r.rec.APIKeyHash = secret.HashAgainst(r.key, prev)
	}
	if d.Proxy {
		r.rec.BackendPort = r.enginePort
	}
	return nil
}

// depose settles the old instance: create-before-destroy keeps it serving,
// recorded as deposed (a killed apply finds it in the state and recovers);
// otherwise what is left of it stops. The new record is written.
func (a *Applier) depose(ctx context.Context, r *rollout) error {
	old, rec := r.old, r.rec
	r.cbd = r.c.Action == plan.CreateThenDelete && old != nil && hasProc(old)
	if old != nil {
		rec.Proxy = old.Proxy
		if !r.cbd && hasProc(old) {
			// A dead main process can leave workers holding GPU memory.
			_ = a.Drivers.Stop(ctx, old.Instance, a.StopGrace)
		}
	}
	if r.cbd {
		dep := old.Clone()
		dep.Proxy = nil
		dep.Deposed = nil
		if moving(old, r.d) {
			// A new proxy takes the new address; the old one stays with
			// the old instance until it has drained.
			dep.Proxy = old.Proxy
			rec.Proxy = nil
		}
		rec.Deposed = dep
	}
	if err := a.update(func(st *state.File) { st.Set(rec.Clone()) }); err != nil {
		return &ServerError{Addr: r.c.Addr, Phase: "start", Err: err}
	}
	return nil
}

// launch starts the engine through its driver and records the instance.
func (a *Applier) launch(ctx context.Context, r *rollout) error {
	d, rec := r.d, r.rec
	env := maps.Clone(d.Env)
	if env == nil {
		env = map[string]string{}
	}
	if k := engine.Lookup(d.Engine.Kind); k != nil && r.key != "" && k.APIKeyEnv != "" {
		// vLLM reads its key from the environment: never on the command
		// line, where every local user can read it. The state's Env does
		// not hold it.
		env[k.APIKeyEnv] = r.key
	}
	a.mu.Lock()
	lineage := a.st.Lineage
	logs := stateLogs(a.st, r.old)
	a.mu.Unlock()
	if r.cbd && r.old.LogPath != "" {
		r.oldLog, _ = os.Stat(r.old.LogPath)
	}
	inst, err := a.Drivers.Start(ctx, driver.LaunchSpec{Driver: d.Driver, Name: d.Name, Argv: rec.Argv, Env: env,
		LogPath: r.logPath, Dir: a.StateDir, LaunchID: rec.LaunchID, StateLogs: logs,
		Image: d.Image, GPUs: d.GPUs, ModelPath: d.Model.Path, Lineage: lineage, ConfigHash: d.ConfigHash})
	if err != nil {
		return a.fail(ctx, r.c, rec, r.old, r.cbd, "start", err, nil, r.start)
	}
	r.proc = &inst
	rec.Instance = inst.Clone()
	if r.oldLog != nil {
		// The driver moved the serving instance's log aside for the new
		// one's: record where, so that after a failed rollout logs,
		// diagnose and the agent read the log of the instance that serves.
		if moved := movedLog(r.logPath, r.old.LogPath, r.oldLog); moved != "" {
			r.old.LogPath = moved
			if rec.Deposed != nil {
				rec.Deposed.LogPath = moved
			}
		}
	}
	if err := a.update(func(st *state.File) { st.Set(rec.Clone()) }); err != nil {
		return &ServerError{Addr: r.c.Addr, Phase: "start", Err: unrecorded(err, inst.PID, rec.LaunchID, "its pid")}
	}
	a.note(r.c.Addr, "Started pid %d; waiting for it to load", inst.PID)
	return nil
}

// waitReady waits until the engine serves (connection refused while loading
// is normal for vLLM, so is 503 for SGLang), then reads its footprint.
func (a *Applier) waitReady(ctx context.Context, r *rollout) error {
	c, d, proc := r.c, r.d, r.proc
	r.t = targetFor(r.engineHost, r.enginePort, d)
	r.t.APIKey = r.key
	exited := func() bool { return !a.alive(ctx, *proc) }
	timeout := d.Gate.HealthTimeout
	if timeout <= 0 {
		timeout = 15 * time.Minute
	}
	progress := func(el time.Duration) {
		if a.Hooks != nil {
			a.Hooks.Progress(c.Addr, el, lastLine(r.logPath))
		}
	}
	if err := a.Gates.WaitReady(ctx, r.t, timeout, exited, progress); err != nil {
		if ctx.Err() != nil {
			// Ctrl-C: leave the process running and the state true.
			return &ServerError{Addr: c.Addr, Phase: "health", Err: fmt.Errorf("interrupted while waiting; pid %d is still starting (roofline status shows it, the next plan continues)", proc.PID)}
		}
		return a.fail(ctx, c, r.rec, r.old, r.cbd, "health", err, proc, r.start)
	}
	if fp := engine.LogsOf(d.Engine.Kind).Footprint(readTail(r.logPath, 4<<20)); fp != nil {
		r.rec.Footprint = footprintOf(fp)
		a.recordCalibration(ctx, c.Addr, d, r.rec, fp, r.t)
	}
	return nil
}

// runGates runs the promotion gates; a failure undoes the rollout.
func (a *Applier) runGates(ctx context.Context, r *rollout) error {
	c := r.c
	a.note(c.Addr, "Ready; running the gates")
	res, gerr := a.Gates.Check(ctx, r.t, r.d.Gate)
	if rep, ok := a.Hooks.(GateReporter); ok {
		rep.GateResult(c.Addr, res, gerr)
	}
	r.rec.Gate = res
	if res != nil {
		for _, l := range res.Summary {
			a.note(c.Addr, "%s", l)
		}
	}
	if gerr != nil {
		return a.fail(ctx, c, r.rec, r.old, r.cbd, "gates", gerr, r.proc, r.start)
	}
	return nil
}

// promote switches the proxy to the new instance, records it ready, and
// drains and retires the old one.
func (a *Applier) promote(ctx context.Context, r *rollout) error {
	c, d, rec := r.c, r.d, r.rec
	if d.Proxy {
		// The gates are recorded before the switch: an apply killed from
		// here on finishes the rollout forward.
		if err := a.update(func(st *state.File) { st.Set(rec.Clone()) }); err != nil {
			return &ServerError{Addr: c.Addr, Phase: "gates", Err: unrecorded(err, rec.PID, rec.LaunchID, "that it passed its gates")}
		}
		if err := a.ensureProxy(ctx, rec, d, r.enginePort, r.key); err != nil {
			return a.fail(ctx, c, rec, r.old, r.cbd, "proxy", err, r.proc, r.start)
		}
		if r.cbd {
			a.note(c.Addr, "Gates passed; the proxy on port %d switched to the new instance (pid %d)", d.Port, rec.PID)
		}
	}
	// The switch is recorded before the drain.
	rec.Status = state.StatusReady
	rec.ReadyAt = a.now().UTC()
	if err := a.update(func(st *state.File) { st.Set(rec.Clone()) }); err != nil {
		return &ServerError{Addr: c.Addr, Phase: "start", Err: unrecorded(err, rec.PID, rec.LaunchID, "that it is ready")}
	}
	if r.cbd {
		n, err := a.retire(ctx, c.Addr, d.Name, rec.Deposed, rec.Proxy, r.enginePort, d.DrainTimeout, d.KeepPrevious)
		if err != nil {
			return err
		}
		r.cut = n
		a.mu.Lock()
		rec.Deposed = a.st.Server(d.Name).Clone().Deposed // nil, or the kept one
		a.mu.Unlock()
	}
	return nil
}

// report journals the rollout and ends its progress line.
func (a *Applier) report(_ context.Context, r *rollout) error {
	c, d, rec := r.c, r.d, r.rec
	a.journalRollout(rec, nil)
	if a.Hooks != nil {
		verb := "Creation complete"
		if c.Action.IsReplace() {
			verb = "Replacement complete"
		}
		detail := fmt.Sprintf("pid %d, %s", rec.PID, r.t.BaseURL)
		if d.Proxy {
			detail = fmt.Sprintf("pid %d, port %d through the proxy", rec.PID, d.Port)
		}
		if r.cut > 0 {
			detail += fmt.Sprintf("; %d request(s) of the old instance cut at the drain limit", r.cut)
		}
		a.Hooks.End(c.Addr, verb, a.now().Sub(r.start), detail)
	}
	return nil
}

// movedLog finds the old instance's log file (was, last seen at path)
// among the logs kept beside base, the new instance's log: "BASE.N" for N
// from 1, as the drivers name them. "" when it is still at path or is not
// found.
func movedLog(base, path string, was os.FileInfo) string {
	if fi, err := os.Stat(path); err == nil && os.SameFile(fi, was) {
		return ""
	}
	for n := 1; n <= 100; n++ {
		p := base + "." + strconv.Itoa(n)
		if fi, err := os.Stat(p); err == nil && os.SameFile(fi, was) {
			return p
		}
	}
	return ""
}

// stateLogs are the logs st (and old, the instance being replaced) names:
// the start never removes them (driver.LaunchSpec.StateLogs), whether or
// not their engine still runs, so logs and diagnose can read them.
func stateLogs(st *state.File, old *state.Server) []string {
	out := []string{}
	add := func(s *state.Server) {
		for ; s != nil; s = s.Deposed {
			out = append(out, s.LogPath)
			if s.Proxy != nil {
				out = append(out, s.Proxy.LogPath)
			}
		}
	}
	for _, s := range st.Servers {
		add(s)
	}
	add(old)
	return out
}
