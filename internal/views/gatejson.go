package views

import (
	"encoding/json"
	"io"

	"github.com/roofline/roofline/internal/gate"
	"github.com/roofline/roofline/internal/jsonplan"
)

// The gate commands' JSON (health -json, smoke -json, bench -json) is
// roofline's own: the gate's results are converted here field by field, so
// a change in internal/gate reaches users' scripts only through this file
// (docs/json.md). health and smoke print the reports the plan document
// shows under before.gate (jsonplan); bench prints vllm bench serve's
// --save-result layout.

// HealthDocument is health -json: the health gate's report.
func HealthDocument(r *gate.HealthResult) *jsonplan.HealthReport {
	if r == nil {
		return nil
	}
	return &jsonplan.HealthReport{Target: gateTarget(r.Target), OK: r.OK, Version: r.Version, Engine: r.Engine, Checks: gateChecks(r.Checks)}
}

// SmokeDocument is smoke -json: the smoke test's report.
func SmokeDocument(r *gate.SmokeResult) *jsonplan.SmokeReport {
	if r == nil {
		return nil
	}
	return &jsonplan.SmokeReport{Target: gateTarget(r.Target), OK: r.OK, Steps: gateChecks(r.Steps)}
}

// gateTarget leaves the API key out, as the gate's own JSON does.
func gateTarget(t gate.Target) jsonplan.GateTarget {
	return jsonplan.GateTarget{BaseURL: t.BaseURL, Model: t.Model, Engine: t.Engine}
}

func gateChecks(cs []gate.Check) []jsonplan.GateCheck {
	if cs == nil {
		return nil
	}
	out := make([]jsonplan.GateCheck, len(cs))
	for i, c := range cs {
		out[i] = jsonplan.GateCheck{Name: c.Name, OK: c.OK, Skipped: c.Skipped, Detail: c.Detail, ElapsedMS: c.ElapsedMS}
	}
	return out
}

// BenchReport is bench -json: a run in vllm bench serve's --save-result
// layout, its key names where it has them (dashboards built on vLLM's JSON
// read ours), roofline's additions after them.
type BenchReport struct {
	Date           string    `json:"date"` // 20060102-150405, as vLLM writes it
	Backend        string    `json:"backend"`
	ModelID        string    `json:"model_id"`
	NumPrompts     int       `json:"num_prompts"`
	RequestRate    BenchRate `json:"request_rate"`
	Burstiness     float64   `json:"burstiness"`
	MaxConcurrency *int      `json:"max_concurrency"` // null: no cap

	Duration             float64  `json:"duration"`
	Completed            int      `json:"completed"`
	Failed               int      `json:"failed"`
	TotalInputTokens     int      `json:"total_input_tokens"`
	TotalOutputTokens    int      `json:"total_output_tokens"`
	RequestThroughput    float64  `json:"request_throughput"`
	RequestGoodput       *float64 `json:"request_goodput"`
	OutputThroughput     float64  `json:"output_throughput"`
	TotalTokenThroughput float64  `json:"total_token_throughput"`
	MaxOutputTokensPerS  float64  `json:"max_output_tokens_per_s"`
	MaxConcurrentReqs    int      `json:"max_concurrent_requests"`

	MeanTTFT   float64 `json:"mean_ttft_ms"`
	MedianTTFT float64 `json:"median_ttft_ms"`
	StdTTFT    float64 `json:"std_ttft_ms"`
	P90TTFT    float64 `json:"p90_ttft_ms"`
	P99TTFT    float64 `json:"p99_ttft_ms"`
	MeanTPOT   float64 `json:"mean_tpot_ms"`
	MedianTPOT float64 `json:"median_tpot_ms"`
	StdTPOT    float64 `json:"std_tpot_ms"`
	P90TPOT    float64 `json:"p90_tpot_ms"`
	P99TPOT    float64 `json:"p99_tpot_ms"`
	MeanITL    float64 `json:"mean_itl_ms"`
	MedianITL  float64 `json:"median_itl_ms"`
	StdITL     float64 `json:"std_itl_ms"`
	P90ITL     float64 `json:"p90_itl_ms"`
	P99ITL     float64 `json:"p99_itl_ms"`
	MeanE2EL   float64 `json:"mean_e2el_ms"`
	MedianE2EL float64 `json:"median_e2el_ms"`
	StdE2EL    float64 `json:"std_e2el_ms"`
	P90E2EL    float64 `json:"p90_e2el_ms"`
	P99E2EL    float64 `json:"p99_e2el_ms"`

	// roofline's additions.
	BaseURL           string             `json:"base_url"`
	Endpoint          string             `json:"endpoint"`
	InputLen          int                `json:"input_len"`
	OutputLen         int                `json:"output_len"`
	InputTokensExact  bool               `json:"input_tokens_exact"`
	NumWarmups        int                `json:"num_warmups"`
	MeanClientQueue   float64            `json:"mean_client_queue_ms"`
	P99ClientQueue    float64            `json:"p99_client_queue_ms"`
	OutputLenMismatch int                `json:"output_len_mismatch"`
	Errors            []string           `json:"errors"`
	MetricsCheck      *BenchMetricsCheck `json:"metrics_check"`
}

// BenchRate is a configured request rate; 0 (none: a closed loop) is
// written "inf", as vLLM writes it.
type BenchRate float64

// MarshalJSON writes the rate, or "inf".
func (r BenchRate) MarshalJSON() ([]byte, error) {
	if r <= 0 {
		return []byte(`"inf"`), nil
	}
	return json.Marshal(float64(r))
}

// BenchMetricsCheck compares the server's generation-token counter with
// the completion tokens its usage reported.
type BenchMetricsCheck struct {
	Counter      string  `json:"counter"`
	ServerTokens float64 `json:"server_generation_tokens"`
	ClientTokens int     `json:"client_generation_tokens"`
	OK           bool    `json:"ok"`
	Note         string  `json:"note,omitempty"`
}

// BenchComparison is bench -json of two servers (-compare).
type BenchComparison struct {
	A *BenchReport `json:"a"`
	B *BenchReport `json:"b"`
}

// BenchDocument converts a run into bench -json's layout.
func BenchDocument(r *gate.BenchResult) *BenchReport {
	if r == nil {
		return nil
	}
	j := &BenchReport{
		Date: r.Date.Format("20060102-150405"), Backend: "openai", ModelID: r.Model, NumPrompts: r.NumPrompts,
		RequestRate: BenchRate(r.RequestRate), Burstiness: 1,
		Duration: r.Duration.Seconds(), Completed: r.Completed, Failed: r.Failed,
		TotalInputTokens: r.TotalInputTokens, TotalOutputTokens: r.TotalOutputTokens,
		RequestThroughput: r.RequestThroughput, RequestGoodput: r.RequestGoodput,
		OutputThroughput: r.OutputThroughput, TotalTokenThroughput: r.TotalTokenThroughput,
		MaxOutputTokensPerS: r.MaxOutputTokensPerS, MaxConcurrentReqs: r.MaxConcurrentRequests,
		MeanTTFT: r.TTFT.Mean, MedianTTFT: r.TTFT.Median, StdTTFT: r.TTFT.Std, P90TTFT: r.TTFT.P90, P99TTFT: r.TTFT.P99,
		MeanTPOT: r.TPOT.Mean, MedianTPOT: r.TPOT.Median, StdTPOT: r.TPOT.Std, P90TPOT: r.TPOT.P90, P99TPOT: r.TPOT.P99,
		MeanITL: r.ITL.Mean, MedianITL: r.ITL.Median, StdITL: r.ITL.Std, P90ITL: r.ITL.P90, P99ITL: r.ITL.P99,
		MeanE2EL: r.E2EL.Mean, MedianE2EL: r.E2EL.Median, StdE2EL: r.E2EL.Std, P90E2EL: r.E2EL.P90, P99E2EL: r.E2EL.P99,
		BaseURL: r.BaseURL, Endpoint: r.Endpoint, InputLen: r.Spec.InputTokens, OutputLen: r.Spec.OutputTokens,
		InputTokensExact: r.InputTokensExact, NumWarmups: r.Spec.Warmup,
		MeanClientQueue: r.ClientQueue.Mean, P99ClientQueue: r.ClientQueue.P99,
		OutputLenMismatch: r.OutputLenMismatch, Errors: r.Errors,
	}
	if r.Endpoint == gate.EndpointChat {
		j.Backend = "openai-chat"
	}
	if r.MaxConcurrency > 0 {
		c := r.MaxConcurrency
		j.MaxConcurrency = &c
	}
	if j.Errors == nil {
		j.Errors = []string{}
	}
	if m := r.Metrics; m != nil {
		j.MetricsCheck = &BenchMetricsCheck{Counter: m.Counter, ServerTokens: m.ServerTokens, ClientTokens: m.ClientTokens, OK: m.OK, Note: m.Note}
	}
	return j
}

// writeEscaped writes indented JSON with HTML characters escaped (\u003c),
// as bench and model -json always have.
func writeEscaped(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
