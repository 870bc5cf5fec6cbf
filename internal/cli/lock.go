package cli

import (
	"path/filepath"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/enginelock"
	"github.com/roofline/roofline/internal/plan"
)

// lockDiags checks the probed engines against roofline.lock.hcl in the
// configuration directory (enginelock.Check).
func lockDiags(cfg *config.Config, engines map[string]plan.EngineResult) hcl.Diagnostics {
	return enginelock.Check(config.LockFileName, cfg, plan.InstalledOf(engines))
}

func stateProbeDir(b *backend) string { return filepath.Join(b.stateDir, "probes") }
