package enginelock

import (
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
