package cli

import (
	"context"

	"os"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/enginelock"
	"github.com/roofline/roofline/internal/views"
)

func init() {
	register(&Command{
		Name:     "init",
		Synopsis: "Prepare a configuration directory: state dir, engine probes",
		Usage:    views.UsageInit,
		Run:      runInit,
	})
}

func runInit(m *Meta, args []string) int {
	fs := newFlags("init")
	inventory := fs.String("inventory", "", "")
	upgrade := fs.Bool("upgrade", false, "")
	if !parseConfigFlags(m, fs, args) {
		return ExitError
	}
	b, ok := openBackend(m)
	if !ok || !b.needSelf(m) {
		return ExitError
	}
	cfg := b.cfg
	p := b.prober(true)
	if err := os.MkdirAll(p.cacheDir, 0o700); err != nil {
		m.view().Errorf("%v", err)
		return ExitError
	}
	view := views.NewInit(m.view())
	view.Probing(b.stateDir)
	probes := enginelock.ProbeAll(context.Background(), cfg, p.Probe)
	view.Engines(views.InitEnginesOf(probes))
	probed, failed := enginelock.Usable(probes)
	if !writeLock(m, cfg, probed, *upgrade) {
		failed = true
	}
	snap, err := b.inventory(*inventory).Snapshot(context.Background())
	if err != nil {
		view.GPUs("", 0, err)
	} else {
		view.GPUs(snap.Source, len(snap.GPUs), nil)
	}
	view.Done(failed)
	if failed {
		return ExitError
	}
	return ExitOK
}

// writeLock records the probed engines in roofline.lock.hcl: new engines
// are added, removed ones dropped; a changed one fails unless upgrade,
// which records it and prints its flag diff.
func writeLock(m *Meta, cfg *config.Config, probed map[string]*engine.Installed, upgrade bool) bool {
	changes, diags, err := enginelock.UpdateFile(config.LockFileName, cfg, probed, upgrade)
	if diags.HasErrors() {
		printDiags(m, cfg, diags)
		return false
	}
	view := views.NewInit(m.view())
	ok := true
	for _, c := range changes {
		if c.Refused {
			view.LockChanged(c.Name, config.LockFileName, enginelock.Diff(c.Old, c.Now))
			ok = false
		}
	}
	if err != nil {
		m.view().Errorf("writing %s: %v", config.LockFileName, err)
		return false
	}
	view.LockWritten(config.LockFileName, changes)
	return ok
}
