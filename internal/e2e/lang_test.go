package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fourGPUs declares one server per GPU with for_each.
const fourGPUs = base + `
locals {
  ports = [@PORT_A@, @PORT_B@, @PORT_C@, @PORT_D@]
}

server "web" {
  for_each      = { for i in range(4) : "gpu${i}" => i }
  engine        = engine.vllm
  model         = model.qwen
  gpus          = [each.value]
  port          = local.ports[each.value]
  max_model_len = 8192
}
`

// TestForEachFourGPUs: a for_each over four GPUs plans four servers and
// applies them; their addresses (server.web["gpu0"]) work in status, logs,
// -target and -replace.
func TestForEachFourGPUs(t *testing.T) {
	e := newEnv(t, fourGPUs)
	e.mustRun(0, "validate")
	plan := e.mustRun(2, "plan", "-detailed-exitcode")
	for i := 0; i < 4; i++ {
		if !strings.Contains(plan.stdout, fmt.Sprintf(`# server.web["gpu%d"] will be created`, i)) {
			t.Fatalf("plan lacks web[gpu%d]:\n%s", i, plan)
		}
	}
	if !strings.Contains(plan.stdout, "Plan: 4 to add, 0 to change, 0 to destroy.") {
		t.Fatalf("plan:\n%s", plan)
	}
	e.mustRun(0, "apply", "-auto-approve")
	st := e.status()
	for i, p := range []string{"@PORT_A@", "@PORT_B@", "@PORT_C@", "@PORT_D@"} {
		name := fmt.Sprintf(`web["gpu%d"]`, i)
		s, ok := st[name]
		if !ok || !s.Running || s.Healthy == nil || !*s.Healthy {
			t.Fatalf("%s: %+v (status: %v)", name, s, st)
		}
		body := `{"model": "qwen3-8b", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, "stream": true}`
		if err := chat(fmt.Sprintf("http://127.0.0.1:%d", e.ports[p]), body); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if r := e.mustRun(0, "logs", `server.web["gpu2"]`, "-n", "3"); r.stdout == "" {
		t.Error("logs of web[gpu2] printed nothing")
	}
	e.mustRun(0, "state", "show", `server.web["gpu1"]`)
	if r := e.mustRun(0, "state", "list"); !strings.Contains(r.stdout, `server.web["gpu3"]`) {
		t.Errorf("state list:\n%s", r)
	}
	r := e.mustRun(2, "plan", "-detailed-exitcode", `-replace=server.web["gpu1"]`)
	if !strings.Contains(r.stdout, `# server.web["gpu1"] must be replaced`) || !strings.Contains(r.stdout, "Plan: 1 to add, 0 to change, 1 to destroy.") {
		t.Errorf("-replace one instance:\n%s", r)
	}
	// Dropping two GPUs from the map destroys those two instances only.
	e.write(strings.Replace(fourGPUs, "range(4)", "range(2)", 1))
	r = e.mustRun(2, "plan", "-detailed-exitcode", "-target=server.web")
	if !strings.Contains(r.stdout, `# server.web["gpu3"] will be destroyed`) || !strings.Contains(r.stdout, "0 to add, 0 to change, 2 to destroy") {
		t.Errorf("plan after dropping two keys:\n%s", r)
	}
	e.mustRun(0, "apply", "-auto-approve")
	st2 := e.status()
	if len(st2) != 2 || st2[`web["gpu0"]`].PID != st[`web["gpu0"]`].PID {
		t.Errorf("after dropping two: %+v", st2)
	}
}

// renameCfg is one create_before_destroy server (fronted by roofline's
// proxy) named NAME, with MOVED appended.
const renameCfg = base + `
server "NAME" {
  engine                 = engine.vllm
  model                  = model.qwen
  gpus                   = [0]
  port                   = @PORT_Q@
  max_model_len          = MAXLEN
  gpu_memory_utilization = 0.45
  lifecycle {
    create_before_destroy = true
  }
}
MOVED
`

func renameConfig(name, maxLen, moved string) string {
	return strings.NewReplacer("NAME", name, "MAXLEN", maxLen, "MOVED", moved).Replace(renameCfg)
}

// TestMovedKeepsServing: renaming a server with a moved block keeps its
// process (same pid) and serves throughout; the state, log, journal and
// proxy take the new name, and a later rollout of the renamed server goes
// through the proxy with no failed request.
func TestMovedKeepsServing(t *testing.T) {
	e := newEnv(t, renameConfig("beta", "32768", ""))
	e.mustRun(0, "apply", "-auto-approve")
	before := e.status()["beta"]
	url := fmt.Sprintf("http://127.0.0.1:%d", e.ports["@PORT_Q@"])
	c := startClient(t, url, "qwen3-8b", 4)
	time.Sleep(200 * time.Millisecond)

	// Renamed without a moved block: a restart, and a hint.
	e.write(renameConfig("gamma", "32768", ""))
	r := e.mustRun(2, "plan", "-detailed-exitcode")
	if !strings.Contains(r.stdout+r.stderr, "Rename with a restart") || !strings.Contains(r.stdout+r.stderr, "from = server.beta") {
		t.Fatalf("no moved hint:\n%s", r)
	}
	e.write(renameConfig("gamma", "32768", "moved {\n  from = server.beta\n  to   = server.gamma\n}\n"))
	r = e.mustRun(2, "plan", "-detailed-exitcode")
	if !strings.Contains(r.stdout, "# server.beta has moved to server.gamma") || !strings.Contains(r.stdout, "Plan: 0 to add, 0 to change, 0 to destroy, 1 to move.") {
		t.Fatalf("plan of a move:\n%s", r)
	}
	e.mustRun(0, "apply", "-auto-approve")
	st := e.status()
	after, ok := st["gamma"]
	if _, still := st["beta"]; still || !ok || after.PID != before.PID || !after.Running {
		t.Fatalf("after the move: %+v (before %+v)", st, before)
	}
	e.mustRun(0, "plan", "-detailed-exitcode")
	if r := e.mustRun(0, "logs", "gamma", "-n", "0"); !strings.Contains(r.stdout, "Application startup complete") && r.stdout == "" {
		t.Errorf("logs gamma after the move:\n%s", r)
	}
	if r := e.mustRun(0, "journal", "gamma"); !strings.Contains(r.stdout, "beta") {
		t.Errorf("journal gamma does not show beta's history:\n%s", r)
	}

	// A rollout of the renamed server still switches through its proxy.
	e.write(renameConfig("gamma", "16384", "moved {\n  from = server.beta\n  to   = server.gamma\n}\n"))
	e.mustRun(0, "apply", "-auto-approve")
	time.Sleep(200 * time.Millisecond)
	okN, failed := c.finish()
	if len(failed) > 0 || okN == 0 {
		t.Fatalf("%d requests ok, %d failed across the move and the rollout: %v", okN, len(failed), failed[:min(5, len(failed))])
	}
	if g := e.status()["gamma"]; g.PID == before.PID || !g.Running {
		t.Errorf("the rollout after the move did not replace the engine: %+v", g)
	}
	t.Logf("move then rollout: %d requests, none failed", okN)
}

// TestStateMv: state mv renames without touching the process.
func TestStateMv(t *testing.T) {
	e := newEnv(t, strings.Replace(fourGPUs, "range(4)", "range(1)", 1))
	e.mustRun(0, "apply", "-auto-approve")
	before := e.status()[`web["gpu0"]`]
	r := e.mustRun(0, "state", "mv", `server.web["gpu0"]`, "server.solo")
	if !strings.Contains(r.stdout, "Successfully moved 1 object(s).") {
		t.Fatalf("state mv:\n%s", r)
	}
	after := e.status()["solo"]
	if after.PID != before.PID || !after.Running {
		t.Fatalf("state mv touched the process: %+v -> %+v", before, after)
	}
	e.mustRun(0, "logs", "solo", "-n", "1")
	if r := e.run("state", "mv", "server.nope", "server.x"); r.code != 1 || !strings.Contains(r.stderr, "not in the state") {
		t.Errorf("state mv of a missing server:\n%s", r)
	}
	// Put it back for cleanup by destroy.
	e.mustRun(0, "state", "mv", "server.solo", `server.web["gpu0"]`)
}

const moduleSrc = `
variable "port" {
  type = number
}

variable "model_path" {
  type = string
}

engine "vllm" {
  kind      = "vllm"
  version   = "0.16.0"
  rehearsal = true
  env       = { ROOFLINE_REHEARSAL_LOAD_TIME = "300ms" }
}

model "qwen3" {
  path        = var.model_path
  served_name = "qwen3-8b"
}

server "qwen3" {
  engine        = engine.vllm
  model         = model.qwen3
  gpus          = [0]
  port          = var.port
  max_model_len = 8192
}

output "base_url" {
  value = server.qwen3.base_url
}
`

// TestModuleServer: a server declared in a local module plans, applies and
// answers under its nested address module.chat.server.qwen3.
func TestModuleServer(t *testing.T) {
	e := newEnv(t, `
roofline {
  inventory = "gpus.json"
}

module "chat" {
  source     = "./modules/qwen3"
  port       = @PORT_M@
  model_path = "@MODELS@/qwen3-8b"
}

output "chat" {
  value = module.chat.base_url
}
`)
	if err := os.MkdirAll(filepath.Join(e.dir, "modules", "qwen3"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.dir, "modules", "qwen3", "main.hcl"), []byte(moduleSrc), 0o644); err != nil {
		t.Fatal(err)
	}
	e.mustRun(0, "validate")
	r := e.mustRun(2, "plan", "-detailed-exitcode")
	if !strings.Contains(r.stdout, "# module.chat.server.qwen3 will be created") {
		t.Fatalf("plan:\n%s", r)
	}
	e.mustRun(0, "apply", "-auto-approve")
	st := e.status()
	if s := st["module.chat.server.qwen3"]; !s.Running || s.Healthy == nil || !*s.Healthy {
		t.Fatalf("status: %+v", st)
	}
	url := e.mustRun(0, "output", "-raw", "chat").stdout
	if url != fmt.Sprintf("http://127.0.0.1:%d/v1", e.ports["@PORT_M@"]) {
		t.Errorf("output chat = %q", url)
	}
	body := `{"model": "qwen3-8b", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, "stream": true}`
	if err := chat(strings.TrimSuffix(url, "/v1"), body); err != nil {
		t.Fatal(err)
	}
	e.mustRun(0, "logs", "module.chat.server.qwen3", "-n", "2")
	e.mustRun(0, "state", "show", "module.chat.server.qwen3")
	e.mustRun(0, "plan", "-detailed-exitcode")
}
