package gate

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/journal"
)

// benchJSON is BenchResult in vllm bench serve's --save-result layout:
// its key names where it has them, so dashboards built on vLLM's JSON read
// ours; roofline's additions follow.
type benchJSON struct {
	Date           string  `json:"date"`
	Backend        string  `json:"backend"`
	ModelID        string  `json:"model_id"`
	NumPrompts     int     `json:"num_prompts"`
	RequestRate    any     `json:"request_rate"` // "inf" for none, as vLLM writes it
	Burstiness     float64 `json:"burstiness"`
	MaxConcurrency *int    `json:"max_concurrency"`

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
	BaseURL           string        `json:"base_url"`
	Endpoint          string        `json:"endpoint"`
	InputLen          int           `json:"input_len"`
	OutputLen         int           `json:"output_len"`
	InputTokensExact  bool          `json:"input_tokens_exact"`
	NumWarmups        int           `json:"num_warmups"`
	MeanClientQueue   float64       `json:"mean_client_queue_ms"`
	P99ClientQueue    float64       `json:"p99_client_queue_ms"`
	OutputLenMismatch int           `json:"output_len_mismatch"`
	Errors            []string      `json:"errors"`
	MetricsCheck      *MetricsCheck `json:"metrics_check"`
}

// MarshalJSON writes vLLM's result keys (see benchJSON).
func (r *BenchResult) MarshalJSON() ([]byte, error) {
	j := benchJSON{
		Date: r.Date.Format("20060102-150405"), Backend: "openai", ModelID: r.Model, NumPrompts: r.NumPrompts,
		RequestRate: "inf", Burstiness: 1,
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
		OutputLenMismatch: r.OutputLenMismatch, Errors: r.Errors, MetricsCheck: r.Metrics,
	}
	if r.Endpoint == EndpointChat {
		j.Backend = "openai-chat"
	}
	if r.RequestRate > 0 {
		j.RequestRate = r.RequestRate
	}
	if r.MaxConcurrency > 0 {
		c := r.MaxConcurrency
		j.MaxConcurrency = &c
	}
	if j.Errors == nil {
		j.Errors = []string{}
	}
	return json.Marshal(j)
}

// vLLM prints "{:<40} {:<10}" lines under banners centred in 50 columns.
func line(w io.Writer, label string, v any) {
	var s string
	switch x := v.(type) {
	case float64:
		s = fmt.Sprintf("%.2f", x)
	default:
		s = fmt.Sprint(x)
	}
	fmt.Fprintf(w, "%-40s %s\n", label, s)
}

// banner centres title in width fill characters as Python's "{:c^n}" does
// (the odd one goes right).
func banner(title string, fill byte, width int) string {
	pad := max(width-len(title), 0)
	left := pad / 2
	return strings.Repeat(string(fill), left) + title + strings.Repeat(string(fill), pad-left)
}

// Render writes the result as vllm bench serve prints it, with the
// End-to-end Latency section and P90 and P99 (its --percentile-metrics
// ttft,tpot,itl,e2el --metric-percentiles 90,99), then roofline's notes.
func (r *BenchResult) Render(w io.Writer) {
	fmt.Fprintln(w, banner(" Serving Benchmark Result ", '=', 50))
	line(w, "Successful requests:", r.Completed)
	line(w, "Failed requests:", r.Failed)
	if r.MaxConcurrency > 0 {
		line(w, "Maximum request concurrency:", r.MaxConcurrency)
	}
	if r.RequestRate > 0 {
		line(w, "Request rate configured (RPS):", r.RequestRate)
	}
	line(w, "Benchmark duration (s):", r.Duration.Seconds())
	line(w, "Total input tokens:", r.TotalInputTokens)
	line(w, "Total generated tokens:", r.TotalOutputTokens)
	line(w, "Request throughput (req/s):", r.RequestThroughput)
	if r.RequestGoodput != nil {
		line(w, "Request goodput (req/s):", *r.RequestGoodput)
	}
	line(w, "Output token throughput (tok/s):", r.OutputThroughput)
	line(w, "Peak output token throughput (tok/s):", r.MaxOutputTokensPerS)
	line(w, "Peak concurrent requests:", float64(r.MaxConcurrentRequests))
	line(w, "Total token throughput (tok/s):", r.TotalTokenThroughput)
	for _, m := range metricSections(r) {
		fmt.Fprintln(w, banner(m.header, '-', 50))
		line(w, "Mean "+m.name+" (ms):", m.s.Mean)
		line(w, "Median "+m.name+" (ms):", m.s.Median)
		line(w, "P90 "+m.name+" (ms):", m.s.P90)
		line(w, "P99 "+m.name+" (ms):", m.s.P99)
	}
	fmt.Fprintln(w, strings.Repeat("=", 50))
	for _, n := range r.Notes() {
		fmt.Fprintln(w, n)
	}
}

type metricSection struct {
	key, name, header string
	s                 Stats
}

func metricSections(r *BenchResult) []metricSection {
	return []metricSection{
		{"ttft", "TTFT", "Time to First Token", r.TTFT},
		{"tpot", "TPOT", "Time per Output Token (excl. 1st token)", r.TPOT},
		{"itl", "ITL", "Inter-token Latency", r.ITL},
		{"e2el", "E2EL", "End-to-end Latency", r.E2EL},
	}
}

// Notes are the warnings a reader of the figures needs.
func (r *BenchResult) Notes() []string {
	var out []string
	if !r.InputTokensExact {
		out = append(out, fmt.Sprintf("Note: input lengths are approximate (text prompts of about %d tokens); the totals above are the server's usage counts.", r.Spec.InputTokens))
	}
	if r.OutputLenMismatch > 0 {
		out = append(out, fmt.Sprintf("Warning: %d of %d requests did not generate exactly %d tokens: the server ignored ignore_eos or min_tokens, so throughput is not comparable with other runs.", r.OutputLenMismatch, r.Completed, r.Spec.OutputTokens))
	}
	if m := r.Metrics; m != nil {
		if m.OK && m.Note == "" {
			out = append(out, fmt.Sprintf("Token counts agree with the server's %s (%.0f).", m.Counter, m.ServerTokens))
		} else if m.Note != "" {
			prefix := "Warning: "
			if m.OK {
				prefix = "Note: "
			}
			out = append(out, prefix+m.Note+".")
		}
	}
	if r.Failed > 0 {
		out = append(out, fmt.Sprintf("%d requests failed; the first errors:", r.Failed))
		for _, e := range r.Errors {
			out = append(out, "  "+e)
		}
	}
	return out
}

// RenderCompare prints two results of identical loads side by side, with
// the ratio b/a.
func RenderCompare(w io.Writer, nameA, nameB string, a, b *BenchResult) {
	fmt.Fprintln(w, banner(" Serving Benchmark Comparison ", '=', 80))
	// Names are often long and alike (server.qwen3_old, server.qwen3_new):
	// the columns are A and B, named in full above them.
	fmt.Fprintf(w, "A = %s\nB = %s\n", nameA, nameB)
	fmt.Fprintf(w, "%-40s %12s %12s %10s\n", "", "A", "B", "B/A")
	row := func(label string, x, y float64, isInt bool) {
		f := "%12.2f"
		if isInt {
			f = "%12.0f"
		}
		ratio := "-"
		if x != 0 {
			ratio = fmt.Sprintf("%.2fx", y/x)
		}
		fmt.Fprintf(w, "%-40s "+f+" "+f+" %10s\n", label, x, y, ratio)
	}
	row("Successful requests:", float64(a.Completed), float64(b.Completed), true)
	row("Failed requests:", float64(a.Failed), float64(b.Failed), true)
	row("Benchmark duration (s):", a.Duration.Seconds(), b.Duration.Seconds(), false)
	row("Total input tokens:", float64(a.TotalInputTokens), float64(b.TotalInputTokens), true)
	row("Total generated tokens:", float64(a.TotalOutputTokens), float64(b.TotalOutputTokens), true)
	row("Request throughput (req/s):", a.RequestThroughput, b.RequestThroughput, false)
	row("Output token throughput (tok/s):", a.OutputThroughput, b.OutputThroughput, false)
	row("Peak output token throughput (tok/s):", a.MaxOutputTokensPerS, b.MaxOutputTokensPerS, false)
	row("Total token throughput (tok/s):", a.TotalTokenThroughput, b.TotalTokenThroughput, false)
	sa, sb := metricSections(a), metricSections(b)
	for i := range sa {
		fmt.Fprintln(w, banner(sa[i].header, '-', 80))
		row("Mean "+sa[i].name+" (ms):", sa[i].s.Mean, sb[i].s.Mean, false)
		row("Median "+sa[i].name+" (ms):", sa[i].s.Median, sb[i].s.Median, false)
		row("P90 "+sa[i].name+" (ms):", sa[i].s.P90, sb[i].s.P90, false)
		row("P99 "+sa[i].name+" (ms):", sa[i].s.P99, sb[i].s.P99, false)
	}
	fmt.Fprintln(w, strings.Repeat("=", 80))
	fmt.Fprintf(w, "A = %s (%s)\nB = %s (%s)\n", nameA, a.BaseURL, nameB, b.BaseURL)
}

// Summary is what the journal keeps of r; violations, when thresholds were
// checked, give the verdict.
func (r *BenchResult) Summary(violations []Violation, checked bool) *journal.BenchSummary {
	s := &journal.BenchSummary{
		Endpoint: r.Endpoint, MaxConcurrency: r.MaxConcurrency, RequestRate: r.RequestRate,
		NumPrompts: r.NumPrompts, InputTokens: r.Spec.InputTokens, OutputTokens: r.Spec.OutputTokens,
		Duration: r.Duration.Seconds(), Completed: r.Completed, Failed: r.Failed,
		RequestThroughput: r.RequestThroughput, OutputThroughput: r.OutputThroughput,
		TotalTokenThroughput: r.TotalTokenThroughput,
		MedianTTFTMs:         r.TTFT.Median, P99TTFTMs: r.TTFT.P99,
		MedianTPOTMs: r.TPOT.Median, P99TPOTMs: r.TPOT.P99,
		MedianITLMs: r.ITL.Median, P99ITLMs: r.ITL.P99,
		MedianE2ELMs: r.E2EL.Median, P99E2ELMs: r.E2EL.P99,
	}
	if checked {
		pass := len(violations) == 0
		s.Passed = &pass
		for _, v := range violations {
			s.Violations = append(s.Violations, v.Message)
		}
	}
	return s
}

// ConfiguredServed is what the journal records of a bench of a configured
// server roofline has no state record of: its GPUs, the served model name
// (model) and folder, and the engine's kind, version and identity (its
// image, "rehearsal", or its command line) from the configuration.
func ConfiguredServed(srv *config.Server, eng *config.Engine, mod *config.Model, model string) journal.Served {
	served := journal.Served{Server: srv.Name, Model: journal.ModelInfo{Name: model}, GPUs: srv.GPUs}
	if eng != nil {
		served.Engine = journal.EngineInfo{Kind: eng.Kind, Version: eng.Version, Identity: eng.Image}
		switch {
		case eng.Image != "":
		case eng.Rehearsal:
			served.Engine.Identity = "rehearsal"
		case len(eng.Command) > 0:
			served.Engine.Identity = strings.Join(eng.Command, " ")
		}
	}
	if mod != nil {
		served.Model.Path = mod.Path
	}
	return served
}
