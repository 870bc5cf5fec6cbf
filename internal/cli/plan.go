package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/kube/live"
	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/views"
	"github.com/spf13/pflag"
)

func init() {
	register(&Command{
		Name:     "plan",
		Synopsis: "Show what apply would change, with every pre-launch check",
		Usage:    views.UsagePlan,
		Run:      runPlan,
	})
}

// planOptions are the flags plan, apply and destroy share.
type planOptions struct {
	out, inventory    string
	json, detailed    bool
	targets, replaces []string
	destroy, refresh  bool
	refreshOnly       bool
	lockTimeout       time.Duration
	autoApprove       bool
	parallelism       int
	vars              *[]string
	review            bool
	snapshot          string
	format            string
	snapshotMaxAge    time.Duration
	failOn            []string
	// addImport is roofline import's server, planned as an import block.
	addImport *config.Import
}

func (o *planOptions) register(fs *pflag.FlagSet, apply bool) {
	o.vars = varFlags(fs)
	fs.StringVar(&o.inventory, "inventory", "", "")
	fs.StringArrayVar(&o.targets, "target", nil, "")
	fs.StringArrayVar(&o.replaces, "replace", nil, "")
	fs.BoolVar(&o.refreshOnly, "refresh-only", false, "")
	fs.BoolVar(&o.refresh, "refresh-probes", false, "")
	fs.DurationVar(&o.lockTimeout, "lock-timeout", 0, "")
	fs.IntVar(&o.parallelism, "parallelism", 10, "")
	fs.BoolVar(&o.json, "json", false, "")
	if apply {
		fs.BoolVar(&o.autoApprove, "auto-approve", false, "")
	} else {
		fs.StringVar(&o.out, "out", "", "")
		fs.BoolVar(&o.detailed, "detailed-exitcode", false, "")
		fs.BoolVar(&o.destroy, "destroy", false, "")
		fs.BoolVar(&o.review, "review", false, "")
		fs.StringVar(&o.snapshot, "snapshot", "", "")
		fs.StringVar(&o.format, "format", "human", "")
		fs.DurationVar(&o.snapshotMaxAge, "snapshot-max-age", 24*time.Hour, "")
		fs.StringSliceVar(&o.failOn, "fail-on", nil, "")
	}
}

// mode is the plan's mode: -destroy (or the destroy command), else
// -refresh-only, else a normal plan.
func (o *planOptions) mode() plan.Mode {
	switch {
	case o.destroy:
		return plan.ModeDestroy
	case o.refreshOnly:
		return plan.ModeRefreshOnly
	}
	return plan.ModeNormal
}

// serverNames turns -target and -replace values into names
// (plan.ServerNames), printing the error of each flag with an unknown one.
func (o *planOptions) serverNames(m *Meta, cfg *config.Config, st *state.File) (targets, replaces []string, ok bool) {
	ok = true
	names := func(addrs []string, flag string) []string {
		n, err := plan.ServerNames(cfg, st, addrs)
		if err != nil {
			m.view().Errorf("-%s=%v", flag, err)
			ok = false
		}
		return n
	}
	targets, replaces = names(o.targets, "target"), names(o.replaces, "replace")
	if !ok {
		return nil, nil, false
	}
	return targets, replaces, true
}

// planMade masks the plan's secrets in what m prints from now on, and puts
// the load-time warnings before the plan's own: after it for people, in it
// for machines.
func planMade(m *Meta, p *plan.Plan) {
	m.secrets.Add(p.Secrets.Values()...)
	if m.diagSink != nil {
		p.Diagnostics = append(*m.diagSink, p.Diagnostics...)
		*m.diagSink = nil
	}
}

// makePlan loads everything and plans. It prints diagnostics-free errors
// itself; ok is false when no plan could be made.
func makePlan(m *Meta, o *planOptions, mode plan.Mode, lockOp string) (*plan.Plan, *backend, *state.File, func(), bool) {
	if !setVars(m, lockOp, *o.vars) {
		return nil, nil, nil, nil, false
	}
	if o.snapshot != "" {
		p, st, ok := makeSnapshotPlan(m, o, mode)
		return p, nil, st, func() {}, ok
	}
	// plan reads the state and writes nothing: a shared lock.
	b, st, unlock, ok := openLocked(m, lockOp, o.lockTimeout, lockOp == "plan")
	if !ok {
		return nil, nil, nil, nil, false
	}
	cfg := b.cfg
	if o.addImport != nil {
		if cfg.Servers[o.addImport.To] == nil {
			// Before -target (which import sets) names a missing server.
			m.view().ImportRefused(o.addImport.To, state.ServerAddr(o.addImport.To), o.addImport.ID.String(), false)
			unlock()
			return nil, nil, nil, nil, false
		}
		cfg.Imports = append(cfg.Imports, o.addImport)
	}
	targets, replaces, ok := o.serverNames(m, cfg, st)
	if !ok {
		unlock()
		return nil, nil, nil, nil, false
	}
	in := b.refresh(context.Background(), o.inventory, o.refresh, cfg, st)
	m.view().Unrecorded(in.Observed)
	in.Mode, in.Targets, in.Replace = mode, targets, replaces
	in.Review = o.review
	if !o.review {
		in.ReadHostFile, in.Getenv = readHostSecret, os.LookupEnv
		in.ReadImport = describeImport
		// A review plan may stand in built-in flag lists for the installs.
		in.LockFile = config.LockFileName
	}
	p := plan.Make(in)
	planMade(m, p)
	return p, b, st, unlock, true
}

func runPlan(m *Meta, args []string) int {
	fs := newFlags("plan")
	var o planOptions
	o.register(fs, false)
	if !parseFlags(m, fs, args) {
		return ExitError
	}
	if fs.NArg() > 0 {
		return usageError(m, "plan", fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	}
	if err := plan.CheckPolicies(o.failOn); err != nil {
		return usageError(m, "plan", err.Error())
	}
	for _, bad := range []struct {
		when bool
		msg  string
	}{
		{o.format != "human" && o.format != "markdown", fmt.Sprintf("-format=%s: the formats are human and markdown (-json for JSON)", o.format)},
		{o.format == "markdown" && o.json, "-format=markdown and -json exclude each other"},
		{o.snapshot != "" && o.out != "", "-out with -snapshot: a review plan cannot be applied, and saving one needs the host's state directory; keep its output instead (-format=markdown, -json)"},
		{o.snapshot != "" && o.inventory != "", "-snapshot and -inventory exclude each other: the snapshot holds the host's GPUs"},
		{o.destroy && o.refreshOnly, "-destroy and -refresh-only exclude each other"},
	} {
		if bad.when {
			return usageError(m, "plan", bad.msg)
		}
	}
	// A review plan runs where the secrets are not (CI): a sensitive
	// variable without a value is unknown, and the planner says what
	// cannot be planned without it.
	m.secretsUnknown = o.review
	mode := o.mode()
	vt := views.TypeOf(o.json)
	if o.format == "markdown" {
		vt = views.ViewMarkdown
	}
	view := views.NewPlan(vt, m.view())
	var loadDiags hcl.Diagnostics
	m.diagSink = &loadDiags
	p, b, _, unlock, ok := makePlan(m, &o, mode, "plan")
	m.diagSink = nil
	if !ok {
		// The configuration did not load (or the state is locked): its
		// diagnostics are still the answer, as JSON under -json.
		view.LoadFailed(m.diagFiles, loadDiags)
		return ExitError
	}
	defer unlock()
	view.Plan(p)
	clusterChanges := false
	// Servers on Kubernetes clusters are planned against their cluster
	// (kube.go); the JSON and markdown views cover the host's servers.
	// A plan from a host snapshot (-snapshot) has no backend: it covers
	// the host only.
	if vt == views.ViewHuman && mode != plan.ModeRefreshOnly && b != nil {
		runs, ok := planClusters(m, b.full, mode == plan.ModeDestroy)
		if !ok {
			view.ClusterErrors()
			return ExitError
		}
		clusterChanges = live.Changes(runs)
	}
	if p.HasErrors() {
		view.Errors(m.InAutomation)
		return ExitError
	}
	if o.out != "" {
		if err := plan.WriteFile(o.out, p, b.states); err != nil {
			m.view().Errorf("saving the plan: %v", err)
			return ExitError
		}
		view.Saved(o.out, !m.InAutomation && !p.Review)
	} else if p.HasChanges() && !m.InAutomation && !p.Review {
		view.NotSaved()
	}
	if code, failed := failOnPolicy(m, o.failOn, p); failed {
		return code
	}
	if o.detailed && (p.HasChanges() || clusterChanges || len(p.Drift) > 0) {
		// Drift is a change: a scheduled drift check reads this code.
		return ExitChanges
	}
	return ExitOK
}
