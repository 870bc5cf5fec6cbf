package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSavedPlanWithAPIKey: a server keyed with api_key (a sensitive
// variable, not a host file) applies from a saved plan: the plan file
// carries the key sealed (AES-GCM under the state directory's plan key),
// never in the clear, and apply FILE starts the engine with it.
func TestSavedPlanWithAPIKey(t *testing.T) {
	const key = "sk-saved-plan-5c1e77a0"
	cfg := base + `
variable "key" {
  type      = string
  sensitive = true
}

server "v" {
  engine        = engine.vllm
  model         = model.qwen
  gpus          = [0]
  port          = @PORT_V@
  max_model_len = 16384
  api_key       = var.key
}
`
	e := newEnv(t, cfg)
	if err := os.WriteFile(filepath.Join(e.dir, "key.auto.rfvars"), []byte(fmt.Sprintf("key = %q\n", key)), 0o600); err != nil {
		t.Fatal(err)
	}
	e.mustRun(2, "plan", "-detailed-exitcode", "-out=keyed.plan")
	raw, err := os.ReadFile(filepath.Join(e.dir, "keyed.plan"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(key)) || !bytes.Contains(raw, []byte(`"sealed_secrets"`)) {
		t.Fatalf("the plan file must hold the key sealed, never in the clear")
	}
	if r := e.mustRun(0, "apply", "keyed.plan"); strings.Contains(r.stdout+r.stderr, key) {
		t.Fatalf("apply printed the key:\n%s", r)
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/v1/models", e.ports["@PORT_V@"])
	for _, try := range []struct {
		key  string
		want int
	}{{"", 401}, {key, 200}} {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if try.key != "" {
			req.Header.Set("Authorization", "Bearer "+try.key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != try.want {
			t.Errorf("key %q: %d, want %d", try.key, resp.StatusCode, try.want)
		}
	}
	if p := e.run("plan", "-detailed-exitcode"); p.code != 0 {
		t.Fatalf("plan after apply:\n%s", p)
	}
}
