package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// limitsConfig is server q with a proxy block.
func limitsConfig(block string) string {
	return strings.Replace(killRolloutConfig(0, "30s"), "  lifecycle {", "  proxy {\n"+block+"\n  }\n  lifecycle {", 1)
}

// proxyPID is the pid of server name's proxy, as the state records it.
func (e *env) proxyPID(name string) int {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.dir, ".roofline", "state.json"))
	if err != nil {
		e.t.Fatal(err)
	}
	var st struct {
		Servers map[string]struct {
			Proxy *struct {
				PID int `json:"pid"`
			} `json:"proxy"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		e.t.Fatal(err)
	}
	if p := st.Servers[name].Proxy; p != nil {
		return p.PID
	}
	return 0
}

// bigChat sends a chat request of about n bytes; it returns the status and
// the body.
func bigChat(t *testing.T, url string, n int) (int, string) {
	t.Helper()
	body := fmt.Sprintf(`{"model": "qwen3-8b", "messages": [{"role": "user", "content": %q}], "max_tokens": 2}`, strings.Repeat("word ", n/5))
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestProxyLimitsFromHCL: the proxy block's limits reach the proxy at
// bring-up and are shown in the plan; a change is an update in place that
// restarts neither the engine nor the proxy, under a streaming load with no
// failed request.
func TestProxyLimitsFromHCL(t *testing.T) {
	e := newEnv(t, limitsConfig(`    max_body = "4KiB"`))
	e.mustRun(0, "apply", "-auto-approve")
	url := fmt.Sprintf("http://127.0.0.1:%d", e.ports["@PORT_Q@"])
	if code, body := bigChat(t, url, 8<<10); code != 413 || !strings.Contains(body, "over the limit of 4096") {
		t.Fatalf("an 8 KiB request over max_body 4KiB: %d %s", code, body)
	}
	p := e.mustRun(0, "plan", "-detailed-exitcode")
	engine, proxyPID := e.status()["q"].PID, e.proxyPID("q")

	c := streamClient(t, url, 4, 50)
	e.write(limitsConfig(`    max_body     = "16KiB"
    idle_timeout = "30s"`))
	p = e.mustRun(2, "plan", "-detailed-exitcode")
	if !strings.Contains(p.stdout, "~ proxy    = max_body 4KiB -> 16KiB, idle_timeout default -> 30s (the running proxy takes them: no restart, no connection cut)") ||
		!strings.Contains(p.stdout, "0 to add, 1 to change, 0 to destroy") {
		t.Fatalf("plan should show the limits as an update in place:\n%s", p.stdout)
	}
	r := e.mustRun(0, "apply", "-auto-approve")
	if !strings.Contains(r.stdout, "new limits are in force") {
		t.Fatalf("apply:\n%s", r.stdout)
	}
	time.Sleep(500 * time.Millisecond)
	ok, failed := c.finish()
	if len(failed) > 0 || ok == 0 {
		t.Fatalf("%d ok, %d failed while the limits changed: %v", ok, len(failed), failed[:min(5, len(failed))])
	}
	if now := e.status()["q"].PID; now != engine {
		t.Errorf("the engine restarted (pid %d -> %d)", engine, now)
	}
	if now := e.proxyPID("q"); now != proxyPID || now == 0 {
		t.Errorf("the proxy restarted (pid %d -> %d)", proxyPID, now)
	}
	if code, body := bigChat(t, url, 8<<10); code != 200 {
		t.Fatalf("an 8 KiB request under the new max_body 16KiB: %d %s", code, body)
	}
	if p := e.run("plan", "-detailed-exitcode"); p.code != 0 || !strings.Contains(p.stdout, "No changes") {
		t.Fatalf("plan after apply:\n%s", p)
	}
	t.Logf("%d streamed requests while the limits changed, none failed", ok)
}
