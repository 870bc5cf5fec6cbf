package e2e

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The rehearsal engine's memory deviates from roofline's model (2 GiB more
// activation, as a newer engine build might measure): one apply records the
// engine's own figures, the next plan predicts "measured" with the engine's
// logged KV tokens exactly, and a server with another context on the same
// engine, GPU kind and architecture is "estimated" with the last residual.
const calibBase = `
roofline {
  inventory = "gpus.json"
}

engine "vllm" {
  kind      = "vllm"
  version   = "0.16.0"
  rehearsal = true
  env       = { ROOFLINE_REHEARSAL_LOAD_TIME = "300ms", ROOFLINE_REHEARSAL_TTFT = "5ms", ROOFLINE_REHEARSAL_ITL = "2ms",
                ROOFLINE_REHEARSAL_MEMORY_SKEW = "activation=+2GiB" }
}

model "qwen" {
  path        = "@MODELS@/qwen3-8b"
  served_name = "qwen3-8b"
}

server "q" {
  engine        = engine.vllm
  model         = model.qwen
  gpus          = [0]
  port          = @PORT_Q@
  max_model_len = 32768
}
`

const calibSecond = `
server "r" {
  engine        = engine.vllm
  model         = model.qwen
  gpus          = [1]
  port          = @PORT_R@
  max_model_len = 16384
}
`

type planCalib struct {
	ResourceChanges []struct {
		Name  string `json:"name"`
		After *struct {
			Calibration *struct {
				Status            string  `json:"status"`
				Residual          float64 `json:"residual"`
				BareKVTokens      int64   `json:"bare_kv_tokens"`
				BareKVBudgetBytes int64   `json:"bare_kv_budget_bytes"`
			} `json:"calibration"`
		} `json:"after"`
		VRAM *struct {
			KVTokens      int64 `json:"kv_tokens"`
			KVBudgetBytes int64 `json:"kv_budget_bytes"`
		} `json:"vram"`
	} `json:"resource_changes"`
}

func (e *env) planJSON() planCalib {
	e.t.Helper()
	r := e.run("plan", "-json")
	var p planCalib
	if err := json.Unmarshal(planDocument(e.t, r.stdout), &p); err != nil {
		e.t.Fatalf("plan -json: %v\n%s", err, r)
	}
	return p
}

var loggedTokens = regexp.MustCompile(`GPU KV cache size: ([\d,]+) tokens`)

func loggedKV(t *testing.T, e *env, name string) int64 {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(e.dir, ".roofline", "logs", name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	m := loggedTokens.FindAllSubmatch(raw, -1)
	if len(m) == 0 {
		t.Fatalf("no KV line in %s's log", name)
	}
	n, _ := strconv.ParseInt(strings.ReplaceAll(string(m[len(m)-1][1]), ",", ""), 10, 64)
	return n
}

func TestCalibration(t *testing.T) {
	e := newEnv(t, calibBase)
	p := e.planJSON()
	if len(p.ResourceChanges) != 1 || p.ResourceChanges[0].After.Calibration.Status != "uncalibrated" {
		t.Fatalf("first plan: %+v", p)
	}
	bare := p.ResourceChanges[0].VRAM.KVTokens
	e.mustRun(0, "apply", "-auto-approve")
	logged := loggedKV(t, e, "q")
	if logged >= bare {
		t.Fatalf("the skew should shrink the KV cache: logged %d, predicted %d", logged, bare)
	}

	// The same server again: measured, the logged tokens exactly.
	p = e.planJSON()
	var q = p.ResourceChanges[0]
	if q.After.Calibration.Status != "measured" || q.VRAM.KVTokens != logged {
		t.Fatalf("second plan: status %q, %d tokens; the engine logged %d", q.After.Calibration.Status, q.VRAM.KVTokens, logged)
	}
	if r := e.mustRun(0, "plan"); !strings.Contains(r.stdout, "prediction: measured (start of q") {
		t.Errorf("plan text:\n%s", r.stdout)
	}
	if st := e.run("status"); !strings.Contains(st.stdout, strconv.FormatInt(logged, 10)) || !strings.Contains(st.stdout, "(uncalibrated)") {
		t.Errorf("status shows the measured tokens and how the start was predicted:\n%s", st.stdout)
	}

	// Another context on the same engine, GPU kind and architecture: the
	// formula corrected by q's residual.
	e.write(calibBase + calibSecond)
	p = e.planJSON()
	var r0 = p.ResourceChanges[0]
	for _, c := range p.ResourceChanges {
		if c.Name == "r" {
			r0 = c
		}
	}
	cal := r0.After.Calibration
	var recs struct {
		Records []struct {
			KVBudgetBytes          int64 `json:"kv_budget_bytes"`
			PredictedKVBudgetBytes int64 `json:"predicted_kv_budget_bytes"`
			CacheConfigBlocks      int64 `json:"cache_config_blocks"`
		} `json:"records"`
	}
	raw, err := os.ReadFile(filepath.Join(e.dir, ".roofline", "calibrations.json"))
	if err != nil || json.Unmarshal(raw, &recs) != nil || len(recs.Records) != 1 {
		t.Fatalf("calibrations.json: %v %s", err, raw)
	}
	want := float64(recs.Records[0].KVBudgetBytes-recs.Records[0].PredictedKVBudgetBytes) / float64(recs.Records[0].PredictedKVBudgetBytes)
	// vllm:cache_config_info from /metrics agrees with the log (block 16).
	if recs.Records[0].CacheConfigBlocks*16 != logged {
		t.Errorf("cache_config_info: %d blocks, the log says %d tokens", recs.Records[0].CacheConfigBlocks, logged)
	}
	if cal.Status != "estimated" || math.Abs(cal.Residual-want) > 1e-12 || want >= 0 {
		t.Fatalf("server r: %+v, want estimated with residual %v", cal, want)
	}
	if r := e.mustRun(2, "plan", "-detailed-exitcode"); !strings.Contains(r.stdout, "prediction: estimated: roofline's formula, corrected by -") {
		t.Errorf("plan text:\n%s", r.stdout)
	}
	// The corrected estimate is what the engine then logs, to the log's
	// two-decimal rounding of the budget; the bare formula is far off.
	predicted := r0.VRAM.KVTokens
	e.mustRun(0, "apply", "-auto-approve")
	got := loggedKV(t, e, "r")
	t.Logf("q: bare %d tokens, logged %d; r: bare %d, estimated %d (residual %+.2f %%), logged %d", bare, logged, cal.BareKVTokens, predicted, 100*cal.Residual, got)
	if math.Abs(float64(predicted-got))/float64(got) > 0.002 {
		t.Errorf("server r: estimated %d tokens, the engine logged %d (bare formula %d)", predicted, got, cal.BareKVTokens)
	}
	if math.Abs(float64(cal.BareKVTokens-got))/float64(got) < 0.02 {
		t.Errorf("the skew should put the bare formula off: bare %d, logged %d", cal.BareKVTokens, got)
	}
}
