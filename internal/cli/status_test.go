package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/proxy"
	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/state/statetest"
)

// TestStatusDuringRollout: while a rollout overlaps two instances, status
// shows both, and a server whose processes are gone exits 2.
func TestStatusDuringRollout(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), "roofline {\n  state_dir = \".state\"\n}\n")
	sm := state.NewFilesystem(filepath.Join(dir, ".state"))
	st := state.NewFile()
	s := statetest.Server("web")
	old := statetest.Server("web")
	old.PID, old.ID, old.Status = 999999, state.ProcessID(999999), state.StatusReady
	s.Status, s.Deposed = state.StatusStarting, old
	st.Set(s)
	if err := sm.Write(st); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runMain(t, "-chdir="+dir, "-no-color", "status")
	if code != ExitUnhealthy || !strings.Contains(out, "web (old, serving)") || !strings.Contains(out, "web (new, rolling out)") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = runMain(t, "-chdir="+dir, "status", "-json")
	if code != ExitUnhealthy || !strings.Contains(out, `"instance": "old"`) || !strings.Contains(out, `"instance": "new"`) {
		t.Fatalf("json: exit %d\n%s", code, out)
	}

	// An apply killed after the proxy switched, before the state said so:
	// the new instance serves and the old one drains; status says what the
	// proxy does, not "old, serving".
	s.BackendPort, old.BackendPort = 41537, 41524
	if err := sm.Write(st); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(proxy.Dir(filepath.Join(dir, ".state")), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := proxy.WriteTarget(proxy.TargetFile(filepath.Join(dir, ".state"), "web"), proxy.TargetLine(41537, "vllm", "0.16.0")); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runMain(t, "-chdir="+dir, "-no-color", "status")
	if code != ExitUnhealthy || !strings.Contains(out, "web (old, draining)") || !strings.Contains(out, "web (new, serving)") {
		t.Fatalf("after the switch: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, out, _ = runMain(t, "-chdir="+dir, "status", "-json"); !strings.Contains(out, `"instance": "new",`) || strings.Count(out, `"serves": true`) != 1 {
		t.Fatalf("json after the switch:\n%s", out)
	}
}

// TestLogsOfAnUnknownServer: a misspelt server name is named as such, with
// a suggestion; it read as a server not started yet.
func TestLogsOfAnUnknownServer(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), `roofline {
  state_dir = ".state"
}
engine "e" {
  kind      = "vllm"
  version   = "0.16.0"
  rehearsal = true
}
model "m" {
  path = "m"
}
server "qwen3" {
  engine = engine.e
  model  = model.m
  gpus   = [0]
  port   = 8000
}
`)
	code, _, errOut := runMain(t, "-chdir="+dir, "logs", "qwen")
	if code != ExitError || !strings.Contains(errOut, `no server "qwen" in the configuration or the state`) || !strings.Contains(errOut, `Did you mean "qwen3"?`) {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	code, _, errOut = runMain(t, "-chdir="+dir, "logs", "qwen3")
	if code != ExitError || !strings.Contains(errOut, `no log for server "qwen3"`) {
		t.Fatalf("a declared server not started yet: exit %d\n%s", code, errOut)
	}
}
