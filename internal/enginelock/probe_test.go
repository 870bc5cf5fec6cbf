package enginelock

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine"
)

func TestProbeAll(t *testing.T) {
	v16, _ := engine.Reference("vllm", "0.16.0")
	v085, _ := engine.Reference("vllm", "0.8.5")
	eng := func(name, version string) *config.Engine {
		return &config.Engine{Name: name, Kind: "vllm", Version: version}
	}
	installs := map[string]*engine.Installed{"good": v16, "old": v085, "unpinned": v085}
	probe := func(_ context.Context, e *config.Engine) (*engine.Installed, error) {
		if inst := installs[e.Name]; inst != nil {
			return inst, nil
		}
		return nil, errors.New("no such executable")
	}
	for _, c := range []struct {
		name    string
		engines []*config.Engine
		want    string // name:result, in the configuration's order
		failed  bool
	}{
		{name: "none", want: ""},
		{name: "all good", engines: []*config.Engine{eng("good", "0.16.0"), eng("unpinned", "")}, want: "good:ok unpinned:ok"},
		{name: "a failed probe", engines: []*config.Engine{eng("good", "0.16.0"), eng("missing", "0.16.0")},
			want: "good:ok missing:error", failed: true},
		{name: "another version", engines: []*config.Engine{eng("old", "0.16.0"), eng("good", "0.16.0")},
			want: "good:ok old:pins-0.16.0", failed: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := &config.Config{Engines: map[string]*config.Engine{}}
			for _, e := range c.engines {
				cfg.Engines[e.Name] = e
			}
			probes := ProbeAll(context.Background(), cfg, probe)
			var got []string
			for _, p := range probes {
				switch {
				case p.Err != nil:
					got = append(got, p.Name+":error")
				case p.Pinned != "":
					got = append(got, p.Name+":pins-"+p.Pinned)
				default:
					got = append(got, p.Name+":ok")
				}
			}
			if g := strings.Join(got, " "); g != c.want {
				t.Errorf("ProbeAll = %q, want %q", g, c.want)
			}
			usable, failed := Usable(probes)
			if failed != c.failed {
				t.Errorf("Usable: failed = %v, want %v", failed, c.failed)
			}
			for _, p := range probes {
				if (usable[p.Name] != nil) != p.OK() {
					t.Errorf("Usable has %s: %v, but its probe OK = %v", p.Name, usable[p.Name] != nil, p.OK())
				}
			}
		})
	}
}
