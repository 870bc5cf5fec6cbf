package rehearsal

import (
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/gpu"
)

func TestResolve(t *testing.T) {
	for _, tt := range []struct {
		e        *config.Engine
		want, id string
	}{
		{&config.Engine{Kind: "vllm", Version: "0.16.0", Rehearsal: true}, "/bin/roofline rehearsal vllm@0.16.0", "rehearsal:vllm@0.16.0"},
		{&config.Engine{Kind: "sglang", Version: "0.5.6.post2", Rehearsal: true}, "/bin/roofline rehearsal sglang@0.5.6.post2 -m sglang.launch_server", "rehearsal:sglang@0.5.6.post2"},
		{&config.Engine{Kind: "vllm", Command: []string{"/opt/v/bin/vllm"}}, "/opt/v/bin/vllm", ""},
	} {
		Resolve(tt.e, "/bin/roofline")
		Resolve(tt.e, "/other/roofline") // twice changes nothing
		if got := strings.Join(tt.e.Command, " "); got != tt.want || tt.e.PinnedIdentity != tt.id {
			t.Errorf("Resolve: command %q, identity %q; want %q, %q", got, tt.e.PinnedIdentity, tt.want, tt.id)
		}
	}
}

func TestUseInventory(t *testing.T) {
	for _, tt := range []struct {
		name string
		snap *gpu.Snapshot
		want string // the rehearsal engine's EnvInventory, "" for unset
	}{
		{"a snapshot file", &gpu.Snapshot{Source: "file:/srv/h100.json"}, "/srv/h100.json"},
		{"NVML", &gpu.Snapshot{Source: "nvml"}, ""},
		{"none", nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			shared := map[string]string{"A": "1"}
			cfg := &config.Config{Engines: map[string]*config.Engine{
				"r": {Rehearsal: true, Env: shared},
				"v": {Command: []string{"vllm"}},
			}}
			UseInventory(cfg, tt.snap)
			if got := cfg.Engines["r"].Env[EnvInventory]; got != tt.want {
				t.Errorf("rehearsal engine's %s = %q, want %q", EnvInventory, got, tt.want)
			}
			if _, ok := cfg.Engines["v"].Env[EnvInventory]; ok {
				t.Error("a real engine got the rehearsal inventory")
			}
			if _, ok := shared[EnvInventory]; ok || cfg.Engines["r"].Env["A"] != "1" {
				t.Errorf("the engine's env map was written in place, or lost its variables: %v", cfg.Engines["r"].Env)
			}
		})
	}
}
