package live

import (
	"context"
	"fmt"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/kube"
)

// Run is one cluster's plan and the client that made it (plan and apply
// of a configuration with cluster blocks).
type Run struct {
	Client *Client
	Plan   *Plan
	Specs  []kube.Spec
}

// PlanClusters plans the servers of every cluster block of cfg against
// its cluster, in name order, and hands each plan, or the error that kept
// it from being made (the kubeconfig, the client), to report. A
// configuration with no cluster block plans nothing. ok is false when a
// cluster could not be planned or a plan has errors.
func PlanClusters(ctx context.Context, cfg *config.Config, destroy bool, pf *Preflight, report func(*Plan, error)) (runs []*Run, ok bool) {
	if cfg == nil {
		return nil, true
	}
	ok = true
	for _, name := range cfg.ClusterNames() {
		cl := cfg.Clusters[name]
		specs := kube.Specs(cfg, name)
		rc, err := RESTConfig(cl)
		var c *Client
		if err == nil {
			c, err = NewClient(rc, cl.Name, cl.Namespace)
		}
		if err != nil {
			report(nil, err)
			ok = false
			continue
		}
		p := c.Plan(ctx, specs, destroy, pf)
		report(p, nil)
		ok = ok && !p.Diags.HasErrors()
		runs = append(runs, &Run{Client: c, Plan: p, Specs: specs})
	}
	return runs, ok
}

// Changes reports whether one of the cluster plans changes something.
func Changes(runs []*Run) bool {
	for _, r := range runs {
		if r.Plan.HasChanges() {
			return true
		}
	}
	return false
}

// ApplyClusters carries out the cluster plans that change something:
// server-side apply, the rollout, the health gate through the
// generation's Service (health, against the server's served model name),
// the switch. It stops at the first cluster that fails.
func ApplyClusters(ctx context.Context, runs []*Run, destroy bool, health func(ctx context.Context, baseURL, model string) error, progress func(format string, args ...any)) error {
	for _, r := range runs {
		if !r.Plan.HasChanges() {
			continue
		}
		a := &Applier{
			Client:  r.Client,
			Resolve: ClusterIP{},
			Gate: func(ctx context.Context, addr, base string) error {
				return health(ctx, base, kube.ServedName(r.Specs, addr))
			},
			Progress: progress,
		}
		var err error
		if destroy {
			err = a.Destroy(ctx, r.Plan)
		} else {
			err = a.Apply(ctx, r.Plan)
		}
		if err != nil {
			return fmt.Errorf("cluster %q: %w", r.Plan.Cluster, err)
		}
	}
	return nil
}
