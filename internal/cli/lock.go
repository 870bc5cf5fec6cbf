package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/enginelock"
	"github.com/roofline/roofline/internal/plan"
)

// lockDiags checks the probed engines against roofline.lock.hcl in the
// configuration directory: an install that changed behind the lock is an
// error. Without a lock file nothing is checked (roofline init writes one).
func lockDiags(cfg *config.Config, engines map[string]plan.EngineResult) hcl.Diagnostics {
	lock, diags := enginelock.Read(config.LockFileName)
	if lock == nil || diags.HasErrors() {
		return diags
	}
	for _, name := range cfg.EngineNames() {
		e := cfg.Engines[name]
		r := engines[name]
		if r.Installed == nil || r.Installed.Flags == nil {
			continue
		}
		rng := e.DeclRange
		locked := lock.Get(name)
		if locked == nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Subject: &rng, Summary: "Engine not in the lock file",
				Detail: fmt.Sprintf("engine.%s is not in %s. Run roofline init to add it, and commit the lock file.", name, config.LockFileName)})
			continue
		}
		if d := enginelock.Diff(locked, enginelock.Of(e, r.Installed)); d != "" {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Subject: &rng, Summary: "Engine changed behind the lock file",
				Detail: fmt.Sprintf("engine.%s changed since %s was written: %s. Run roofline init -upgrade and review the flag diff it prints (and commit the lock file).", name, config.LockFileName, d)})
		}
	}
	return diags
}

// flagDiffText lists removed and added flags for init -upgrade.
func flagDiffText(before, after []string) string {
	removed, added := enginelock.FlagChanges(before, after)
	var b strings.Builder
	for _, f := range removed {
		fmt.Fprintf(&b, "      - %s\n", f)
	}
	for _, f := range added {
		fmt.Fprintf(&b, "      + %s\n", f)
	}
	return b.String()
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
