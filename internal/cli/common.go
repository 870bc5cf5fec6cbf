package cli

import (
	"fmt"

	"github.com/spf13/pflag"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/config"
)

// loadConfig loads the configuration in the current directory (after
// -chdir) and prints its diagnostics. ok is false when there were errors.
func loadConfig(m *Meta) (cfg *config.Config, ok bool) {
	cfg, diags := config.LoadDirVars(".", m.Vars)
	if m.diagSink != nil {
		*m.diagSink = append(*m.diagSink, diags...)
		if cfg != nil {
			m.diagFiles = cfg.Files
		}
	} else if len(diags) > 0 {
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

var colorCodes = []struct{ tag, code string }{
	{"[reset]", "\x1b[0m"}, {"[bold]", "\x1b[1m"}, {"[dim]", "\x1b[2m"},
	{"[red]", "\x1b[31m"}, {"[green]", "\x1b[32m"}, {"[yellow]", "\x1b[33m"},
	{"[blue]", "\x1b[34m"}, {"[magenta]", "\x1b[35m"}, {"[cyan]", "\x1b[36m"},
}

// colorize turns [green]...[reset] markup into ANSI codes when colour is on,
// and strips it otherwise (Terraform's colorstring convention).
func (m *Meta) colorize(s string) string {
	for _, c := range colorCodes {
		repl := ""
		if m.Color {
			repl = c.code
		}
		s = strings.ReplaceAll(s, c.tag, repl)
	}
	return s
}

// varFlags registers -var NAME=VALUE (repeatable) on a command.
func varFlags(fs *pflag.FlagSet) *[]string {
	return fs.StringArray("var", nil, "")
}

// setVars checks the -var values and keeps them for loadConfig.
func setVars(m *Meta, cmd string, vals []string) bool {
	for _, kv := range vals {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(name) == "" {
			usageError(m, cmd, fmt.Sprintf("-var %q: write -var NAME=VALUE", kv))
			return false
		}
		if m.Vars == nil {
			m.Vars = map[string]string{}
		}
		m.Vars[strings.TrimSpace(name)] = value
	}
	return true
}
