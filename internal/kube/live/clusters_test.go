package live

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/config"
)

// TestPlanClustersUnreachable: a cluster whose kubeconfig is missing is
// reported (an environment error that says what to set), the others are
// still planned, and the run is not ok. No API server is needed: the
// client is never made.
func TestPlanClustersUnreachable(t *testing.T) {
	if runs, ok := PlanClusters(context.Background(), nil, false, nil, func(*Plan, error) { t.Error("reported without a configuration") }); runs != nil || !ok {
		t.Errorf("no configuration: %v, %v", runs, ok)
	}
	missing := filepath.Join(t.TempDir(), "missing.kubeconfig")
	cfg := &config.Config{Clusters: map[string]*config.Cluster{
		"b": {Name: "b", Kubeconfig: missing},
		"a": {Name: "a", Kubeconfig: missing},
	}}
	var reported []string
	runs, ok := PlanClusters(context.Background(), cfg, false, nil, func(p *Plan, err error) {
		if p != nil || err == nil {
			t.Fatalf("report(%v, %v): want an error and no plan", p, err)
		}
		reported = append(reported, err.Error())
	})
	if ok || len(runs) != 0 || len(reported) != 2 {
		t.Fatalf("PlanClusters = %v, %v; reported %q", runs, ok, reported)
	}
	for i, name := range []string{"a", "b"} {
		if !strings.Contains(reported[i], `cluster "`+name+`"`) || !strings.Contains(reported[i], "missing.kubeconfig") {
			t.Errorf("report %d = %q, want cluster %q and the file", i, reported[i], name)
		}
	}
}

func TestChanges(t *testing.T) {
	same := &Run{Plan: &Plan{Servers: []*ServerPlan{{Action: NoOp}}}}
	changed := &Run{Plan: &Plan{Servers: []*ServerPlan{{Action: NoOp}, {Action: Update}}}}
	for _, tc := range []struct {
		runs []*Run
		want bool
	}{
		{nil, false},
		{[]*Run{same}, false},
		{[]*Run{same, changed}, true},
	} {
		if got := Changes(tc.runs); got != tc.want {
			t.Errorf("Changes(%d runs) = %v, want %v", len(tc.runs), got, tc.want)
		}
	}
}
