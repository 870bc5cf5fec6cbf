package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlanUnknownTargetAndReplace: plan, and plan from a host snapshot,
// name every wrong address flag, -target and -replace both, and plan
// nothing.
func TestPlanUnknownTargetAndReplace(t *testing.T) {
	inv, _ := filepath.Abs("../../examples/rehearsal/gpus.json")
	src, err := os.ReadFile("../../examples/single-gpu-vllm/main.hcl")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), string(src))
	snap := filepath.Join(t.TempDir(), "host.json")
	if code, _, stderr := runMain(t, "-chdir="+dir, "snapshot", "-inventory="+inv, "-out="+snap); code != ExitOK {
		t.Fatalf("snapshot: exit %d\n%s", code, stderr)
	}
	for _, from := range [][]string{{"-review", "-inventory=" + inv}, {"-snapshot=" + snap}} {
		args := append([]string{"-chdir=" + dir, "plan", "-target=server.nope", "-replace=nah"}, from...)
		code, stdout, stderr := runMain(t, args...)
		if code != ExitError || stdout != "" {
			t.Errorf("%v: exit %d, stdout %q", from, code, stdout)
		}
		for _, want := range []string{"-target=", "nope", "-replace=", "nah"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("%v: stderr lacks %q:\n%s", from, want, stderr)
			}
		}
	}
}
