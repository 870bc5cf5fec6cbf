package enginelock

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/fsx"
)

// Change is what Update did, or refused, for one engine.
type Change struct {
	Name string
	// Old is the locked entry (nil: the engine was not locked), Now the
	// install as probed.
	Old, Now *Entry
	// Refused: the install changed and upgrade was not asked; the lock
	// keeps Old.
	Refused bool
}

// Update records probed installs in l, in the configuration's engine
// order: an engine not locked yet is added; a changed one is replaced when
// upgrade, else refused; an unchanged one is left as it is (no Change).
// Engines whose probe failed (missing from probed) keep their entry;
// engines no longer configured are dropped.
func (l *Lock) Update(cfg *config.Config, probed map[string]*engine.Installed, upgrade bool) []Change {
	var out []Change
	for _, name := range cfg.EngineNames() {
		inst := probed[name]
		if inst == nil {
			continue
		}
		now := Of(cfg.Engines[name], inst)
		old := l.Get(name)
		switch {
		case old == nil:
			l.Set(now)
			out = append(out, Change{Name: name, Now: now})
		case Diff(old, now) == "":
		case upgrade:
			l.Set(now)
			out = append(out, Change{Name: name, Old: old, Now: now})
		default:
			out = append(out, Change{Name: name, Old: old, Now: now, Refused: true})
		}
	}
	l.Keep(cfg.EngineNames())
	return out
}

// UpdateFile is Update on the lock file at path (a missing one starts
// empty), written back. diags: the file could not be read, and nothing was
// written; err: writing it failed.
func UpdateFile(path string, cfg *config.Config, probed map[string]*engine.Installed, upgrade bool) ([]Change, hcl.Diagnostics, error) {
	lock, diags := Read(path)
	if diags.HasErrors() {
		return nil, diags, nil
	}
	if lock == nil {
		lock = &Lock{}
	}
	changes := lock.Update(cfg, probed, upgrade)
	return changes, nil, fsx.WriteFile(path, lock.Bytes(), 0o644)
}
