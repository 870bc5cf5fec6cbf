package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCIExample runs examples/ci/review.sh, the command both example
// workflows run, on a copy of examples/ci/deploy: the configuration, the
// host's snapshot and its engine lock, and nothing of the host.
func TestCIExample(t *testing.T) {
	const command = "examples/ci/review.sh deploy host.json"
	for _, wf := range []string{"github-actions.yml", "gitlab-ci.yml"} {
		b, err := os.ReadFile(filepath.Join("../../examples/ci", wf))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), command) {
			t.Errorf("%s does not run %q", wf, command)
		}
	}
	script, _ := filepath.Abs("../../examples/ci/review.sh")
	work := t.TempDir()
	deploy := filepath.Join(work, "deploy")
	if err := os.MkdirAll(deploy, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"main.hcl", "host.json", "roofline.lock.hcl"} {
		b, err := os.ReadFile(filepath.Join("../../examples/ci/deploy", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(deploy, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src, _ := os.ReadFile(filepath.Join(deploy, "main.hcl"))
	review := func(config string) (int, string, string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(deploy, "main.hcl"), []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, script, "deploy", "host.json")
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		md, _ := os.ReadFile(filepath.Join(work, "plan.md"))
		return code, out.String(), string(md)
	}
	code, log, md := review(string(src))
	if code != 0 || !strings.Contains(md, "**No changes.**") || !strings.Contains(md, "Host snapshot: gpu-01") {
		t.Fatalf("unchanged: exit %d\n%s\n%s", code, log, md)
	}
	if entries, _ := os.ReadDir(deploy); len(entries) != 3 {
		t.Errorf("the review wrote into the configuration: %v", entries)
	}
	code, log, md = review(replaceIn(t, string(src), `server "qwen3_new"`, "max_model_len          = 32768", "max_model_len          = 16384"))
	if code != 0 || !strings.Contains(md, "<code>+/-</code> <b>server.qwen3_new</b>") || !strings.Contains(md, "`--max-model-len 16384`") {
		t.Fatalf("a rollout without downtime: exit %d\n%s\n%s", code, log, md)
	}
	code, log, md = review(replaceIn(t, string(src), `server "qwen3_old"`, "max_model_len          = 32768", "max_model_len          = 8192"))
	if code != 4 || !strings.Contains(md, "1 replacement with downtime: `server.qwen3_old`") {
		t.Fatalf("a change with downtime: exit %d\n%s\n%s", code, log, md)
	}
	code, log, _ = review(string(src) + "\nserver \"x\" {\n")
	if code != 1 || !strings.Contains(log, "Error:") {
		t.Fatalf("a syntax error: exit %d\n%s", code, log)
	}
	code, _, _ = review(strings.Replace(string(src), "kind      = \"vllm\"", "kind = \"vllm\"", 1))
	if code != 1 {
		t.Fatalf("an unformatted file: exit %d", code)
	}
}
