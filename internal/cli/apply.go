package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/apply"
	"github.com/roofline/roofline/internal/journal"
	"github.com/roofline/roofline/internal/kube/live"
	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/views"
	"golang.org/x/term"
)

func init() {
	register(&Command{
		Name:     "apply",
		Synopsis: "Start, replace and stop servers to match the configuration",
		Usage:    views.UsageApply,
		Run:      func(m *Meta, args []string) int { return runApply(m, args, false) },
	})
	register(&Command{
		Name:     "destroy",
		Synopsis: "Stop every server roofline manages",
		Usage:    views.UsageDestroy,
		Run:      func(m *Meta, args []string) int { return runApply(m, args, true) },
	})
}

func runApply(m *Meta, args []string, destroy bool) int {
	name := "apply"
	if destroy {
		name = "destroy"
	}
	fs := newFlags(name)
	o := planOptions{destroy: destroy}
	o.register(fs, true)
	if !parseFlags(m, fs, args) {
		return ExitError
	}
	if destroy {
		// apply's flag set: the planning modes that contradict a destroy
		// are refused, not silently ignored (plan -destroy refuses them).
		switch {
		case o.refreshOnly:
			return usageError(m, name, "-refresh-only with destroy: destroy stops servers; run roofline apply -refresh-only to record what changed outside roofline")
		case len(o.replaces) > 0:
			return usageError(m, name, "-replace with destroy: destroy stops servers and replaces none; use roofline apply -replace=server.NAME")
		}
	}
	var (
		p      *plan.Plan
		b      *backend
		st     *state.File
		unlock func()
		ok     bool
	)
	saved := fs.NArg() == 1
	if saved {
		// A saved plan holds exactly what apply does: a planning flag
		// would be ignored, and apply would do what it excluded.
		for _, f := range []struct {
			set  bool
			name string
		}{{len(o.targets) > 0, "-target"}, {len(o.replaces) > 0, "-replace"}, {o.refreshOnly, "-refresh-only"}} {
			if f.set {
				return usageError(m, name, fmt.Sprintf("%s with a saved plan: the plan file holds exactly what apply does. Plan again with %s and -out=FILE, and apply that file", f.name, f.name))
			}
		}
		if len(*o.vars) > 0 {
			m.view().Warnf("-var and -var-file with a saved plan only find the configuration's state directory: apply does what the plan file holds, with the values it was made with. To apply other values, run roofline plan with them and -out=FILE.")
		}
	}
	view := views.NewApply(views.TypeOf(o.json), m.view(), m.OutTerminal, terminalWidth)
	if fs.NArg() == 0 && !o.autoApprove && (o.json || m.NoInput || !m.InTerminal) {
		// Approval cannot be asked, so fail before anything is planned or
		// printed.
		view.NoApproval(name, m.NoInput)
		return ExitError
	}
	switch {
	case fs.NArg() > 1:
		return usageError(m, name, "apply takes at most one plan file")
	case saved && destroy:
		return usageError(m, name, "destroy takes no plan file; use roofline plan -destroy -out=FILE and roofline apply FILE")
	case saved:
		p, b, st, unlock, ok = loadSavedPlan(m, &o, fs.Arg(0))
	default:
		var loadDiags hcl.Diagnostics
		m.diagSink = &loadDiags
		p, b, st, unlock, ok = makePlan(m, &o, o.mode(), name)
		m.diagSink = nil
		if !ok {
			view.LoadFailed(m.diagFiles, loadDiags)
		}
	}
	if !ok {
		return ExitError
	}
	defer unlock()

	view.Plan(p, saved)
	if p.HasErrors() {
		view.PlanErrors()
		return ExitError
	}
	// Servers on Kubernetes clusters (kube.go): planned now, applied after
	// the host's servers. A saved plan file holds the host's servers only.
	var clusters []*live.Run
	if !saved && p.Mode != plan.ModeRefreshOnly && !o.json { // -json streams cover the host
		var cok bool
		if clusters, cok = planClusters(m, b.full, destroy); !cok {
			m.view().ApplyPlanErrors(true)
			return ExitError
		}
	}
	if !p.HasChanges() && !live.Changes(clusters) && !(p.Mode == plan.ModeRefreshOnly && len(p.Drift) > 0) {
		view.NoChanges(saved, destroy)
		return ExitOK
	}
	if !saved && !o.autoApprove {
		if !confirm(m, destroy) {
			m.view().ApplyCancelled(destroy)
			return ExitError
		}
	}

	// Interrupts the Terraform way: the first finishes what is in flight
	// and starts nothing new; the second exits at once.
	ctx := context.Background()
	stopping, interrupted, stopSignals := twoStageInterrupt(m)
	defer stopSignals()
	ap := &apply.Applier{
		State:           b.states,
		Drivers:         b.drivers,
		Gates:           newGates(m),
		Hooks:           view.Hooks(p),
		StateDir:        b.stateDir,
		Proxies:         b.proxies(),
		Parallelism:     o.parallelism,
		Stopping:        stopping,
		Secrets:         m.secrets,
		Journal:         journal.Path(b.stateDir),
		JournalFailures: true,
		MoveJournal: func(from, to string) {
			if err := journal.Append(journal.Path(b.stateDir), journal.MoveEntry(from, to, time.Now())); err != nil {
				m.view().Warnf("the journal does not record the rename of server.%s: %v", from, err)
			}
		},
	}
	// Host secrets are read now, on this host, and nowhere else.
	if err := plan.ResolveHostEnv(p, readHostSecret, os.LookupEnv, m.secrets); err != nil {
		fmt.Fprintf(m.Err, "\nError: %v\n", err)
		return ExitError
	}
	view.Starting()
	after, err := ap.Apply(ctx, p, st)
	if interrupted() {
		m.view().ApplyInterrupted(ap.Outcomes(p))
		if err != nil {
			m.view().ApplyErrors(err)
		}
		return ExitError
	}
	if err != nil {
		view.Failed(err)
		return ExitError
	}
	if err := applyClusters(m, clusters, destroy); err != nil {
		m.view().ClusterApplyFailed(err)
		return ExitError
	}
	add, change, del := p.AppliedCounts(after)
	view.Complete(destroy, add, change, del, len(p.Targets) > 0)
	return ExitOK
}

// loadSavedPlan reads a plan file and refuses it when it is stale.
func loadSavedPlan(m *Meta, o *planOptions, path string) (*plan.Plan, *backend, *state.File, func(), bool) {
	if !setVars(m, "apply", *o.vars) {
		return nil, nil, nil, nil, false
	}
	b, st, unlock, ok := openLocked(m, "apply", o.lockTimeout, false)
	if !ok {
		return nil, nil, nil, nil, false
	}
	p, err := plan.OpenSaved(context.Background(), path, plan.Saved{
		Keys: b.states, State: st, GPUs: b.inventory(o.inventory), Config: b.cfg,
		Engines: b.prober(false),
	})
	if err != nil {
		unlock()
		m.view().Errorf("%v", err)
		return nil, nil, nil, nil, false
	}
	m.secrets.Add(p.SensitiveValues()...)
	return p, b, st, unlock, true
}

// terminalWidth is the width of the terminal on stdout, 100 if unknown.
func terminalWidth() int {
	if w, _, err := term.GetSize(int(os.Stdout.Fd())); err == nil && w > 20 {
		return w
	}
	return 100
}

// twoStageInterrupt handles SIGINT and SIGTERM during apply as Terraform
// does: the first closes stopping (apply finishes the changes in flight and
// starts no other), the second exits at once. interrupted reports whether a
// first one came.
func twoStageInterrupt(m *Meta) (stopping <-chan struct{}, interrupted func() bool, stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	i := apply.WatchInterrupts(sigs, func() { m.view().Interrupted(false) }, func() {
		m.view().Interrupted(true)
		os.Exit(ExitError)
	})
	return i.Stopping, i.Interrupted, func() {
		signal.Stop(sigs)
		i.Stop()
	}
}

// confirm asks for approval. Ctrl-C at the prompt is a "no" that says so
// (the process died silently, the lock released by the kernel).
func confirm(m *Meta, destroy bool) bool {
	sigs, stop := interrupts()
	defer stop()
	answer := make(chan bool, 1)
	go func() { answer <- m.view().Confirm(m.In, destroy) }()
	select {
	case ok := <-answer:
		return ok
	case <-sigs:
		return false
	}
}
