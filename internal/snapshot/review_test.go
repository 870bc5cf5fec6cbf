package snapshot

import (
	"testing"
	"time"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/state"
)

func TestReviewPlan(t *testing.T) {
	now := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		age    time.Duration
		maxAge time.Duration
		warns  bool
	}{
		{"fresh", time.Minute, time.Hour, false},
		{"old", 3 * time.Hour, time.Hour, true},
		{"no limit", 30 * 24 * time.Hour, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &File{Host: "gpu-7", CreatedAt: now.Add(-tc.age), State: state.NewFile(), Self: "/usr/bin/roofline"}
			cfg := &config.Config{Engines: map[string]*config.Engine{}, Models: map[string]*config.Model{}, Servers: map[string]*config.Server{}}
			p := f.ReviewPlan(cfg, testDrivers, plan.ModeNormal, nil, nil, now, tc.maxAge)
			if !p.Review || p.SnapshotHost != "gpu-7" || !p.SnapshotCreatedAt.Equal(f.CreatedAt) {
				t.Errorf("review %v, host %q, taken %s: want a review plan of gpu-7's snapshot", p.Review, p.SnapshotHost, p.SnapshotCreatedAt)
			}
			warned := false
			for _, d := range p.Diagnostics {
				warned = warned || d.Summary == "Old host snapshot"
			}
			if warned != tc.warns {
				t.Errorf("old-snapshot warning %v, want %v: %v", warned, tc.warns, p.Diagnostics)
			}
		})
	}
}
