package enginelock

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine"
)

func TestCheck(t *testing.T) {
	flags := func(names ...string) *engine.FlagSet {
		var fs []*engine.Flag
		for _, n := range names {
			fs = append(fs, &engine.Flag{Name: n})
		}
		return engine.NewFlagSet(fs, nil)
	}
	cfg := &config.Config{Engines: map[string]*config.Engine{
		"a": {Name: "a", Kind: "vllm", Version: "0.16.0"},
		"b": {Name: "b", Kind: "vllm", Version: "0.16.0"},
	}}
	same := &engine.Installed{Kind: "vllm", Version: "0.16.0", Flags: flags("--a", "--b")}
	l := &Lock{}
	l.Set(Of(cfg.Engines["a"], same))
	path := filepath.Join(t.TempDir(), "roofline.lock.hcl")
	if d := Check(path, cfg, map[string]*engine.Installed{"a": same}); d != nil {
		t.Errorf("without a lock file: %v", d)
	}
	if err := os.WriteFile(path, l.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		installed map[string]*engine.Installed
		want      []string
	}{
		{"as locked", map[string]*engine.Installed{"a": same}, nil},
		{"not probed", map[string]*engine.Installed{"a": nil, "b": {Kind: "vllm"}}, nil},
		{"flags changed", map[string]*engine.Installed{"a": {Kind: "vllm", Version: "0.16.0", Flags: flags("--a", "--c")}}, []string{"Engine changed behind the lock file"}},
		{"not locked", map[string]*engine.Installed{"a": same, "b": same}, []string{"Engine not in the lock file"}},
	} {
		d := Check(path, cfg, tc.installed)
		var got []string
		for _, x := range d {
			got = append(got, x.Summary)
			if x.Subject == nil || !strings.Contains(x.Detail, "roofline.lock.hcl") {
				t.Errorf("%s: %q has no subject or does not name the lock file", tc.name, x.Detail)
			}
		}
		if strings.Join(got, ";") != strings.Join(tc.want, ";") {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := FlagDiffText([]string{"--a", "--b"}, []string{"--b", "--c"}); got != "      - --a\n      + --c\n" {
		t.Errorf("FlagDiffText = %q", got)
	}
}
