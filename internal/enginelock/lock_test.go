package enginelock

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestRoundTripAndDiff(t *testing.T) {
	a := &Entry{Name: "vllm", Kind: "vllm", Version: "0.16.0", Identity: "sha256:aaa", FlagsHash: "sha256:h1", Flags: []string{"--a", "--b", "--c"}}
	l := &Lock{}
	l.Set(&Entry{Name: "z", Kind: "sglang", Version: "1", Identity: "i", FlagsHash: "h"})
	l.Set(a)
	path := filepath.Join(t.TempDir(), "roofline.lock.hcl")
	if err := os.WriteFile(path, l.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	back, diags := Read(path)
	if diags.HasErrors() || len(back.Engines) != 2 || back.Engines[0].Name != "vllm" || !slices.Equal(back.Get("vllm").Flags, a.Flags) {
		t.Fatalf("round trip: %v %+v", diags, back)
	}
	if d := Diff(a, a); d != "" {
		t.Errorf("same entry differs: %q", d)
	}
	b := *a
	b.Identity, b.FlagsHash, b.Flags = "sha256:bbb", "sha256:h2", []string{"--b", "--c", "--d", "--e"}
	if d := Diff(a, &b); !strings.Contains(d, "1 flags removed, 2 added") || !strings.Contains(d, "the install is another one") {
		t.Errorf("diff %q", d)
	}
	c := *a
	c.FlagsHash = "sha256:h3"
	if d := Diff(a, &c); !strings.Contains(d, "defaults changed") {
		t.Errorf("diff %q", d)
	}
	back.Keep([]string{"z"})
	if len(back.Engines) != 1 || back.Get("vllm") != nil {
		t.Errorf("Keep: %+v", back.Engines)
	}
	if l, d := Read(filepath.Join(t.TempDir(), "none")); l != nil || d != nil {
		t.Error("a missing lock file is not (nil, nil)")
	}
	if err := os.WriteFile(path, []byte("engine \"x\" {\n  kind = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, d := Read(path); !d.HasErrors() {
		t.Error("a broken lock file is accepted")
	}
}
