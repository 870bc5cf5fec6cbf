package enginelock

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine"
)

// Check compares the probed installs (by engine block name; nil for one
// that was not probed) with the lock file at path: an install that changed
// behind the lock is an error. Without a lock file nothing is checked
// (roofline init writes one).
func Check(path string, cfg *config.Config, installed map[string]*engine.Installed) hcl.Diagnostics {
	lock, diags := Read(path)
	if lock == nil || diags.HasErrors() {
		return diags
	}
	for _, name := range cfg.EngineNames() {
		e := cfg.Engines[name]
		inst := installed[name]
		if inst == nil || inst.Flags == nil {
			continue
		}
		rng := e.DeclRange
		locked := lock.Get(name)
		if locked == nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Subject: &rng, Summary: "Engine not in the lock file",
				Detail: fmt.Sprintf("engine.%s is not in %s. Run roofline init to add it, and commit the lock file.", name, path)})
			continue
		}
		if d := Diff(locked, Of(e, inst)); d != "" {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Subject: &rng, Summary: "Engine changed behind the lock file",
				Detail: fmt.Sprintf("engine.%s changed since %s was written: %s. Run roofline init -upgrade and review the flag diff it prints (and commit the lock file).", name, path, d)})
		}
	}
	return diags
}

// FlagDiffText lists removed and added flags for init -upgrade, one
// indented line each.
func FlagDiffText(before, after []string) string {
	removed, added := FlagChanges(before, after)
	var b strings.Builder
	for _, f := range removed {
		fmt.Fprintf(&b, "      - %s\n", f)
	}
	for _, f := range added {
		fmt.Fprintf(&b, "      + %s\n", f)
	}
	return b.String()
}
