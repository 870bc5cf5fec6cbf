package gate

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metrics is a parsed /metrics page.
type Metrics struct {
	Families map[string]*dto.MetricFamily
}

// ParseMetrics parses the Prometheus text format. (The zero
// expfmt.TextParser panics; NewTextParser with UTF-8 names accepts vLLM's
// "vllm:" names.)
func ParseMetrics(b []byte) (m *Metrics, err error) {
	defer func() {
		// The parser is third-party code reading engine output: a panic in
		// it must become an error, never a crash of apply.
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("parsing /metrics: %v", r)
		}
	}()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("/metrics is not in the Prometheus text format: %w", err)
	}
	return &Metrics{Families: fams}, nil
}

// Has reports whether a family of that name exists. Counters may be listed
// with or without their _total suffix by different client versions.
func (m *Metrics) Has(name string) bool {
	if m == nil {
		return false
	}
	if _, ok := m.Families[name]; ok {
		return true
	}
	if base, ok := strings.CutSuffix(name, "_total"); ok {
		_, ok := m.Families[base]
		return ok
	}
	return false
}

// Sum adds the values of every series of a counter or gauge family (all
// label sets: engines label by model and engine index). ok is false when the
// family is absent.
func (m *Metrics) Sum(name string) (v float64, ok bool) {
	if m == nil {
		return 0, false
	}
	f, found := m.Families[name]
	if !found {
		if base, cut := strings.CutSuffix(name, "_total"); cut {
			f, found = m.Families[base]
		}
	}
	if !found {
		return 0, false
	}
	for _, s := range f.GetMetric() {
		switch {
		case s.GetCounter() != nil:
			v += s.GetCounter().GetValue()
		case s.GetGauge() != nil:
			v += s.GetGauge().GetValue()
		case s.GetUntyped() != nil:
			v += s.GetUntyped().GetValue()
		}
	}
	return v, true
}

// Prefixed returns the sorted family names that start with prefix.
func (m *Metrics) Prefixed(prefix string) []string {
	var out []string
	for name := range m.Families {
		if strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// metricGroup is one thing a health check expects on /metrics, with the
// names it has had across versions (any one satisfies it).
type metricGroup struct {
	what  string
	names []string
}

// expectedMetrics lists, per engine, the series the health gate requires
// (engines.md §7). vLLM renamed the KV gauge (gpu_cache_usage_perc →
// kv_cache_usage_perc) and the ITL histogram (time_per_output_token_seconds
// → inter_token_latency_seconds); both spellings are accepted.
var expectedMetrics = map[string][]metricGroup{
	EngineVLLM: {
		{"running requests", []string{"vllm:num_requests_running"}},
		{"waiting requests", []string{"vllm:num_requests_waiting"}},
		{"KV cache usage", []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"}},
		{"prompt tokens", []string{"vllm:prompt_tokens_total"}},
		{"generation tokens", []string{"vllm:generation_tokens_total"}},
		{"time to first token", []string{"vllm:time_to_first_token_seconds"}},
	},
	EngineSGLang: {
		{"running requests", []string{"sglang:num_running_reqs"}},
		{"queued requests", []string{"sglang:num_queue_reqs"}},
		{"KV token usage", []string{"sglang:token_usage"}},
		{"prompt tokens", []string{"sglang:prompt_tokens_total"}},
		{"generation tokens", []string{"sglang:generation_tokens_total"}},
		{"time to first token", []string{"sglang:time_to_first_token_seconds"}},
	},
}

// generationCounter is the server-side count of generated tokens.
var generationCounter = map[string]string{
	EngineVLLM:   "vllm:generation_tokens_total",
	EngineSGLang: "sglang:generation_tokens_total",
}

// detectEngine guesses the engine from the metric names.
func (m *Metrics) detectEngine() string {
	switch {
	case len(m.Prefixed("vllm:")) > 0:
		return EngineVLLM
	case len(m.Prefixed("sglang:")) > 0:
		return EngineSGLang
	}
	return ""
}

// missing returns what of the engine's expected series is absent.
func (m *Metrics) missing(engine string) []string {
	var out []string
	for _, g := range expectedMetrics[engine] {
		found := false
		for _, n := range g.names {
			if m.Has(n) {
				found = true
				break
			}
		}
		if !found {
			out = append(out, fmt.Sprintf("%s (%s)", g.names[0], g.what))
		}
	}
	return out
}

// scrapeMetrics fetches and parses /metrics. status is the HTTP status.
func scrapeMetrics(ctx context.Context, c *http.Client, t Target) (*Metrics, int, error) {
	status, body, err := getJSON(ctx, c, t, "/metrics", nil)
	if err != nil {
		return nil, status, err
	}
	if status != http.StatusOK {
		return nil, status, fmt.Errorf("/metrics answered HTTP %d", status)
	}
	m, err := ParseMetrics(body)
	return m, status, err
}
