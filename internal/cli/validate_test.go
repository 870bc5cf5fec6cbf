package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestValidateFiveMistakes(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("../config/testdata/invalid/five-mistakes.hcl")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "main.hcl"), string(src))
	code, _, stderr := runMain(t, "-chdir="+dir, "validate")
	if code != ExitError {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"on main.hcl line 2", "on main.hcl line 4", "on main.hcl line 13", "on main.hcl line 16", "on main.hcl line 23", "5 errors, 0 warnings."} {
		if !strings.Contains(stderr, want) {
			t.Errorf("missing %q in:\n%s", want, stderr)
		}
	}
	code, stdout, _ := runMain(t, "-chdir="+dir, "validate", "--json")
	var out struct {
		Valid       bool `json:"valid"`
		ErrorCount  int  `json:"error_count"`
		Diagnostics []struct {
			Range struct {
				Filename string             `json:"filename"`
				Start    struct{ Line int } `json:"start"`
			} `json:"range"`
		} `json:"diagnostics"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil || code != ExitError || out.Valid || out.ErrorCount != 5 || out.Diagnostics[0].Range.Start.Line != 2 {
		t.Fatalf("validate -json: exit %d, %v, %+v", code, err, out)
	}
}

func TestValidateExamples(t *testing.T) {
	dirs, _ := filepath.Glob("../../examples/*")
	if len(dirs) < 4 {
		t.Fatalf("examples: %v", dirs)
	}
	for _, d := range append(dirs, "../../examples/ci/deploy") {
		if hcl, _ := filepath.Glob(filepath.Join(d, "*.hcl")); len(hcl) == 0 {
			continue // examples/ci holds its configuration in deploy/
		}
		if code, _, stderr := runMain(t, "-chdir="+d, "validate"); code != ExitOK {
			t.Errorf("%s: validate exit %d:\n%s", d, code, stderr)
		}
		if code, stdout, _ := runMain(t, "-chdir="+d, "fmt", "-check"); code != ExitOK {
			t.Errorf("%s: fmt -check exit %d:\n%s", d, code, stdout)
		}
	}
}

func TestFmt(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, filepath.Join(dir, "a.hcl"), "server \"x\" {\n engine=engine.a\n    port = 1\n}\n")
	code, stdout, _ := runMain(t, "-chdir="+dir, "fmt", "-check", "-diff")
	if code != ExitFmt || !strings.Contains(stdout, "-    port = 1\n+  engine = engine.a\n+  port   = 1") {
		t.Fatalf("fmt -check -diff: exit %d\n%s", code, stdout)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), "    port = 1") {
		t.Fatal("-check must not write")
	}
	if code, stdout, _ := runMain(t, "-chdir="+dir, "fmt"); code != ExitOK || strings.TrimSpace(stdout) != "a.hcl" {
		t.Fatalf("fmt: exit %d %q", code, stdout)
	}
	if code, _, _ := runMain(t, "-chdir="+dir, "fmt", "-check"); code != ExitOK {
		t.Fatal("formatted file still reported")
	}
	// A file with a syntax error is reported and left alone.
	bad := writeFile(t, filepath.Join(dir, "b.hcl"), "server \"x\" {\n engine=\n}\n")
	if code, _, stderr := runMain(t, "-chdir="+dir, "fmt"); code != ExitError || !strings.Contains(stderr, "b.hcl line 2") {
		t.Fatalf("fmt with a syntax error: exit %d\n%s", code, stderr)
	}
	if b, _ := os.ReadFile(bad); string(b) != "server \"x\" {\n engine=\n}\n" {
		t.Fatal("a file with a syntax error was rewritten")
	}
}

func TestUnknownCommandAndFlag(t *testing.T) {
	if code, _, stderr := runMain(t, "valdate"); code != ExitError || !strings.Contains(stderr, `Did you mean "validate"?`) {
		t.Errorf("unknown command: %d %s", code, stderr)
	}
	if code, _, stderr := runMain(t, "plan", "-detailed-exitcod"); code != ExitError || !strings.Contains(stderr, "detailed-exitcode") {
		t.Errorf("unknown flag: %d %s", code, stderr)
	}
	if code, stdout, _ := runMain(t, "plan", "-h"); code != ExitOK || !strings.HasPrefix(stdout, "Usage: roofline") {
		t.Errorf("plan -h: %d %s", code, stdout)
	}
	if code, stdout, _ := runMain(t, "help", "state", "list"); code != ExitOK || !strings.Contains(stdout, "state list") {
		t.Errorf("help state list: %d %s", code, stdout)
	}
}

// TestPlanReview: in code review the engine and the model exist only on the
// GPU host; -review turns them into warnings and marks the plan.
func TestPlanReview(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("../../examples/single-gpu-vllm/main.hcl")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "main.hcl"), string(src))
	inv, _ := filepath.Abs("../../examples/rehearsal/gpus.json")
	if code, _, stderr := runMain(t, "-chdir="+dir, "plan", "-inventory="+inv); code != ExitError || !strings.Contains(stderr, "Engine not usable") {
		t.Fatalf("without -review a missing engine is an error: exit %d\n%s", code, stderr)
	}
	code, stdout, stderr := runMain(t, "-chdir="+dir, "plan", "-review", "-inventory="+inv, "-json")
	if code != ExitOK || !strings.Contains(string(planDocument(t, stdout)), `"review":true`) || !strings.Contains(stdout, "Engine not installed here") {
		t.Fatalf("plan -review: exit %d\n%s\n%s", code, stdout, stderr)
	}
}
