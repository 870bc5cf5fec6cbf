package cli

import (
	"path/filepath"
	"strings"
	"testing"

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
}
