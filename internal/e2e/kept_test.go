package e2e

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// keptConfig: server q keeps its previous instance for keep (lifecycle
// keep_previous); server r is a plain one beside it.
func keptConfig(round int, keep string, rLen int) string {
	return strings.Replace(killRolloutConfig(round, "30s"), `drain_timeout         = "30s"`, fmt.Sprintf(`drain_timeout         = "30s"
    keep_previous         = %q`, keep), 1) + fmt.Sprintf(`
server "r" {
  engine                 = engine.vllm
  model                  = model.qwen
  gpus                   = [1]
  port                   = @PORT_R@
  max_model_len          = %d
  gpu_memory_utilization = 0.45
}
`, rLen)
}

// The plan shows a kept instance with its window and memory; apply
// -target of another server leaves it alone; once the window has ended the
// plan says apply stops it, and apply does.
func TestKeptInstanceInPlanAndTarget(t *testing.T) {
	e := newEnv(t, keptConfig(0, "10m", 16384))
	e.mustRun(0, "apply", "-auto-approve")
	first := e.status()["q"].PID
	e.write(keptConfig(1, "10m", 16384))
	if r := e.mustRun(0, "apply", "-auto-approve"); !strings.Contains(r.stdout, "is kept for 10m0s") {
		t.Fatalf("the rollout should keep the previous instance:\n%s", r.stdout)
	}

	// plan: no change, and the kept instance with its window and memory.
	p := e.mustRun(0, "plan", "-detailed-exitcode")
	line := regexp.MustCompile(fmt.Sprintf(`server\.q: pid %d \(vllm 0\.16\.0\), kept until \S+ \((\S+) left\), holds ([0-9.]+) GiB on GPU 0 \(claimed at its start\)`, first))
	if m := line.FindStringSubmatch(p.stdout); m == nil || m[2] == "0.0" {
		t.Fatalf("plan should show the kept instance (pid %d) and its memory:\n%s", first, p.stdout)
	}
	var doc struct {
		ResourceChanges []struct {
			Name string `json:"name"`
			Kept *struct {
				PID         int    `json:"pid"`
				Until       string `json:"until"`
				MemoryBytes uint64 `json:"memory_bytes"`
				Stop        string `json:"stop"`
			} `json:"kept_instance"`
		} `json:"resource_changes"`
	}
	if err := json.Unmarshal(planDocument(t, e.mustRun(0, "plan", "-json").stdout), &doc); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range doc.ResourceChanges {
		if c.Name == "q" && c.Kept != nil && c.Kept.PID == first && c.Kept.Until != "" && c.Kept.MemoryBytes > 0 && c.Kept.Stop == "" {
			found = true
		}
	}
	if !found {
		t.Fatalf("plan -json should carry kept_instance of q with pid %d and its memory", first)
	}

	// apply -target of r: q's window is not r's business.
	e.write(keptConfig(1, "10m", 32768))
	r := e.mustRun(0, "apply", "-auto-approve", "-target=server.r")
	if strings.Contains(r.stdout, "rollback window ended") || syscall.Kill(first, 0) != nil {
		t.Fatalf("apply -target=server.r ended q's rollback window (pid %d):\n%s", first, r.stdout)
	}
	if !strings.Contains(e.stateOf("q"), fmt.Sprintf("deposed pid %d", first)) {
		t.Fatalf("the state should still record q's kept instance: %s", e.stateOf("q"))
	}

	// The window ends (keep_previous shortened): plan says apply stops it.
	e.write(keptConfig(1, "1s", 32768))
	p = e.mustRun(2, "plan", "-detailed-exitcode")
	if !regexp.MustCompile(fmt.Sprintf(`- kept instance = pid %d \(vllm 0\.16\.0\), [0-9.]+ GiB on GPU 0 \(window ended \S+\): apply stops it`, first)).MatchString(p.stdout) {
		t.Fatalf("plan should say the kept instance stops:\n%s", p.stdout)
	}
	if r := e.mustRun(0, "apply", "-auto-approve"); !strings.Contains(r.stdout, "rollback window ended") {
		t.Fatalf("apply should stop the kept instance:\n%s", r.stdout)
	}
	if p := e.run("plan", "-detailed-exitcode"); p.code != 0 || strings.Contains(p.stdout, "Kept for rollback") {
		t.Fatalf("plan after apply:\n%s", p)
	}
	checkTracked(t, e, 0)
}
