package enginelock

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine"
)

func TestUpdate(t *testing.T) {
	v16, _ := engine.Reference("vllm", "0.16.0")
	v085, _ := engine.Reference("vllm", "0.8.5")
	eng := func(name string) *config.Engine { return &config.Engine{Name: name, Kind: "vllm", Version: "0.16.0"} }
	cfg := &config.Config{Engines: map[string]*config.Engine{"same": eng("same"), "new": eng("new"), "changed": eng("changed"), "failed": eng("failed")}}
	locked := func() *Lock {
		l := &Lock{}
		l.Set(Of(eng("same"), v16))
		l.Set(Of(eng("changed"), v16))
		l.Set(Of(eng("failed"), v16))
		l.Set(Of(eng("gone"), v16))
		return l
	}
	probed := map[string]*engine.Installed{"same": v16, "new": v16, "changed": v085}
	for _, tt := range []struct {
		upgrade      bool
		changes      string // name:what, in order
		changedAfter string // the version the lock records for "changed"
	}{
		{false, "changed:refused new:locked", "0.16.0"},
		{true, "changed:upgraded new:locked", "0.8.5"},
	} {
		l := locked()
		got := ""
		for _, c := range l.Update(cfg, probed, tt.upgrade) {
			what := "upgraded"
			switch {
			case c.Refused:
				what = "refused"
			case c.Old == nil:
				what = "locked"
			}
			if got != "" {
				got += " "
			}
			got += c.Name + ":" + what
		}
		if got != tt.changes {
			t.Errorf("upgrade=%v: changes %q, want %q", tt.upgrade, got, tt.changes)
		}
		if v := l.Get("changed").Version; v != tt.changedAfter {
			t.Errorf("upgrade=%v: the lock records %s for the changed engine, want %s", tt.upgrade, v, tt.changedAfter)
		}
		if l.Get("failed") == nil || l.Get("gone") != nil || l.Get("new") == nil {
			t.Errorf("upgrade=%v: a failed probe keeps its entry, a removed engine is dropped, a new one added: %+v", tt.upgrade, l.Engines)
		}
	}
}

// TestUpdateFile: the lock file is created, updated in place, and a file
// that does not parse is left as it is.
func TestUpdateFile(t *testing.T) {
	v16, _ := engine.Reference("vllm", "0.16.0")
	v085, _ := engine.Reference("vllm", "0.8.5")
	cfg := &config.Config{Engines: map[string]*config.Engine{"e": {Name: "e", Kind: "vllm", Version: "0.16.0"}}}
	path := filepath.Join(t.TempDir(), config.LockFileName)
	if changes, diags, err := UpdateFile(path, cfg, map[string]*engine.Installed{"e": v16}, false); err != nil || diags.HasErrors() || len(changes) != 1 || changes[0].Old != nil {
		t.Fatalf("a new lock file: %v %v %+v", err, diags, changes)
	}
	changes, _, err := UpdateFile(path, cfg, map[string]*engine.Installed{"e": v085}, false)
	if l, _ := Read(path); err != nil || len(changes) != 1 || !changes[0].Refused || l.Get("e").Version != "0.16.0" {
		t.Fatalf("a refused change: %v %+v", err, changes)
	}
	if _, _, err := UpdateFile(path, cfg, map[string]*engine.Installed{"e": v085}, true); err != nil {
		t.Fatal(err)
	}
	if l, _ := Read(path); l.Get("e").Version != "0.8.5" {
		t.Fatalf("upgrade: the file records %s", l.Get("e").Version)
	}
	if err := os.WriteFile(path, []byte("engine {"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, diags, _ := UpdateFile(path, cfg, map[string]*engine.Installed{"e": v16}, false); !diags.HasErrors() {
		t.Fatal("a lock file that does not parse must be reported")
	}
	if b, _ := os.ReadFile(path); string(b) != "engine {" {
		t.Fatalf("a lock file that does not parse was rewritten: %q", b)
	}
}
