package gate

import (
	"fmt"
	"io"
	"strings"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/journal"
)

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
