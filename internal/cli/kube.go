package cli

import (
	"context"
	"fmt"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/gate"
	"github.com/roofline/roofline/internal/kube"
	"github.com/roofline/roofline/internal/kube/live"
	"github.com/roofline/roofline/internal/model"
)

// clusterRun is one cluster's plan and the client that made it.
type clusterRun struct {
	client *live.Client
	plan   *live.Plan
	specs  []kube.Spec
}

// planClusters plans the servers of every cluster block against its
// cluster (docs/kubernetes.md) and prints each plan. A configuration with
// no cluster block plans nothing. ok is false when a plan has errors.
func planClusters(m *Meta, cfg *config.Config, destroy bool) ([]*clusterRun, bool) {
	if cfg == nil || len(cfg.Clusters) == 0 {
		return nil, true
	}
	ctx := context.Background()
	ok := true
	var runs []*clusterRun
	for _, name := range cfg.ClusterNames() {
		cl := cfg.Clusters[name]
		specs := kube.Specs(cfg, name)
		rc, err := live.RESTConfig(cl)
		var c *live.Client
		if err == nil {
			c, err = live.NewClient(rc, cl.Name, cl.Namespace)
		}
		if err != nil {
			fmt.Fprintf(m.Err, "\nError: %v\n", err)
			ok = false
			continue
		}
		p := c.Plan(ctx, specs, destroy, &live.Preflight{Inspect: model.Inspect})
		m.view().ClusterPlan(cfg.Files, p.Diags, live.Human(p))
		ok = ok && !p.Diags.HasErrors()
		runs = append(runs, &clusterRun{client: c, plan: p, specs: specs})
	}
	return runs, ok
}

// applyClusters carries out the cluster plans: server-side apply, the
// rollout, the health gate through the generation's Service, the switch.
func applyClusters(m *Meta, runs []*clusterRun, destroy bool) error {
	ctx := context.Background()
	for _, r := range runs {
		if !r.plan.HasChanges() {
			continue
		}
		a := &live.Applier{
			Client:  r.client,
			Resolve: live.ClusterIP{},
			Gate: func(ctx context.Context, addr, base string) error {
				_, err := gate.Health(ctx, gate.NewClient(2), gate.Target{BaseURL: base, Model: kube.ServedName(r.specs, addr)})
				return err
			},
			Progress: func(format string, args ...any) { fmt.Fprintf(m.Out, format+"\n", args...) },
		}
		var err error
		if destroy {
			err = a.Destroy(ctx, r.plan)
		} else {
			err = a.Apply(ctx, r.plan)
		}
		if err != nil {
			return fmt.Errorf("cluster %q: %w", r.plan.Cluster, err)
		}
	}
	return nil
}
