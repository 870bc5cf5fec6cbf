package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/model/modeltest"
)

// rehearsalExample is examples/rehearsal/main.hcl with free ports.
func rehearsalExample(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../examples/rehearsal/main.hcl")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	return regexp.MustCompile(`(?m)^(\s*port\s*=\s*)\d+`).ReplaceAllStringFunc(string(b), func(s string) string {
		n++
		return regexp.MustCompile(`\d+$`).ReplaceAllString(s, "@PORT_"+string(rune('A'+n))+"@")
	})
}

// TestReviewPlanFromHostSnapshot is code review as a team runs it: the
// "host" applies examples/rehearsal and publishes a snapshot; CI, in a
// clean copy of the configuration with no state, no model folders and no
// rehearsal engine binary, plans against the snapshot.
func TestReviewPlanFromHostSnapshot(t *testing.T) {
	host := newEnv(t, rehearsalExample(t))
	for dir, arch := range map[string]modeltest.Arch{"qwen3-8b": modeltest.Qwen3_8B, "qwen3-30b-a3b": modeltest.Qwen3_30B_A3B} {
		if err := modeltest.Write(filepath.Join(host.dir, "models", dir), arch); err != nil {
			t.Fatal(err)
		}
	}
	host.mustRun(0, "apply", "-auto-approve")
	host.mustRun(0, "snapshot", "-out=host.json")
	snapBytes, err := os.ReadFile(filepath.Join(host.dir, "host.json"))
	if err != nil {
		t.Fatal(err)
	}
	var snap struct {
		State struct {
			Servers map[string]any `json:"servers"`
		} `json:"state"`
		Engines map[string]struct {
			Installed struct {
				Version string `json:"version"`
				Flags   struct {
					Flags []any `json:"flags"`
				} `json:"flags"`
			} `json:"installed"`
		} `json:"engines"`
		Servers map[string]struct {
			Alive   bool  `json:"alive"`
			Healthy *bool `json:"healthy"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(snapBytes, &snap); err != nil {
		t.Fatal(err)
	}
	if len(snap.State.Servers) != 3 || len(snap.Engines) != 3 || snap.Engines["vllm_016"].Installed.Version != "0.16.0" || len(snap.Engines["vllm_016"].Installed.Flags.Flags) < 100 {
		t.Fatalf("snapshot lacks the state or the engine probes: %d servers, engines %+v", len(snap.State.Servers), snap.Engines["vllm_016"].Installed.Version)
	}
	for name, s := range snap.Servers {
		if !s.Alive || s.Healthy == nil || !*s.Healthy {
			t.Errorf("snapshot: server %s alive %v healthy %v", name, s.Alive, s.Healthy)
		}
	}

	// The CI runner: only the configuration and the snapshot.
	ci := &env{t: t, dir: t.TempDir()}
	src, _ := os.ReadFile(filepath.Join(host.dir, "main.hcl"))
	write := func(s string) {
		if err := os.WriteFile(filepath.Join(ci.dir, "main.hcl"), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(string(src))
	if err := os.WriteFile(filepath.Join(ci.dir, "host.json"), snapBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	review := []string{"-no-color", "plan", "-review", "-snapshot=host.json", "-detailed-exitcode", "-fail-on=downtime"}
	r := ci.runEnv(nil, "", review...)
	if r.code != 0 || !strings.Contains(r.stdout, "No changes.") || !strings.Contains(r.stdout, "Host snapshot: ") {
		t.Fatalf("unchanged configuration: want No changes with exit 0, got %s", r)
	}
	if entries, _ := os.ReadDir(ci.dir); len(entries) != 2 {
		t.Errorf("the review plan wrote into the checkout: %v", entries)
	}

	// A change the proxy rolls out without downtime: exit 2, argv diff.
	newLen := replaceIn(t, string(src), `server "qwen3_new"`, "max_model_len          = 32768", "max_model_len          = 16384")
	write(newLen)
	r = ci.runEnv(nil, "", review...)
	for _, want := range []string{`# server.qwen3_new must be replaced (create the new one beside the old, then destroy the old)`,
		`- "--max-model-len 32768",`, `+ "--max-model-len 16384",`, "Plan: 1 to add, 0 to change, 1 to destroy."} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("no-downtime replacement: stdout lacks %q", want)
		}
	}
	if r.code != 2 {
		t.Fatalf("no-downtime replacement: want exit 2, got %s", r)
	}

	// A change that needs downtime breaks -fail-on=downtime: its own code.
	write(replaceIn(t, newLen, `server "qwen3_old"`, "max_model_len          = 32768", "max_model_len          = 8192"))
	r = ci.runEnv(nil, "", review...)
	if r.code != 4 || !strings.Contains(r.stderr, "server.qwen3_old is replaced with downtime") {
		t.Fatalf("downtime: want exit 4, got %s", r)
	}
	// The same plan as a pull request comment.
	r = ci.runEnv(nil, "", "plan", "-review", "-snapshot=host.json", "-format=markdown")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "#### roofline plan\n\n**Risk:** 🔴 1 replacement with downtime: `server.qwen3_old` (its last start took") ||
		strings.Count(r.stdout, "<details><summary>") < 2 {
		t.Fatalf("markdown:\n%s", r)
	}
	// Without the policy, the same plan is just changes.
	if r = ci.runEnv(nil, "", review[:5]...); r.code != 2 {
		t.Fatalf("downtime without -fail-on: want exit 2, got %s", r)
	}
}

// replaceIn replaces old with new once, in the block that starts at marker.
func replaceIn(t *testing.T, src, marker, old, new string) string {
	t.Helper()
	i := strings.Index(src, marker)
	if i < 0 || !strings.Contains(src[i:], old) {
		t.Fatalf("%q not found after %q", old, marker)
	}
	return src[:i] + strings.Replace(src[i:], old, new, 1)
}
