package e2e

import (
	"fmt"
	"strings"
	"testing"
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
