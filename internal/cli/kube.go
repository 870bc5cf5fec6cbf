package cli

import (
	"context"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/gate"
	"github.com/roofline/roofline/internal/kube/live"
	"github.com/roofline/roofline/internal/model"
)

// clusterRun is one cluster's plan and the client that made it.
type clusterRun = live.Run

// planClusters plans the servers of every cluster block against its
// cluster (docs/kubernetes.md) and prints each plan. ok is false when a
// plan has errors.
func planClusters(m *Meta, cfg *config.Config, destroy bool) ([]*clusterRun, bool) {
	return live.PlanClusters(context.Background(), cfg, destroy, &live.Preflight{Inspect: model.Inspect}, func(p *live.Plan, err error) {
		if err != nil {
			m.view().ClusterError(err)
			return
		}
		m.view().ClusterPlan(cfg.Files, p.Diags, live.Human(p))
	})
}

// applyClusters carries out the cluster plans, with the health gate.
func applyClusters(m *Meta, runs []*clusterRun, destroy bool) error {
	health := func(ctx context.Context, base, model string) error {
		_, err := gate.Health(ctx, gate.NewClient(2), gate.Target{BaseURL: base, Model: model})
		return err
	}
	return live.ApplyClusters(context.Background(), runs, destroy, health, m.view().ClusterProgress)
}
