// Package enginelock reads and writes roofline.lock.hcl, the engine lock
// file committed beside the configuration (Terraform's
// .terraform.lock.hcl is the model): per engine block, the install's
// identity and a hash of its flag list, with the flag names so that an
// upgrade shows as a reviewable diff. roofline init writes it, init
// -upgrade updates it; plan on the host fails when an install changed
// behind it.
package enginelock

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine"
)

// Entry is one engine's lock.
type Entry struct {
	Name      string   `hcl:"name,label"`
	Kind      string   `hcl:"kind"`
	Version   string   `hcl:"version"`
	Identity  string   `hcl:"identity"`
	FlagsHash string   `hcl:"flags_hash"`
	Flags     []string `hcl:"flags"`
}

// Lock is the whole file.
type Lock struct {
	Engines []*Entry `hcl:"engine,block"`
}

// Of builds the entry of an engine block from its probe.
func Of(e *config.Engine, inst *engine.Installed) *Entry {
	return &Entry{Name: e.Name, Kind: e.Kind, Version: inst.Version, Identity: engine.LockIdentity(e, inst),
		FlagsHash: inst.Flags.Hash(), Flags: inst.Flags.Names()}
}

// Get returns the entry of an engine, or nil.
func (l *Lock) Get(name string) *Entry {
	if l == nil {
		return nil
	}
	for _, e := range l.Engines {
		if e.Name == name {
			return e
		}
	}
	return nil
}

// Set adds or replaces an entry, keeping the entries sorted by name.
func (l *Lock) Set(e *Entry) {
	for i, old := range l.Engines {
		if old.Name == e.Name {
			l.Engines[i] = e
			return
		}
	}
	l.Engines = append(l.Engines, e)
	sort.Slice(l.Engines, func(i, j int) bool { return l.Engines[i].Name < l.Engines[j].Name })
}

// Keep drops the entries of engines not in names.
func (l *Lock) Keep(names []string) {
	l.Engines = slices.DeleteFunc(l.Engines, func(e *Entry) bool { return !slices.Contains(names, e.Name) })
}

// Read parses the lock file; a missing file is (nil, nil).
func Read(path string) (*Lock, hcl.Diagnostics) {
	src, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot read the engine lock file", Detail: err.Error()}}
	}
	f, diags := hclparse.NewParser().ParseHCL(src, path)
	if diags.HasErrors() {
		return nil, diags
	}
	var l Lock
	if diags := gohcl.DecodeBody(f.Body, nil, &l); diags.HasErrors() {
		return nil, diags
	}
	return &l, nil
}

// Bytes renders the lock file; the flags one per line, so that an upgrade
// reads as a diff in review.
func (l *Lock) Bytes() []byte {
	var b strings.Builder
	b.WriteString("# roofline.lock.hcl: the engine installs this configuration was planned against.\n")
	b.WriteString("# Written by \"roofline init\", updated by \"roofline init -upgrade\". Commit it.\n")
	for _, e := range l.Engines {
		fmt.Fprintf(&b, "\nengine %q {\n", e.Name)
		fmt.Fprintf(&b, "  kind       = %q\n  version    = %q\n  identity   = %q\n  flags_hash = %q\n", e.Kind, e.Version, e.Identity, e.FlagsHash)
		b.WriteString("  flags = [\n")
		for _, f := range e.Flags {
			fmt.Fprintf(&b, "    %q,\n", f)
		}
		b.WriteString("  ]\n}\n")
	}
	return []byte(b.String())
}

// Diff says how the install changed from the lock: "" when it matches.
func Diff(locked, now *Entry) string {
	if locked.Identity == now.Identity && locked.FlagsHash == now.FlagsHash && locked.Version == now.Version {
		return ""
	}
	var parts []string
	if locked.Version != now.Version {
		parts = append(parts, fmt.Sprintf("version %s → %s", locked.Version, now.Version))
	}
	removed, added := FlagChanges(locked.Flags, now.Flags)
	switch {
	case len(removed) > 0 || len(added) > 0:
		parts = append(parts, fmt.Sprintf("%d flags removed, %d added", len(removed), len(added)))
	case locked.FlagsHash != now.FlagsHash:
		parts = append(parts, "the same flags, but their values, choices or defaults changed")
	}
	if locked.Identity != now.Identity {
		parts = append(parts, "the install is another one ("+short(locked.Identity)+" → "+short(now.Identity)+")")
	}
	return strings.Join(parts, "; ")
}

// FlagChanges lists the flags removed and added between two lists.
func FlagChanges(before, after []string) (removed, added []string) {
	for _, f := range before {
		if !slices.Contains(after, f) {
			removed = append(removed, f)
		}
	}
	for _, f := range after {
		if !slices.Contains(before, f) {
			added = append(added, f)
		}
	}
	return removed, added
}

func short(id string) string {
	if len(id) > 23 {
		return id[:23] + "…"
	}
	return id
}
