package cli

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/roofline/roofline/internal/agent"
	"github.com/roofline/roofline/internal/agent/live"
	"github.com/roofline/roofline/internal/apply"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/journal"
	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/snapshot"
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
	settings, err := agent.LoadSettings(*settingsPath, base)
	if err != nil {
		m.view().Errorf("%v", err)
		return ExitError
	}
	token, err := agent.ReadToken(*tokenFile, os.Getenv)
	if err != nil {
		m.view().Errorf("%v", err)
		return ExitError
	}
	ep := agent.Endpoint{Listen: *listen, Token: token}
	if open, err := ep.Unprotected(); err != nil {
		return usageError(m, "agent", err.Error())
	} else if open {
		m.view().AgentUnprotected(*listen)
		return ExitError
	}
	b, ok := openBackend(m)
	if !ok || !b.needSelf(m) {
		return ExitError
	}
	release, err := agent.Lock(b.stateDir)
	if err != nil {
		m.view().Errorf("%v", err)
		return ExitError
	}
	defer release()

	logger := log.New(m.Err, "", log.LstdFlags)
	logf := func(format string, args ...any) { logger.Printf(format, args...) }
	a := agent.New(settings)
	a.States, a.Dir, a.Logf = b.states, b.stateDir, logf
	h := agentHost(m, b, logf)
	a.Observer, a.Generator, a.Restarter, a.Retirer = live.Observer{O: newObserver(b.drivers, b.stateDir)}, h, h, h
	a.BootID = agent.HostBootID

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	ep.Snapshot = h.Snapshot
	if err := a.Serve(ctx, ep, hup, *settingsPath, base); err != nil {
		m.view().Errorf("%v", err)
		return ExitError
	}
	return ExitOK
}

// agentHost builds the agent's restarter, retirer and generator: the
// configuration as it is now, plan's refresh and apply of this host.
func agentHost(m *Meta, b *backend, logf func(string, ...any)) *live.Host {
	return &live.Host{
		States: b.states, Load: loadNow(m), Secrets: m.secrets, Logf: logf,
		ReadHostFile: readHostSecret, Getenv: os.LookupEnv,
		Refresh: func(ctx context.Context, cfg *config.Config, st *state.File) *plan.Inputs {
			hb := *b
			hb.cfg = cfg
			return hb.refresh(ctx, "", false, cfg, st)
		},
		Applier: func() *apply.Applier {
			return &apply.Applier{State: b.states, Drivers: b.drivers, Gates: newGates(m), Hooks: views.LogHooks{Logf: logf},
				StateDir: b.stateDir, Proxies: b.proxies(), Secrets: m.secrets}
		},
		Take: func(ctx context.Context, cfg *config.Config, st *state.File) *snapshot.File {
			return b.takeSnapshot(ctx, cfg, st, "", false)
		},
		Journal: journal.Path(b.stateDir),
	}
}

// loadNow loads the configuration as it is now and notes its secrets.
func loadNow(m *Meta) func() (*config.Config, error) {
	return func() (*config.Config, error) {
		cfg, diags := config.LoadDirInputs(".", m.inputs())
		if diags.HasErrors() {
			return nil, errors.New(diags.Error())
		}
		m.noteSecrets(cfg)
		return cfg, nil
	}
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
	rep := agent.CheckHost(context.Background(), st, b.stateDir, live.Observer{O: newObserver(b.drivers, b.stateDir)}, &live.Host{Load: loadNow(m), Secrets: m.secrets})
	if *textfile != "" {
		if err := agent.WriteTextfile(*textfile, rep); err != nil {
			m.view().Errorf("writing %s: %v", *textfile, err)
			return ExitError
		}
	}
	views.NewCheck(views.TypeOf(*jsonOut), m.view()).Report(rep)
	if rep.Drift > 0 {
		return ExitChanges
	}
	return ExitOK
}
