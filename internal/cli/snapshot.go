package cli

import (
	"context"
	"os"
	"time"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/snapshot"
	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/views"
)

func init() {
	register(&Command{
		Name:     "snapshot",
		Synopsis: "Write the host snapshot that review plans read",
		Usage:    views.UsageSnapshot,
		Run:      runSnapshot,
	})
}

func runSnapshot(m *Meta, args []string) int {
	fs := newFlags("snapshot")
	out := fs.String("out", "", "")
	inventory := fs.String("inventory", "", "")
	reprobe := fs.Bool("refresh-probes", false, "")
	hostName := fs.String("host", "", "")
	if !parseConfigFlags(m, fs, args) {
		return ExitError
	}
	if *out == "" {
		return usageError(m, "snapshot", "-out=FILE is required")
	}
	b, st, ok := openStateFile(m)
	if !ok || !b.needSelf(m) {
		return ExitError
	}
	snap := b.takeSnapshot(context.Background(), b.cfg, st, *inventory, *reprobe)
	if *hostName != "" {
		snap.Host = *hostName
	}
	if *out == "-" {
		if err := snap.Write(m.Out); err != nil {
			m.view().Errorf("%v", err)
			return ExitError
		}
		return ExitOK
	}
	if err := snap.Save(*out); err != nil {
		m.view().Errorf("%v", err)
		return ExitError
	}
	m.view().SnapshotWritten(snap, *out)
	return ExitOK
}

// takeSnapshot refreshes as plan does and records what it found (roofline
// snapshot, and the agent's /snapshot).
func (b *backend) takeSnapshot(ctx context.Context, cfg *config.Config, st *state.File, inventory string, reprobe bool) *snapshot.File {
	in := b.refresh(ctx, inventory, reprobe, cfg, st)
	host, _ := os.Hostname()
	f := snapshot.Take(in, &plan.LivePorts{}, host, time.Now())
	f.Self = b.self
	return f
}

// makeSnapshotPlan plans against a host snapshot: the configuration of
// this checkout, read as if it were the host's copy, and every fact from
// the snapshot. Nothing here is probed, locked or written.
func makeSnapshotPlan(m *Meta, o *planOptions, mode plan.Mode) (*plan.Plan, *state.File, bool) {
	snap, err := snapshot.Read(o.snapshot)
	if err != nil {
		m.view().Errorf("-snapshot: %v", err)
		return nil, nil, false
	}
	m.asDir = snap.ConfigDir
	cfg, ok := loadConfig(m)
	if !ok {
		return nil, nil, false
	}
	st := snap.State
	targets, replaces, ok := o.serverNames(m, cfg, st)
	if !ok {
		return nil, nil, false
	}
	p := snap.ReviewPlan(cfg, newDrivers(), mode, targets, replaces, time.Now(), o.snapshotMaxAge)
	planMade(m, p)
	return p, st, true
}

// failOnPolicy applies -fail-on: downtime (a replacement that stops the
// old server first) and destroy (a server removed). It prints what broke
// the policy and returns ExitPolicy.
func failOnPolicy(m *Meta, policies []string, p *plan.Plan) (int, bool) {
	broken := p.PolicyBreaks(policies)
	if len(broken) == 0 {
		return 0, false
	}
	m.view().PolicyBroken(broken)
	return ExitPolicy, true
}
