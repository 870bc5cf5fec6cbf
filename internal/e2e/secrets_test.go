package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// secretsCfg has a secret of every kind: a sensitive variable (in an env key
// whose name does not say secret), HF_TOKEN by the name rule, an API key
// from a variable (api_key on a vLLM server, which gets it as VLLM_API_KEY),
// a host-file secret read only at apply (env_from_file), and an API key in
// a host file (api_key_file on an SGLang server, whose proxy enforces it).
const secretsCfg = base + `
variable "pass" {
  type      = string
  sensitive = true
}

variable "hf" {
  type = string
}

variable "key" {
  type = string
}

server "a" {
  engine        = engine.vllm
  model         = model.qwen
  gpus          = [0]
  port          = @PORT_A@
  max_model_len = 32768
  env           = { HF_TOKEN = var.hf, DB_CONN = var.pass }
  env_from_file = { WANDB_API_KEY = "@HOSTFILE@" }
}

server "k" {
  engine        = engine.vllm
  model         = model.qwen
  gpus          = [1]
  port          = @PORT_B@
  max_model_len = 16384
  api_key       = var.key
}

server "s" {
  engine        = engine.sglang
  model         = model.qwen
  gpus          = [3]
  port          = @PORT_C@
  max_model_len = 16384
  api_key_file  = "@KEYFILE@"
}
`

// failingServer starts with the same secrets and fails (out of memory while
// loading), so a failed apply's output is checked too.
const failingServer = `
server "f" {
  engine        = engine.vllm
  model         = model.qwen
  gpus          = [2]
  port          = @PORT_F@
  max_model_len = 32768
  env           = { HF_TOKEN = var.hf, DB_CONN = var.pass, ROOFLINE_REHEARSAL_FAIL = "oom_weights" }
  env_from_file = { WANDB_API_KEY = "@HOSTFILE@" }
}
`

type secretValues struct{ pass, hf, key, host, fileKey string }

func (s secretValues) all() []string { return []string{s.pass, s.hf, s.key, s.host, s.fileKey} }

func (s secretValues) set(t *testing.T, hostFile, keyFile string) {
	t.Setenv("ROOFLINE_VAR_pass", s.pass)
	t.Setenv("ROOFLINE_VAR_hf", s.hf)
	t.Setenv("ROOFLINE_VAR_key", s.key)
	for f, v := range map[string]string{hostFile: s.host, keyFile: s.fileKey} {
		if err := os.WriteFile(f, []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// cmdlinesWith lists the processes whose command line holds one of vals.
func cmdlinesWith(t *testing.T, vals []string) []string {
	t.Helper()
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var out []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // gone since the glob
		}
		for _, v := range vals {
			if bytes.Contains(b, []byte(v)) {
				out = append(out, p+": "+strings.ReplaceAll(string(b), "\x00", " "))
			}
		}
	}
	return out
}

// TestSecretsNeverLeak greps every secret value in everything roofline
// shows or stores: plan text, plan -json, the plan file, state.json and its
// backup, the journal, roofline's log (ROOFLINE_LOG), status -json, the
// engines' /proc/PID/cmdline and a failed apply's output. Rotating each
// secret shows as a change.
func TestSecretsNeverLeak(t *testing.T) {
	hostFile := filepath.Join(t.TempDir(), "wandb_token")
	keyFile := filepath.Join(t.TempDir(), "api_key")
	cfg := strings.NewReplacer("@HOSTFILE@", hostFile, "@KEYFILE@", keyFile).Replace(secretsCfg)
	e := newEnv(t, cfg)
	logPath := filepath.Join(t.TempDir(), "roofline.log")
	t.Setenv("ROOFLINE_LOG", "trace")
	t.Setenv("ROOFLINE_LOG_PATH", logPath)
	v1 := secretValues{"pw-sensitive-var-5b1c", "hf_nameRuleToken9f3a", "sk-apikey-77c0d2e1", "host-file-secret-4e8a", "sk-keyfile-0b9d33"}
	v1.set(t, hostFile, keyFile)
	// Destroy needs the variables: run it before t.Setenv's cleanups unset
	// them (cleanups run last-registered first).
	t.Cleanup(func() { e.run("destroy", "-auto-approve", "-lock-timeout=30s") })

	var seen []string // what was checked, for the failure message
	check := func(what string, data []byte, vals []string) {
		t.Helper()
		seen = append(seen, what)
		for _, s := range vals {
			if bytes.Contains(data, []byte(s)) {
				i := bytes.Index(data, []byte(s))
				t.Errorf("%s shows the secret %q: …%s…", what, s, data[max(0, i-80):min(len(data), i+len(s)+40)])
			}
		}
	}
	res := func(r result) []byte { return []byte(r.stdout + r.stderr) }
	stateDir := filepath.Join(e.dir, ".roofline")

	check("plan", res(e.mustRun(2, "plan", "-detailed-exitcode")), v1.all())
	check("plan -json", res(e.mustRun(0, "plan", "-json")), v1.all())
	planFile := filepath.Join(e.dir, "tfplan")
	check("plan -out", res(e.mustRun(0, "plan", "-out="+planFile)), v1.all())
	pf, err := os.ReadFile(planFile)
	if err != nil {
		t.Fatal(err)
	}
	check("the plan file", pf, v1.all())
	check("show FILE", res(e.mustRun(0, "show", "-json", planFile)), v1.all())
	check("apply FILE", res(e.mustRun(0, "apply", planFile)), v1.all())

	rows := e.status()
	for _, name := range []string{"a", "k", "s"} {
		if !rows[name].Running {
			t.Fatalf("server %s does not run: %+v", name, rows[name])
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", rows[name].PID))
		if err != nil {
			t.Fatal(err)
		}
		check("/proc/PID/cmdline of server "+name, cmdline, v1.all())
		// The engine itself got the plain values: the secrets work.
		environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", rows[name].PID))
		if err != nil {
			t.Fatal(err)
		}
		// (SGLang takes a key only on its argv: its proxy holds it instead.)
		want := map[string][]string{"a": {"HF_TOKEN=" + v1.hf, "DB_CONN=" + v1.pass, "WANDB_API_KEY=" + v1.host}, "k": {"VLLM_API_KEY=" + v1.key}}[name]
		for _, kv := range want {
			if !bytes.Contains(environ, append([]byte(kv), 0)) {
				t.Errorf("server %s's engine lacks %s in its environment", name, strings.SplitN(kv, "=", 2)[0])
			}
		}
	}
	if leaks := cmdlinesWith(t, v1.all()); len(leaks) > 0 {
		t.Errorf("a secret is on a command line:\n%s", strings.Join(leaks, "\n"))
	}
	check("status -json", res(e.mustRun(0, "status", "-json")), v1.all())
	check("status", res(e.mustRun(0, "status")), v1.all())

	// A failed apply: one more server with the same secrets fails to start.
	e.write(cfg + strings.ReplaceAll(failingServer, "@HOSTFILE@", hostFile))
	failed := e.mustRun(1, "apply", "-auto-approve")
	if !strings.Contains(failed.stderr+failed.stdout, "server.f") {
		t.Fatalf("the failing server is not reported: %s", failed)
	}
	check("a failed apply's output", res(failed), v1.all())
	e.write(cfg)
	e.mustRun(0, "apply", "-auto-approve")

	// Rotation: each secret changes; each shows as a change, without its value.
	v2 := secretValues{"pw-sensitive-var-ROTATED", "hf_nameRuleTokenROTATED", "sk-apikey-ROTATED", "host-file-secret-ROTATED", "sk-keyfile-ROTATED"}
	v2.set(t, hostFile, keyFile)
	plan := e.mustRun(2, "plan", "-detailed-exitcode")
	check("the rotation plan", res(plan), append(v1.all(), v2.all()...))
	for _, want := range []string{"HF_TOKEN = (sensitive value changed)", "DB_CONN = (sensitive value changed)",
		"env.WANDB_API_KEY (sensitive value)", "server.k must be replaced", "server.s must be replaced"} {
		if !strings.Contains(plan.stdout, want) {
			t.Errorf("the rotation plan lacks %q:\n%s", want, plan.stdout)
		}
	}
	// Both API keys rotated: the one from a variable and the one in a file.
	if n := strings.Count(plan.stdout, "(api_key (sensitive value) changed)"); n != 2 {
		t.Errorf("the rotation plan shows %d API key changes, want 2:\n%s", n, plan.stdout)
	}
	// Where the file key lives is not secret: a reviewer sees the path.
	if !strings.Contains(plan.stdout, "(from "+keyFile+", read at apply") {
		t.Errorf("the plan hides api_key_file's path:\n%s", plan.stdout)
	}
	check("the rotation plan -json", res(e.mustRun(0, "plan", "-json")), append(v1.all(), v2.all()...))
	check("the rotation apply", res(e.mustRun(0, "apply", "-auto-approve")), append(v1.all(), v2.all()...))
	if again := e.mustRun(0, "plan", "-detailed-exitcode"); !strings.Contains(again.stdout, "No changes") {
		t.Errorf("after applying the rotation the plan still changes:\n%s", again.stdout)
	}

	everything := append(v1.all(), v2.all()...)
	for _, f := range []string{"state.json", "state.json.backup", "journal.jsonl"} {
		b, err := os.ReadFile(filepath.Join(stateDir, f))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		check(f, b, everything)
	}
	logb, err := os.ReadFile(logPath)
	if err != nil || len(logb) == 0 {
		t.Fatalf("ROOFLINE_LOG_PATH wrote nothing: %v", err)
	}
	check("roofline's log", logb, everything)
	if t.Failed() {
		t.Logf("checked: %s", strings.Join(seen, ", "))
	}
}
