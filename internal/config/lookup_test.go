package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
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

func TestSafeServerName(t *testing.T) {
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"qwen3", true}, {"_a-b_1", true}, {`web["a b"]`, true}, {"web[0]", true},
		{"", false}, {"1web", false}, {"../etc", false}, {"a/b", false}, {`web["../x"]`, false},
		{`web["a\b"]`, false}, {"web[x]", false}, {"web[0][1]", false}, {"server.web", false},
	} {
		if got := SafeServerName(c.name); got != c.ok {
			t.Errorf("SafeServerName(%q) = %v, want %v", c.name, got, c.ok)
		}
	}
}

func TestServerLogPath(t *testing.T) {
	dir := t.TempDir()
	cfg := &Config{Dir: dir, Servers: map[string]*Server{"qwen3": {Name: "qwen3"}, "llama": {Name: "llama"}}}
	log := filepath.Join(dir, ".roofline", "logs", "qwen3.log")
	if err := os.MkdirAll(filepath.Dir(log), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(log, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cfg           *Config
		name, want    string
		wantErrPrefix string
	}{
		{cfg: cfg, name: "qwen3", want: log},
		{cfg: cfg, name: "llama", wantErrPrefix: `no log for server "llama" at ` + filepath.Join(dir, ".roofline/logs/llama.log") + ".\n\nroofline writes it when apply starts the server"},
		{cfg: cfg, name: "qwen4", wantErrPrefix: `no server "qwen4" in the configuration, and no log for it at ` +
			filepath.Join(dir, ".roofline/logs/qwen4.log") + `. Did you mean "qwen3"?` + "\n\nServers: llama, qwen3. Or give"},
		{cfg: &Config{Dir: dir}, name: "x", wantErrPrefix: `no server "x" in the configuration`},
	} {
		path, err := c.cfg.ServerLogPath(c.name)
		var nolog *NoLogError
		switch {
		case c.wantErrPrefix != "" && (!errors.As(err, &nolog) || !strings.HasPrefix(err.Error(), c.wantErrPrefix)):
			t.Errorf("ServerLogPath(%q): err = %v, want %q", c.name, err, c.wantErrPrefix)
		case c.wantErrPrefix == "" && (err != nil || path != c.want):
			t.Errorf("ServerLogPath(%q) = %q, %v; want %q", c.name, path, err, c.want)
		}
	}
	if _, err := (&Config{Dir: dir}).ServerLogPath("x"); err == nil || !strings.Contains(err.Error(), "Servers: none.") {
		t.Errorf("no servers: %v", err)
	}
}
