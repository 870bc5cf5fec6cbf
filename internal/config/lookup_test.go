package config

import (
	"os"
	"path/filepath"
	"testing"
)

func TestStateDirPath(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		cfg  *Config
		want string
	}{
		{"no configuration", nil, filepath.Join(wd, ".roofline")},
		{"default beside the configuration", &Config{Dir: "/srv/cfg"}, "/srv/cfg/.roofline"},
		{"relative state_dir", &Config{Dir: "/srv/cfg", Roofline: &Roofline{StateDir: "state"}}, "/srv/cfg/state"},
		{"absolute state_dir", &Config{Dir: "/srv/cfg", Roofline: &Roofline{StateDir: "/var/lib/roofline"}}, "/var/lib/roofline"},
		{"relative configuration", &Config{Dir: "cfg"}, filepath.Join(wd, "cfg/.roofline")},
	} {
		if got := c.cfg.StateDirPath(); got != c.want {
			t.Errorf("%s: StateDirPath() = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestEngineNamed(t *testing.T) {
	cfg := &Config{
		Engines: map[string]*Engine{"vllm_016": {Name: "vllm_016"}, "sglang": {Name: "sglang"}},
	}
	for _, c := range []struct {
		name, give, want, wantErr string
		cfg                       *Config
	}{
		{name: "engine", cfg: cfg, give: "vllm_016", want: "vllm_016"},
		{name: "engine address", cfg: cfg, give: "engine.sglang", want: "sglang"},
		{name: "engine misspelt", cfg: cfg, give: "vllm_061",
			wantErr: "no engine block named \"vllm_061\". Did you mean \"vllm_016\"?\n\nEngine blocks: sglang, vllm_016."},
		{name: "no engines", cfg: &Config{}, give: "vllm",
			wantErr: "no engine block named \"vllm\".\n\nThe configuration has no engine blocks."},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got string
			e, err := c.cfg.EngineNamed(c.give)
			if e != nil {
				got = e.Name
			}
			switch {
			case c.wantErr != "" && (err == nil || err.Error() != c.wantErr):
				t.Errorf("err = %q, want %q", err, c.wantErr)
			case c.wantErr == "" && (err != nil || got != c.want):
				t.Errorf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}
