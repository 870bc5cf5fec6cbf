package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/gpu/gputest"
	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/state/statetest"
)

func TestGPUMemoryOf(t *testing.T) {
	snap := gputest.H100s(2, gputest.WithProcess(0, 100, 40<<30, "engine"), gputest.WithProcess(1, 101, 30<<30, "worker"),
		gputest.WithProcess(1, 999, 5<<30, "foreign"))
	if got := gpuMemoryOf(snap, []int{100, 101}); got != 70<<30 {
		t.Errorf("server's processes hold %d bytes, want %d", got, uint64(70<<30))
	}
	if got := gpuMemoryOf(snap, nil); got != 0 {
		t.Errorf("no pids: %d", got)
	}
}

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

func TestGateLine(t *testing.T) {
	tests := []struct{ name, raw, want string }{
		{"health", `{"ok":true,"checks":[{"name":"/health","ok":true},{"name":"/v1/models","ok":true}]}`, "health: pass, 2 checks"},
		{"smoke", `{"ok":false,"steps":[{"name":"tool call","ok":false,"detail":"no tool_calls"},{"name":"x","ok":true}]}`, "smoke: fail, 2 checks; failed: tool call (no tool_calls)"},
		{"bench", `{"max_concurrency":16,"completed":64,"failed":0,"output_throughput":1363.4,"request_throughput":21.29,"p99_ttft_ms":54,"p99_tpot_ms":12.2,"p99_itl_ms":38.8}`,
			"bench: pass; 64 requests (0 failed) at concurrency 16: 1363 output tok/s, 21.29 req/s, TTFT p99 54 ms, TPOT p99 12.2 ms, ITL p99 38.8 ms"},
		{"bench", ``, ""},
	}
	for _, tt := range tests {
		if got := gateLine(tt.name, []byte(tt.raw)); got != tt.want {
			t.Errorf("gateLine(%s, %s) = %q, want %q", tt.name, tt.raw, got, tt.want)
		}
	}
}
