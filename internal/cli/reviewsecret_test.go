package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReviewPlanNeedsNoSecret: the pull request that adds README's API key
// (a sensitive variable) to a server of examples/ci plans in code review,
// where CI has no secret: the key is shown as set, the server is replaced
// without downtime, and nothing asks for the value. A secret anywhere
// else than api_key is an error that says where to keep it instead.
func TestReviewPlanNeedsNoSecret(t *testing.T) {
	t.Setenv("ROOFLINE_VAR_api_key", "")
	os.Unsetenv("ROOFLINE_VAR_api_key")
	src, err := os.ReadFile("../../examples/ci/deploy/main.hcl")
	if err != nil {
		t.Fatal(err)
	}
	const variable = "variable \"api_key\" {\n  type      = string\n  sensitive = true\n}\n\n"
	keyed := strings.Replace(string(src), "server \"qwen3_new\" {\n", variable+"server \"qwen3_new\" {\n  api_key = var.api_key\n", 1)
	if keyed == string(src) {
		t.Fatal("examples/ci/deploy/main.hcl has no server qwen3_new")
	}
	inEnv := strings.Replace(string(src), "server \"qwen3_new\" {\n", variable+"server \"qwen3_new\" {\n  env = { HF_TOKEN = var.api_key }\n", 1)
	tests := []struct {
		name, src string
		code      int
		want      []string
	}{
		{"api_key", keyed, ExitChanges, []string{"server.qwen3_new", "api_key", "sensitive value"}},
		{"a secret in env", inEnv, ExitError, []string{"Sensitive value not known in a review plan", "env of server.qwen3_new", "env_from_file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "main.hcl"), tt.src)
			snap, err := filepath.Abs("../../examples/ci/deploy/host.json")
			if err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := runMain(t, "-chdir="+dir, "-no-color", "plan", "-review", "-snapshot="+snap, "-detailed-exitcode", "-input=false")
			if code != tt.code || strings.Contains(stderr, "No value for required variable") {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tt.code, stdout, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout+stderr, w) {
					t.Errorf("output lacks %q:\n%s\n%s", w, stdout, stderr)
				}
			}
		})
	}
}
