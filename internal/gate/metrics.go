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
	"github.com/roofline/roofline/internal/engine"
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

// generationCounter is the server-side count of generated tokens of
// engine, "" for none known.
func generationCounter(engine string) string {
	if k := kindOf(engine); k != nil {
		return k.GenerationCounter
	}
	return ""
}

// detectEngine guesses the engine from the metric names.
func (m *Metrics) detectEngine() string {
	for _, k := range engine.Kinds() {
		if len(m.Prefixed(k.MetricPrefix)) > 0 {
			return k.Name
		}
	}
	return ""
}

// missing returns what of the engine's expected series is absent.
func (m *Metrics) missing(k *engine.Kind) []string {
	var out []string
	for _, g := range k.ExpectedMetrics {
		found := false
		for _, n := range g.Names {
			if m.Has(n) {
				found = true
				break
			}
		}
		if !found {
			out = append(out, fmt.Sprintf("%s (%s)", g.Names[0], g.What))
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
