package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/model/modeltest"
)

// update makes assertGolden rewrite the golden files under testdata/.
var update = flag.Bool("update", false, "rewrite golden files")

// assertGolden compares got with the golden file at path; with -update it
// writes got there first, creating the folder.
func assertGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The top-level test name: subtest names are rewritten by go test, so
	// they would not make a reliable -run pattern.
	top, _, _ := strings.Cut(t.Name(), "/")
	rerun := "go test ./internal/cli -run '^" + top + "$' -update"
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run %s to create it)", err, rerun)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (if the change is intended, run %s)\n--- got:\n%s--- want:\n%s", path, rerun, got, want)
	}
}

// runMain runs roofline with args and empty stdin; it returns the exit code,
// stdout and stderr.
func runMain(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runMainWith(t, Streams{}, args...)
}

// runMainIn is runMain with stdin (answers to prompts, a log on -file -).
func runMainIn(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runMainWith(t, Streams{In: strings.NewReader(stdin)}, args...)
}

// runMainWith runs roofline with the terminal settings (and stdin, if any)
// of s; Out and Err are replaced by buffers.
func runMainWith(t *testing.T, s Streams, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	if s.In == nil {
		s.In = strings.NewReader("")
	}
	s.Out, s.Err = &out, &errb
	code = Main(args, s)
	return code, out.String(), errb.String()
}

// writeFile writes text to path, creating its folder, and returns path.
func writeFile(t *testing.T, path, text string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// synthModel writes a synthetic model folder (real names and shapes, sparse
// data) named after the architecture, so outputs do not depend on the path.
func synthModel(t *testing.T, arch modeltest.Arch, opts ...modeltest.Option) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), arch.Name)
	if err := modeltest.Write(dir, arch, opts...); err != nil {
		t.Fatal(err)
	}
	return dir
}

// cliCase is one row of a command's table test: the exit code, substrings
// stdout must hold and one substring of stderr.
type cliCase struct {
	name string
	args []string
	code int
	out  []string
	err  string
}

func runCLICases(t *testing.T, tests []cliCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runMain(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, out, errOut)
			}
			for _, s := range tt.out {
				if !strings.Contains(out, s) {
					t.Errorf("stdout lacks %q:\n%s", s, out)
				}
			}
			if !strings.Contains(errOut, tt.err) {
				t.Errorf("stderr lacks %q:\n%s", tt.err, errOut)
			}
		})
	}
}

// planDocument is the whole plan of a plan -json stream: the "plan"
// message, last.
func planDocument(t *testing.T, stream string) []byte {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stream), "\n")
	var msg struct {
		Type string          `json:"type"`
		Plan json.RawMessage `json:"plan"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &msg); err != nil || msg.Type != "plan" {
		t.Fatalf("plan -json: the last message is not the plan (%v):\n%s", err, stream)
	}
	return msg.Plan
}
