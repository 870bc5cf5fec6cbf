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

// TestSavedPlanRefusesPlanningFlags: apply FILE with -target, -replace or
// -refresh-only is refused before anything is read: the plan file holds
// what apply does, and the flag was silently ignored (apply -target=server.b
// FILE applied FILE's change of server.a).
func TestSavedPlanRefusesPlanningFlags(t *testing.T) {
	dir := t.TempDir()
	for _, flag := range []string{"-target=server.b", "-replace=server.b", "-refresh-only"} {
		code, stdout, stderr := runMain(t, "-chdir="+dir, "apply", flag, filepath.Join(dir, "saved.plan"))
		if code != ExitError || stdout != "" || !strings.Contains(stderr, strings.SplitN(flag, "=", 2)[0]+" with a saved plan") || strings.Contains(stderr, "no such file") {
			t.Errorf("apply %s FILE: exit %d\n%s%s", flag, code, stdout, stderr)
		}
	}
	// -var still finds a state directory computed from a variable, and says
	// that the plan keeps the values it was made with.
	if _, _, stderr := runMain(t, "-chdir="+dir, "apply", "-var", "ctx=30000", filepath.Join(dir, "saved.plan")); !strings.Contains(stderr, "Warning: -var and -var-file with a saved plan") {
		t.Errorf("apply -var FILE:\n%s", stderr)
	}
}

// TestDestroyRefusesPlanningModes: destroy shares apply's flags, and
// -refresh-only and -replace, which contradict a destroy, were accepted and
// ignored; they are refused before anything is read, as plan -destroy
// -refresh-only is.
func TestDestroyRefusesPlanningModes(t *testing.T) {
	dir := t.TempDir()
	for _, flag := range []string{"-refresh-only", "-replace=server.b"} {
		code, stdout, stderr := runMain(t, "-chdir="+dir, "destroy", "-auto-approve", flag)
		if code != ExitError || stdout != "" || !strings.Contains(stderr, strings.SplitN(flag, "=", 2)[0]+" with destroy") {
			t.Errorf("destroy %s: exit %d\n%s%s", flag, code, stdout, stderr)
		}
	}
}

// TestImportToAnUndeclaredServer: import to a server the configuration does
// not declare says so and how to write its block; it said "-target=
// server.nope: no such server", a flag the user never typed.
func TestImportToAnUndeclaredServer(t *testing.T) {
	old := selfExecutable
	selfExecutable = func() (string, error) { return "/bin/false", nil }
	t.Cleanup(func() { selfExecutable = old })
	inv, _ := filepath.Abs("../../examples/rehearsal/gpus.json")
	src, err := os.ReadFile("../../examples/single-gpu-vllm/main.hcl")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), string(src))
	code, stdout, stderr := runMain(t, "-chdir="+dir, "import", "-inventory="+inv, "server.nope", "port:41999")
	if code != ExitError || strings.Contains(stderr, "-target") || !strings.Contains(stderr, "Import to a server not in the configuration") ||
		!strings.Contains(stderr, "import -generate-config-out=FILE server.nope port:41999") {
		t.Errorf("exit %d\n%s%s", code, stdout, stderr)
	}
}
