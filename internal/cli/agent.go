package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/roofline/roofline/internal/agent"
	"github.com/roofline/roofline/internal/apply"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/gate"
	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/journal"
	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/views"
)

func init() {
	register(&Command{
		Name:     "agent",
		Synopsis: "Keep the servers of the state running; serve /metrics",
		Usage:    views.UsageAgent,
		Run:      runAgent,
	})
	register(&Command{
		Name:     "check",
		Synopsis: "Observe the servers once; exit 2 on drift (for cron and monitoring)",
		Usage:    views.UsageCheck,
		Run:      runCheck,
	})
}

const defaultAgentListen = "127.0.0.1:9478"

// agentObserver adapts refresh's observer to the agent.
type agentObserver struct{ o *plan.LiveObserver }

func (a agentObserver) Observe(ctx context.Context, s *state.Server) agent.Observation {
	o := a.o.Observe(ctx, s)
	return agent.Observation{Alive: o.Alive, Healthy: o.Healthy, Detail: o.Detail}
}

// agentGenerator runs the health gate (models, a tiny streamed generation,
// /metrics) against a ready server, as apply does before promoting it, with
// the server's API key.
type agentGenerator struct{ m *Meta }

// apiKey is the key of server name in the configuration as it is now (the
// state never holds it): "" for a server without one.
func (g agentGenerator) apiKey(name string) (string, error) {
	cfg, diags := config.LoadDirInputs(".", g.m.inputs())
	if diags.HasErrors() {
		return "", fmt.Errorf("the configuration does not load, so the API key is unknown: %s", diags.Error())
	}
	g.m.noteSecrets(cfg)
	cs := cfg.Servers[name]
	if cs == nil {
		return "", nil
	}
	k, err := apply.APIKey(&plan.Desired{Keyed: cs.APIKey != "" || cs.APIKeyFile != "", APIKey: cs.APIKey, APIKeyFile: cs.APIKeyFile})
	g.m.secrets.Add(k)
	return k, err
}

func (g agentGenerator) Generate(ctx context.Context, s *state.Server) error {
	key, err := g.apiKey(s.Name)
	if err != nil {
		return err
	}
	return gate.Serves(ctx, gate.Target{BaseURL: gate.LocalURL(s.Host, s.Port), Model: s.Model.ServedName, Engine: s.Engine.Kind, APIKey: key})
}

// agentRestarter restarts servers the way apply would: under the state
// lock, from a fresh plan of the configuration restricted to them, through
// apply's driver, health gate and gates. It refuses to start a server whose
// configuration changed since the last apply: that is apply's job.
type agentRestarter struct {
	m    *Meta
	b    *backend
	logf func(string, ...any)
}

func (r *agentRestarter) Restart(ctx context.Context, reqs []agent.Request) []agent.Outcome {
	rs := agent.Pending(reqs)
	id, err := r.b.states.Lock(ctx, state.NewLockInfo("agent restart"))
	if err != nil {
		return rs.FailAll(err, "")
	}
	defer func() {
		if err := r.b.states.Unlock(id); err != nil {
			r.logf("releasing the state lock: %v", err)
		}
	}()
	st, err := r.b.states.Read()
	if err != nil {
		return rs.FailAll(err, "")
	}
	// Instances an interrupted run started but never recorded are
	// recorded by apply, first thing.
	cfg, diags := config.LoadDirInputs(".", r.m.inputs())
	if diags.HasErrors() {
		return rs.FailAll(fmt.Errorf("the configuration does not load: %s", diags.Error()), "config")
	}
	r.m.noteSecrets(cfg) // the log never shows a secret, changed or not
	full := cfg
	cfg = cfg.HostOnly() // a cluster's servers are not this host's to restart
	rs.Triage(reqs, st, func(name string) bool { return cfg.Servers[name] != nil })
	if len(rs.Targets) == 0 {
		return rs.Outs
	}
	b := &backend{cfg: cfg, full: full, stateDir: r.b.stateDir, states: r.b.states, self: r.b.self, drivers: r.b.drivers}
	in := b.refresh(ctx, "", false, cfg, st)
	in.Mode, in.Targets, in.Replace = plan.ModeNormal, append(slices.Clone(rs.Targets), rs.Kept...), rs.Replace
	p := plan.Make(in)
	if p.HasErrors() {
		return rs.FailAll(errors.New("the plan to restart has errors: "+p.ErrorsText()), "plan")
	}
	keep, skipped := p.Restarts(rs.Targets, rs.Kept)
	for name, sk := range skipped {
		if o := rs.Out(name); o != nil {
			o.Skipped, o.Lasting = sk.Reason, sk.Lasting
		}
	}
	if len(keep) == 0 {
		return rs.Outs
	}
	ap := &apply.Applier{
		State: r.b.states, Drivers: r.b.drivers, Gates: newGates(r.m), Hooks: views.LogHooks{Logf: r.logf},
		StateDir: r.b.stateDir, Proxies: r.b.proxies(),
		Journal: journalFor(r.b, func() *gpu.Snapshot { return p.Snapshot }), Secrets: r.m.secrets,
	}
	after, err := ap.Apply(ctx, p, st)
	failed, other := apply.ServerErrors(err)
	for _, name := range keep {
		o := rs.Out(name)
		switch se := failed[name]; {
		case se != nil:
			o.Failed(se, se.Phase, se.Err, se.Diagnosis)
		case len(other) > 0:
			o.Err = errors.New(strings.Join(other, "; "))
		default:
			o.Restarted = true
			if s := after.Server(name); s != nil {
				o.PID = s.PID
			}
		}
	}
	return rs.Outs
}

func runAgent(m *Meta, args []string) int {
	fs := newFlags("agent")
	def := agent.DefaultSettings()
	listen := fs.String("listen", defaultAgentListen, "")
	tokenFile := fs.String("token-file", "", "")
	settingsPath := fs.String("settings", "", "")
	base := def
	fs.DurationVar(&base.Tick, "tick", def.Tick, "")
	fs.DurationVar(&base.GenerateEvery, "generate-every", def.GenerateEvery, "")
	fs.DurationVar(&base.BackoffInitial, "backoff-initial", def.BackoffInitial, "")
	fs.DurationVar(&base.BackoffMax, "backoff-max", def.BackoffMax, "")
	fs.DurationVar(&base.ResetAfter, "reset-after", def.ResetAfter, "")
	fs.IntVar(&base.MaxRestarts, "max-restarts", def.MaxRestarts, "")
	fs.IntVar(&base.HangChecks, "hang-checks", def.HangChecks, "")
	if !parseConfigFlags(m, fs, args) {
		return ExitError
	}
	if fs.NArg() > 0 {
		return usageError(m, "agent", fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	}
	if err := base.Validate(); err != nil {
		return usageError(m, "agent", err.Error())
	}
	settings := base
	if *settingsPath != "" {
		s, err := agent.LoadSettings(*settingsPath, base)
		if err != nil {
			fmt.Fprintf(m.Err, "Error: %v\n", err)
			return ExitError
		}
		settings = s
	}
	token, err := agent.ReadToken(*tokenFile, os.Getenv)
	if err != nil {
		fmt.Fprintf(m.Err, "Error: %v\n", err)
		return ExitError
	}
	if *listen != "off" {
		loop, err := agent.IsLoopback(*listen)
		if err != nil {
			return usageError(m, "agent", err.Error())
		}
		if !loop && token == "" {
			m.view().AgentUnprotected(*listen)
			return ExitError
		}
	}
	b, ok := openBackend(m)
	if !ok || !b.needSelf(m) {
		return ExitError
	}
	release, err := agent.Lock(b.stateDir)
	if err != nil {
		fmt.Fprintf(m.Err, "Error: %v\n", err)
		return ExitError
	}
	defer release()

	logger := log.New(m.Err, "", log.LstdFlags)
	logf := func(format string, args ...any) { logger.Printf(format, args...) }
	a := agent.New(settings)
	a.States, a.Dir, a.Logf = b.states, b.stateDir, logf
	a.Observer = agentObserver{newObserver(b.drivers, b.stateDir)}
	a.Generator = agentGenerator{m}
	res := &agentRestarter{m: m, b: b, logf: logf}
	a.Restarter, a.Retirer = res, agentRetirer{res}
	a.BootID = agent.HostBootID

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	notify := agent.NewNotifier()

	var srv *http.Server
	if *listen != "off" {
		ln, err := net.Listen("tcp", *listen)
		if err != nil {
			fmt.Fprintf(m.Err, "Error: cannot listen on %s: %v (another agent, or pick another -listen)\n", *listen, err)
			return ExitError
		}
		h := &agent.Handler{
			Gatherer: agent.Registry(agent.NewCollector(a.Report, a), true),
			Report:   a.Report, Token: token,
			Stale:    func() time.Duration { return 3*a.Settings().Tick + time.Minute },
			Snapshot: func(w http.ResponseWriter, r *http.Request) { writeAgentSnapshot(w, r, m, b) },
		}
		srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		logf("roofline agent for %s: serving /metrics, /snapshot and /healthz on http://%s", b.stateDir, ln.Addr())
	} else {
		logf("roofline agent for %s (no HTTP endpoint)", b.stateDir)
	}

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go a.ReloadOn(ctx, hup, notify, *settingsPath, base)

	watchdog := agent.WatchdogInterval()
	onTick := a.SystemdTick(notify, watchdog)
	if watchdog > 0 && watchdog < settings.Tick {
		logf("warning: the systemd watchdog (%s) is shorter than two ticks (%s); set WatchdogSec to at least 3 ticks", 2*watchdog, 2*settings.Tick)
	}
	_ = a.Run(ctx, onTick)
	_ = notify.Send("STOPPING=1")
	logf("stopping: the servers keep running")
	if srv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}
	return ExitOK
}

// writeAgentSnapshot serves /snapshot: the host snapshot of roofline
// snapshot (the state, redacted, what refresh sees of every server, the
// GPUs, engines, models and ports), taken with the configuration as it is
// now, so that CI can fetch it for plan -review -snapshot.
func writeAgentSnapshot(w http.ResponseWriter, r *http.Request, m *Meta, b *backend) {
	st, err := b.states.Read()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	cfg, diags := config.LoadDirInputs(".", m.inputs())
	if diags.HasErrors() {
		http.Error(w, "the configuration does not load: "+diags.Error(), http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	if err := b.takeSnapshot(r.Context(), cfg.HostOnly(), st, "", false).Write(&buf); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(buf.Bytes())
}

func runCheck(m *Meta, args []string) int {
	fs := newFlags("check")
	jsonOut := fs.Bool("json", false, "")
	textfile := fs.String("textfile", "", "")
	if !parseConfigFlags(m, fs, args) {
		return ExitError
	}
	if fs.NArg() > 0 {
		return usageError(m, "check", fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	}
	b, st, ok := openStateFile(m)
	if !ok {
		return ExitError
	}
	entries, _ := journal.Read(journal.Path(b.stateDir))
	boot, _ := agent.HostBootID()
	rep := agent.Check(context.Background(), st, agentObserver{newObserver(b.drivers, b.stateDir)}, agentGenerator{m}, entries, boot, time.Now())
	if *textfile != "" {
		if err := agent.WriteTextfile(*textfile, rep); err != nil {
			fmt.Fprintf(m.Err, "Error: writing %s: %v\n", *textfile, err)
			return ExitError
		}
	}
	if *jsonOut {
		views.WriteReport(m.Out, rep)
	} else {
		rep.WriteText(m.Out)
	}
	if rep.Drift > 0 {
		return ExitChanges
	}
	return ExitOK
}

// agentRetirer ends rollback windows: a previous instance kept for
// keep_previous whose window ended is stopped through apply (the plan's
// "rollback window ended" update), under the state lock.
type agentRetirer struct{ r *agentRestarter }

func (t agentRetirer) Retire(ctx context.Context, now time.Time) ([]string, error) {
	st, err := t.r.b.states.Read()
	if err != nil {
		return nil, err
	}
	due := agent.KeptInstances(st)
	if len(due) == 0 {
		return nil, nil
	}
	cfg, diags := config.LoadDirInputs(".", t.r.m.inputs())
	if diags.HasErrors() {
		return nil, fmt.Errorf("the configuration does not load: %s", diags.Error())
	}
	host := cfg.HostOnly()
	expired := agent.WindowsEnded(st, due, func(name string) (time.Duration, bool) {
		if cs := host.Servers[name]; cs != nil {
			return cs.Lifecycle.KeepPrevious, true
		}
		return 0, false
	}, now)
	if len(expired) == 0 {
		return nil, nil
	}
	id, err := t.r.b.states.Lock(ctx, state.NewLockInfo("agent retire"))
	if err != nil {
		return nil, err
	}
	defer func() { _ = t.r.b.states.Unlock(id) }()
	if st, err = t.r.b.states.Read(); err != nil {
		return nil, err
	}
	t.r.m.noteSecrets(cfg)
	b := &backend{cfg: host, full: cfg, stateDir: t.r.b.stateDir, states: t.r.b.states, self: t.r.b.self, drivers: t.r.b.drivers}
	in := b.refresh(ctx, "", false, host, st)
	in.Mode, in.Targets = plan.ModeNormal, due
	p := plan.Make(in)
	if p.HasErrors() {
		return nil, errors.New("the plan to end rollback windows has errors; run roofline plan")
	}
	retired := p.EndWindows()
	if len(retired) == 0 {
		return nil, nil
	}
	ap := &apply.Applier{State: t.r.b.states, Drivers: t.r.b.drivers, Gates: newGates(t.r.m), Hooks: views.LogHooks{Logf: t.r.logf},
		StateDir: t.r.b.stateDir, Proxies: t.r.b.proxies(), Secrets: t.r.m.secrets}
	if _, err := ap.Apply(ctx, p, st); err != nil {
		return nil, err
	}
	return retired, nil
}
