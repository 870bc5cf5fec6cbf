package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// keyed: a vLLM server whose key comes from a variable, and an SGLang server
// whose key comes from a host file (enforced by roofline's proxy, since
// SGLang takes a key only on its command line).
const keyed = base + `
variable "vllm_key" {
  type      = string
  sensitive = true
}

server "v" {
  engine           = engine.vllm
  model            = model.qwen
  gpus             = [0]
  port             = @PORT_V@
  max_model_len    = 16384
  tool_call_parser = "hermes"
  api_key          = var.vllm_key
  gate {
    smoke_toolcall = true
    bench {
      requests    = 8
      concurrency = 2
    }
  }
}

server "s" {
  engine           = engine.sglang
  model            = model.qwen
  gpus             = [1]
  port             = @PORT_S@
  max_model_len    = 16384
  tool_call_parser = "qwen25"
  api_key_file     = "sglang.key"
  gate {
    smoke_toolcall = true
  }
}
`

// TestAPIKeys: keyed vLLM and SGLang servers apply with every gate passing
// (the gates authenticate); without the key a request gets 401 JSON; with
// it, 200; the key is on no process's command line, nor in the state, the
// plan or the logs; health names the server when the key is wrong.
func TestAPIKeys(t *testing.T) {
	const vkey, skey = "sk-vllm-7f3a9c21e4", "sk-sglang-0b8d55e1aa"
	e := newEnv(t, keyed)
	if err := os.WriteFile(filepath.Join(e.dir, "sglang.key"), []byte(skey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// From an auto-loaded variables file, so that the test's clean-up
	// (destroy) has it too.
	if err := os.WriteFile(filepath.Join(e.dir, "keys.auto.rfvars"), []byte(fmt.Sprintf("vllm_key = %q\n", vkey)), 0o600); err != nil {
		t.Fatal(err)
	}
	p := e.mustRun(0, "plan")
	if strings.Contains(p.stdout+p.stderr, vkey) || strings.Contains(p.stdout+p.stderr, skey) {
		t.Fatalf("the plan shows a key:\n%s", p)
	}
	if !strings.Contains(p.stdout, "api_key") || strings.Contains(p.stderr, "without an API key") {
		t.Errorf("plan should show the servers' keys as set, and not warn:\n%s", p)
	}
	r := e.mustRun(0, "apply", "-auto-approve")
	if strings.Contains(r.stdout+r.stderr, vkey) || strings.Contains(r.stdout+r.stderr, skey) {
		t.Fatalf("apply printed a key:\n%s", r)
	}

	body := `{"model": "qwen3-8b", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}`
	for name, key := range map[string]string{"v": vkey, "s": skey} {
		url := fmt.Sprintf("http://127.0.0.1:%d/v1/chat/completions", e.ports["@PORT_"+strings.ToUpper(name)+"@"])
		for _, try := range []struct {
			key  string
			want int
		}{{"", 401}, {"wrong", 401}, {key, 200}} {
			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			if try.key != "" {
				req.Header.Set("Authorization", "Bearer "+try.key)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != try.want {
				t.Errorf("server %s, key %q: status %d, want %d: %s", name, try.key, resp.StatusCode, try.want, b)
			}
			if try.want == 401 && !bytes.Contains(b, []byte(`"error"`)) {
				t.Errorf("server %s: the 401 is not the engines' JSON error: %s", name, b)
			}
		}
	}

	// No key on any command line, in the state or in the logs.
	for _, pid := range launchedPids(e.dir) {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if bytes.Contains(cmd, []byte(vkey)) || bytes.Contains(cmd, []byte(skey)) {
			t.Errorf("pid %d has a key on its command line: %q", pid, cmd)
		}
	}
	_ = filepath.WalkDir(filepath.Join(e.dir, ".roofline"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".key") {
			return nil
		}
		b, _ := os.ReadFile(path)
		if bytes.Contains(b, []byte(vkey)) || bytes.Contains(b, []byte(skey)) {
			t.Errorf("%s holds a key", path)
		}
		return nil
	})
	if fi, err := os.Stat(filepath.Join(e.dir, ".roofline", "proxy", "s.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the proxy's key file: %v %v", fi, err)
	}

	// health authenticates by itself for a named server, and a wrong key
	// is an error that names the server.
	e.mustRun(0, "health", "v")
	e.mustRun(0, "health", "s")
	// So does the agent's probe (roofline check): keyed servers are healthy.
	e.mustRun(0, "check")
	bad := filepath.Join(e.dir, "bad.key")
	_ = os.WriteFile(bad, []byte("nope\n"), 0o600)
	h := e.run("health", "-api-key-file", bad, "v")
	if h.code == 0 || !strings.Contains(h.stdout+h.stderr, "server.v") || !strings.Contains(h.stdout+h.stderr, "rejected the API key") {
		t.Errorf("health with a wrong key should fail naming server.v and the key:\n%s", h)
	}
	if pl := e.run("plan", "-detailed-exitcode"); pl.code != 0 {
		t.Errorf("plan after apply has changes:\n%s", pl)
	}
}
