package views

import (
	"encoding/json"
	"errors"
	"github.com/roofline/roofline/internal/journal"
	"reflect"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/gate"
	"github.com/roofline/roofline/internal/jsonfill"
	"github.com/roofline/roofline/internal/model"
	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/state/statetest"
)

// benchResult is a finished benchmark with every figure set.
func benchResult() *gate.BenchResult {
	var r gate.BenchResult
	jsonfill.Fill(reflect.ValueOf(&r).Elem(), 2)
	r.Endpoint = gate.EndpointChat
	r.Errors = []string{`HTTP 500: {"error":"<overloaded> & retry"}`}
	r.Duration = 12500 * time.Millisecond
	return &r
}

// benchBare is a run with nothing optional: no concurrency cap, no rate,
// no goodput, no errors, no metrics check.
func benchBare() *gate.BenchResult {
	return &gate.BenchResult{Date: time.Date(2026, 12, 1, 9, 30, 5, 0, time.UTC), BaseURL: "http://127.0.0.1:8000", Model: "qwen3-8b",
		Endpoint: gate.EndpointCompletions, NumPrompts: 64, Duration: 3 * time.Second, Completed: 64, TotalInputTokens: 65536,
		TotalOutputTokens: 8192, RequestThroughput: 21.33, OutputThroughput: 2730.67, TTFT: gate.Stats{Mean: 40.5, Median: 38, P99: 54.25, N: 64}}
}

// modelInfo is a model folder with every fact set (rope scaling and
// quantization as config.json has them).
func modelInfo() *model.Info {
	var info model.Info
	jsonfill.Fill(reflect.ValueOf(&info).Elem(), 3)
	info.Config.RopeScaling = map[string]any{"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
	info.Tensors = []model.Tensor{
		{Name: "model.embed_tokens.weight", Dtype: "BF16", Shape: []int64{151936, 4096}, Bytes: 1244659712, File: "model-00001-of-00002.safetensors", Offsets: [2]int64{0, 1244659712}},
		{Name: "model.layers.0.self_attn.q_proj.weight", Dtype: "BF16", Shape: []int64{4096, 4096}, Bytes: 33554432, File: "model-00002-of-00002.safetensors"},
	}
	info.Problems = []model.Problem{{Severity: model.SeverityWarning, File: "tokenizer.json", Summary: "no tokenizer.json", Detail: "the engine needs one"}}
	return &info
}

// TestGateAndModelJSON pins the bytes of health, smoke, bench and model
// inspect -json (TestModelViews: of a real folder), and of the gate reports
// in the state and the apply stream: users' scripts read them.
func TestGateAndModelJSON(t *testing.T) {
	failed := healthReport()
	failed.OK, failed.Version = false, ""
	failed.Checks = append(failed.Checks, gate.Check{Name: "generation", Detail: `model said "<|im_end|>" & stopped`})
	full := statetest.Server("web")
	full.Gate = &state.GateResult{Passed: false, CheckedAt: time.Date(2026, 1, 2, 3, 11, 0, 0, time.UTC),
		Health: gateReport(t, healthReport()), Smoke: gateReport(t, smokeReport()), Bench: gateReport(t, benchResult().Summary(nil, true))}
	now := func() time.Time { return time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) }
	stream := func(v *View, res *state.GateResult, err error) {
		s := NewStream(v.Out)
		s.Now = now
		NewApplyHooks(s, &plan.JSONPlan{}).GateResult("server.web", res, err)
	}
	runViewCases(t, []viewCase{
		{"health.json", false, func(v *View) { NewChecks(ViewJSON, v).Health("server.web", healthReport().Target, healthReport(), nil) }},
		{"health-failed.json", false, func(v *View) {
			NewChecks(ViewJSON, v).Health("server.web", failed.Target, failed, errors.New("generation failed"))
		}},
		{"smoke.json", false, func(v *View) {
			NewChecks(ViewJSON, v).Smoke("server.web", smokeReport().Target, smokeReport(), errors.New("chat failed"))
		}},
		{"bench.json", false, func(v *View) { NewBench(ViewJSON, v, false).Result(benchResult(), "server.web", true, nil) }},
		{"bench-vllm.json", false, func(v *View) { NewBench(ViewJSON, v, false).Result(vllmBenchResult(), "", false, nil) }},
		{"bench-bare.json", false, func(v *View) { NewBench(ViewJSON, v, false).Result(benchBare(), "", false, nil) }},
		{"bench-compare.json", false, func(v *View) { NewBench(ViewJSON, v, false).Compare("a", "b", benchBare(), benchResult()) }},
		{"model-inspect-full.json", false, func(v *View) { _ = NewModelInspect(ViewJSON, v).Inspect(modelInfo(), true) }},
		{"state-show-gates.json", false, func(v *View) { NewStateShow(ViewJSON, v).Server(full, nil) }},
		{"gate-result.jsonl", false, func(v *View) {
			stream(v, full.Gate, errors.New("smoke: chat failed"))
			stream(v, &state.GateResult{Passed: true, Health: gateReport(t, healthReport())}, nil)
			stream(v, nil, errors.New("the server did not start"))
		}},
	})
}

// TestGateReportsKeepTheirBytes: a gate report the state recorded reads
// into the document's types and prints as the gate wrote it, for every
// field the gate writes.
func TestGateReportsKeepTheirBytes(t *testing.T) {
	rh, rs, rb := filledReports(t)
	dh, ds, db := plan.GateReports(rh, rs, rb)
	for _, c := range []struct {
		name string
		raw  json.RawMessage
		doc  any
	}{{"health", rh, dh}, {"smoke", rs, ds}, {"bench", rb, db}} {
		if got := gateReport(t, c.doc); string(got) != string(c.raw) {
			t.Errorf("%s: the document prints\n%s\nthe gate wrote\n%s", c.name, got, c.raw)
		}
	}
	for _, raw := range []string{"", "null", "[1,2]", `{"ok":`} {
		if h, s, b := plan.GateReports(json.RawMessage(raw), json.RawMessage(raw), json.RawMessage(raw)); h != nil || s != nil || b != nil {
			t.Errorf("%q: got a report, want none", raw)
		}
	}
}

// filledReports are the health, smoke and bench reports as the gates write
// them into the state (internal/gate Runner), every field set.
func filledReports(t *testing.T) (health, smoke, bench json.RawMessage) {
	var h gate.HealthResult
	var s gate.SmokeResult
	var b journal.BenchSummary
	for _, v := range []any{&h, &s, &b} {
		jsonfill.Fill(reflect.ValueOf(v).Elem(), 2)
	}
	return gateReport(t, &h), gateReport(t, &s), gateReport(t, &b)
}

// vllmBenchResult is a run with known figures (internal/gate's fixedResult).
func vllmBenchResult() *gate.BenchResult {
	g := 3.5
	return &gate.BenchResult{
		Date: time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC), BaseURL: "http://127.0.0.1:8000", Model: "qwen3-8b",
		Endpoint: gate.EndpointCompletions, Spec: gate.BenchSpec{InputTokens: 1024, OutputTokens: 128, Warmup: 1}.WithDefaults(),
		NumPrompts: 200, MaxConcurrency: 16, Duration: 12345 * time.Millisecond, Completed: 199, Failed: 1,
		TotalInputTokens: 199 * 1024, TotalOutputTokens: 199 * 128, RequestThroughput: 16.12, RequestGoodput: &g,
		OutputThroughput: 2063.5, TotalTokenThroughput: 18571.2, MaxOutputTokensPerS: 2304, MaxConcurrentRequests: 16,
		TTFT:             gate.Stats{Mean: 120.5, Median: 101.25, Std: 30, P90: 180, P99: 250.75, N: 199},
		TPOT:             gate.Stats{Mean: 7.1, Median: 7, Std: 0.5, P90: 7.8, P99: 8.9, N: 199},
		ITL:              gate.Stats{Mean: 7.05, Median: 6.9, Std: 1.2, P90: 8, P99: 15.5, N: 199 * 127},
		E2EL:             gate.Stats{Mean: 1020, Median: 1000, Std: 60, P90: 1100, P99: 1250, N: 199},
		InputTokensExact: true, Errors: []string{"error inside the stream: InternalServerError: EngineCore encountered an issue."},
		Metrics: &gate.MetricsCheck{Counter: "vllm:generation_tokens_total", ServerTokens: 25472 + 40, ClientTokens: 25472 + 40, OK: true,
			Note: "not compared: 1 failed requests generated tokens the client could not count"},
	}
}

// TestBenchJSONKeys checks our keys against vllm bench serve's (the keys of
// its --save-result file for --percentile-metrics ttft,tpot,itl,e2el
// --metric-percentiles 90,99, without per-request arrays).
func TestBenchJSONKeys(t *testing.T) {
	b, _ := json.Marshal(BenchDocument(vllmBenchResult()))
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	vllmKeys := []string{"date", "backend", "model_id", "num_prompts", "request_rate", "burstiness", "max_concurrency",
		"duration", "completed", "failed", "total_input_tokens", "total_output_tokens", "request_throughput",
		"request_goodput", "output_throughput", "total_token_throughput", "max_output_tokens_per_s", "max_concurrent_requests"}
	for _, m := range []string{"ttft", "tpot", "itl", "e2el"} {
		for _, s := range []string{"mean", "median", "std", "p90", "p99"} {
			vllmKeys = append(vllmKeys, s+"_"+m+"_ms")
		}
	}
	for _, k := range vllmKeys {
		if _, ok := got[k]; !ok {
			t.Errorf("key %q missing", k)
		}
	}
	if got["request_rate"] != "inf" || got["date"] != "20260301-123000" || got["backend"] != "openai" {
		t.Errorf("request_rate %v date %v backend %v", got["request_rate"], got["date"], got["backend"])
	}
}

// TestDocumentsCarryEveryField: with every field of the gate's and the
// model reader's records set, health, smoke and model -json print what the
// records' own JSON says, byte for byte. A field added to one of those
// records fails here until the document (its own type here or in jsonplan)
// decides about it, and docs/json.md says so.
func TestDocumentsCarryEveryField(t *testing.T) {
	var h gate.HealthResult
	var s gate.SmokeResult
	var info model.Info
	var vr model.VerifyResult
	for _, v := range []any{&h, &s, &info, &vr} {
		jsonfill.Fill(reflect.ValueOf(v).Elem(), 3)
	}
	d := ModelInspectDocumentOf(&info, true)
	verify := ModelVerifyDocumentOf(&vr)
	for _, c := range []struct {
		name     string
		record   any
		document any // less what the document adds (verify's ok)
	}{
		{"health", &h, HealthDocument(&h)},
		{"smoke", &s, SmokeDocument(&s)},
		{"model config", info.Config, d.Config},
		{"model shards", info.Shards, d.Shards},
		{"model problems", info.Problems, d.Problems},
		{"model tensors", info.Tensors, d.Tensors},
		{"model verify", &vr, struct {
			Checked    int             `json:"checked"`
			Bytes      int64           `json:"bytes"`
			Missing    []string        `json:"missing,omitempty"`
			Extra      []string        `json:"extra,omitempty"`
			Mismatched []ModelMismatch `json:"mismatched,omitempty"`
		}{verify.Checked, verify.Bytes, verify.Missing, verify.Extra, verify.Mismatched}},
	} {
		want, got := gateReport(t, c.record), gateReport(t, c.document)
		if string(got) != string(want) {
			t.Errorf("%s: the document prints\n%s\nthe record is\n%s", c.name, got, want)
		}
	}
	if verify.OK != vr.OK() {
		t.Errorf("model verify: ok %v, the result says %v", verify.OK, vr.OK())
	}
}
