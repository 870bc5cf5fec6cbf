package cli

import (
	"context"
	"path/filepath"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/enginelock"
	"github.com/roofline/roofline/internal/plan"
)

// lockDiags checks the probed engines against roofline.lock.hcl in the
// configuration directory (enginelock.Check).
func lockDiags(cfg *config.Config, engines map[string]plan.EngineResult) hcl.Diagnostics {
	installed := map[string]*engine.Installed{}
	for name, r := range engines {
		installed[name] = r.Installed
	}
	return enginelock.Check(config.LockFileName, cfg, installed)
}

// currentInstalls probes (through the cache) every engine and fingerprints
// every model folder, as the plan records them: a saved plan is stale once
// they differ.
func currentInstalls(b *backend) (installs, models map[string]string) {
	in := map[string]plan.EngineResult{}
	p := prober{self: b.self, cacheDir: stateProbeDir(b)}
	for name, e := range b.cfg.Engines {
		inst, err := p.Probe(context.Background(), e)
		if err == nil {
			in[name] = plan.EngineResult{Installed: inst}
		}
	}
	models = map[string]string{}
	for name, m := range b.cfg.Models {
		if files, err := plan.ModelManifest(m.Path); err == nil {
			models[name] = plan.ManifestFingerprint(files)
		}
	}
	return plan.InstallIDs(b.cfg, in), models
}

func stateProbeDir(b *backend) string { return filepath.Join(b.stateDir, "probes") }
