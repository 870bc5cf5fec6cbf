package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// max_model_len = "auto" (vLLM 0.16.0): plan predicts the context the engine
// picks, apply records what /v1/models says it picked, and a later start
// with the same settings that picks another value is drift. vLLM 0.8.5 has
// no "auto": plan says so.
const autoBase = `
roofline {
  inventory = "gpus.json"
}

engine "vllm" {
  kind      = "vllm"
  version   = "0.16.0"
  rehearsal = true
  env       = { ROOFLINE_REHEARSAL_LOAD_TIME = "300ms", ROOFLINE_REHEARSAL_TTFT = "5ms", ROOFLINE_REHEARSAL_ITL = "2ms" SKEW }
}

engine "old" {
  kind      = "vllm"
  version   = "0.8.5"
  rehearsal = true
}

model "qwen" {
  path        = "@MODELS@/qwen3-8b"
  served_name = "qwen3-8b"
}

server "q" {
  engine                 = engine.ENGINE
  model                  = model.qwen
  gpus                   = [0]
  port                   = @PORT_Q@
  max_model_len          = "auto"
  gpu_memory_utilization = 0.33
}
`

func autoConfig(engine, skew string) string {
	return strings.NewReplacer("ENGINE", engine, "SKEW", skew).Replace(autoBase)
}

type autoPlan struct {
	ResourceChanges []struct {
		Name  string `json:"name"`
		After *struct {
			Auto int `json:"auto_max_model_len"`
		} `json:"after"`
	} `json:"resource_changes"`
	ResourceDrift []struct {
		Summary, Detail string
	} `json:"resource_drift"`
}

func servedLen(t *testing.T, port int) int {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/v1/models", port))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m struct {
		Data []struct {
			MaxModelLen int `json:"max_model_len"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || len(m.Data) == 0 {
		t.Fatalf("/v1/models: %v", err)
	}
	return m.Data[0].MaxModelLen
}

func TestMaxModelLenAuto(t *testing.T) {
	e := newEnv(t, autoConfig("old", ""))
	if r := e.run("plan"); r.code != 1 || !strings.Contains(r.stdout+r.stderr, `max_model_len = "auto" not supported`) {
		t.Fatalf("vLLM 0.8.5 with auto:\n%s", r)
	}

	e.write(autoConfig("vllm", ""))
	var p autoPlan
	r := e.run("plan", "-json")
	if err := json.Unmarshal(planDocument(t, r.stdout), &p); err != nil || len(p.ResourceChanges) != 1 {
		t.Fatalf("plan -json: %v\n%s", err, r)
	}
	predicted := p.ResourceChanges[0].After.Auto
	if predicted <= 0 || predicted >= 40960 {
		t.Fatalf("predicted %d: at utilization 0.33 the model's 40960 does not fit, a shorter context does", predicted)
	}
	if r := e.run("plan"); !strings.Contains(r.stdout, fmt.Sprintf(`max_model_len = "auto": the engine picks %d tokens`, predicted)) {
		t.Errorf("plan text:\n%s", r.stdout)
	}
	e.mustRun(0, "apply", "-auto-approve")
	if got := servedLen(t, e.ports["@PORT_Q@"]); got != predicted {
		t.Fatalf("the engine picked %d, plan predicted %d", got, predicted)
	}
	var recs struct {
		Records []struct {
			Picked   int `json:"picked_max_model_len"`
			Previous int `json:"previous_picked_max_model_len"`
		} `json:"records"`
	}
	raw, _ := os.ReadFile(filepath.Join(e.dir, ".roofline", "calibrations.json"))
	if json.Unmarshal(raw, &recs) != nil || len(recs.Records) != 1 || recs.Records[0].Picked != predicted {
		t.Fatalf("calibrations.json: %s", raw)
	}

	// The engine now measures more activation (as another build or a
	// busier GPU would): the restarted server picks a shorter context, which
	// apply and the next plan report as drift.
	e.write(autoConfig("vllm", `, ROOFLINE_REHEARSAL_MEMORY_SKEW = "activation=+1GiB"`))
	r = e.mustRun(0, "apply", "-auto-approve")
	got := servedLen(t, e.ports["@PORT_Q@"])
	if got >= predicted {
		t.Fatalf("with 1 GiB more activation the engine picked %d, not less than %d", got, predicted)
	}
	if !strings.Contains(r.stdout+r.stderr, fmt.Sprintf(`max_model_len = "auto" picked %d tokens; the previous start with the same settings picked %d`, got, predicted)) {
		t.Errorf("apply did not report the drift:\n%s", r)
	}
	r = e.run("plan", "-json")
	p = autoPlan{}
	_ = json.Unmarshal(planDocument(t, r.stdout), &p)
	found := false
	for _, d := range p.ResourceDrift {
		found = found || (d.Summary == `max_model_len = "auto" picked another context` && strings.Contains(d.Detail, fmt.Sprint(got)))
	}
	if !found {
		t.Errorf("plan -json drift: %+v", p.ResourceDrift)
	}
}
