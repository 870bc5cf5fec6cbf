package plan

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/enginelock"
)

// TestMakeChecksLockFile: Make checks the probed engines against
// Inputs.LockFile in every mode, and not at all without one.
func TestMakeChecksLockFile(t *testing.T) {
	e := &config.Engine{Name: "a", Kind: "vllm", Version: "0.16.0"}
	cfg := &config.Config{Engines: map[string]*config.Engine{"a": e}}
	locked := &engine.Installed{Kind: "vllm", Version: "0.16.0", Flags: engine.NewFlagSet([]*engine.Flag{{Name: "--a"}}, nil)}
	changed := &engine.Installed{Kind: "vllm", Version: "0.16.0", Flags: engine.NewFlagSet([]*engine.Flag{{Name: "--b"}}, nil)}
	l := &enginelock.Lock{}
	l.Set(enginelock.Of(e, locked))
	path := filepath.Join(t.TempDir(), config.LockFileName)
	if err := os.WriteFile(path, l.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		lockFile  string
		mode      Mode
		installed *engine.Installed
		want      bool
	}{
		{"as locked", path, ModeNormal, locked, false},
		{"changed", path, ModeNormal, changed, true},
		{"changed, refresh-only", path, ModeRefreshOnly, changed, true},
		{"changed, destroy", path, ModeDestroy, changed, true},
		{"no lock file given", "", ModeNormal, changed, false},
	} {
		in := &Inputs{Config: cfg, Mode: tc.mode, LockFile: tc.lockFile,
			Engines: map[string]EngineResult{"a": {Installed: tc.installed}}}
		got := false
		for _, d := range Make(in).Diagnostics {
			if d.Summary == "Engine changed behind the lock file" {
				got = true
			}
		}
		if got != tc.want {
			t.Errorf("%s: lock error %v, want %v", tc.name, got, tc.want)
		}
	}
}
