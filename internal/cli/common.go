package cli

import (
	"path/filepath"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/config"
)

// loadConfig loads the configuration in the current directory (after
// -chdir) and prints its diagnostics. ok is false when there were errors.
func loadConfig(m *Meta) (cfg *config.Config, ok bool) {
	cfg, diags := config.LoadDir(".")
	if len(diags) > 0 {
		printDiags(m, cfg, diags)
	}
	return cfg, cfg != nil && !diags.HasErrors()
}

// printDiags writes diagnostics with file, line and a source snippet.
func printDiags(m *Meta, cfg *config.Config, diags hcl.Diagnostics) {
	files := map[string]*hcl.File{}
	if cfg != nil {
		files = cfg.Files
	}
	w := hcl.NewDiagnosticTextWriter(m.Err, files, 100, m.Color)
	for _, d := range diags {
		_ = w.WriteDiagnostic(d)
	}
}

// stateDir returns the state directory of cfg (absolute).
func stateDir(cfg *config.Config) string {
	dir := ".roofline"
	if cfg != nil && cfg.Roofline != nil && cfg.Roofline.StateDir != "" {
		dir = cfg.Roofline.StateDir
	}
	if !filepath.IsAbs(dir) && cfg != nil {
		dir = filepath.Join(cfg.Dir, dir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	return abs
}

