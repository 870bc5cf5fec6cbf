package cli

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/roofline/roofline/internal/gate/gatetest"
)

// gateServe starts a fake engine and returns it and its URL.
func gateServe(t *testing.T, o gatetest.Options) (*gatetest.Server, string) {
	t.Helper()
	fake := gatetest.New(o)
	ts := httptest.NewServer(fake)
	t.Cleanup(ts.Close)
	return fake, ts.URL
}

// gateConfig writes a configuration whose server "a" answers at serverURL
// and returns its directory. extra goes inside the server block.
func gateConfig(t *testing.T, serverURL, engineKind, extra string) string {
	t.Helper()
	u, err := url.Parse(serverURL)
	if err != nil {
		t.Fatal(err)
	}
	version := "0.16.0"
	if engineKind == "sglang" {
		version = "0.5.6.post2"
	}
	dir := t.TempDir()
	hcl := fmt.Sprintf(`
engine "e" {
  kind      = %q
  version   = %q
  rehearsal = true
}
model "m" {
  path        = "models/m"
  served_name = "test-model"
}
server "a" {
  engine = engine.e
  model  = model.m
  gpus   = [0]
  host   = %q
  port   = %s
%s
}
`, engineKind, version, u.Hostname(), u.Port(), extra)
	writeFile(t, filepath.Join(dir, "main.hcl"), hcl)
	return dir
}

func TestHealthCommand(t *testing.T) {
	_, vllmURL := gateServe(t, gatetest.Options{})
	_, sglURL := gateServe(t, gatetest.Options{Engine: "sglang"})
	sglDir := gateConfig(t, sglURL, "sglang", "")
	runCLICases(t, []cliCase{
		{"url passes", []string{"health", "-url", vllmURL, "-model", "test-model", "-engine", "vllm"}, 0,
			[]string{"Health of " + vllmURL, "(vllm 0.16.0)", "ok    /metrics", "Healthy."}, ""},
		{"url, model discovered, engine detected", []string{"health", "--url", vllmURL}, 0, []string{`model "test-model"`, "Healthy."}, ""},
		{"SERVER from the configuration, sglang without metrics", []string{"-chdir=" + sglDir, "health", "a"}, 1,
			[]string{"Health of server.a", "FAIL  /metrics", "--enable-metrics", "Not healthy: 1 of 4 checks failed."}, ""},
		{"unknown server", []string{"-chdir=" + sglDir, "health", "b"}, 1, nil, `no server "b"`},
		{"no target", []string{"health"}, 1, nil, "name a SERVER"},
		{"both targets", []string{"-chdir=" + sglDir, "health", "a", "-url", vllmURL}, 1, nil, "not both"},
		{"bad engine", []string{"health", "-url", vllmURL, "-engine", "tgi"}, 1, nil, `"tgi" is not vllm or sglang`},
		{"bad url", []string{"health", "-url", "localhost:8000"}, 1, nil, "not an http(s) URL"},
	})
}

func TestHealthCommandJSON(t *testing.T) {
	_, u := gateServe(t, gatetest.Options{Engine: "sglang", Metrics: true})
	code, out, _ := runMain(t, "health", "-url", u, "-model", "test-model", "-json")
	var res struct {
		OK     bool   `json:"ok"`
		Engine string `json:"engine"`
		Checks []struct {
			Name string `json:"name"`
			OK   bool   `json:"ok"`
		} `json:"checks"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if code != 0 || !res.OK || res.Engine != "sglang" || len(res.Checks) != 4 {
		t.Fatalf("exit %d, %+v", code, res)
	}
}
