package engine

import (
	"slices"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine/kinds"
)

// TestRegistry: every kind name has its registered Kind, and nothing else
// is registered.
func TestRegistry(t *testing.T) {
	var got []string
	for _, k := range Kinds() {
		got = append(got, k.Name)
		if k.Display == "" || k.DefaultHost == "" || k.MetricPrefix == "" || k.GenerationCounter == "" || len(k.ExpectedMetrics) == 0 ||
			k.multiNode == nil || k.DefaultMemoryUtilization <= 0 || k.DefaultMemoryUtilization >= 1 || k.APIKeyVia == "" ||
			k.logs.Kind != k.Name || len(k.logs.Failures) == 0 || len(k.logs.Starts) == 0 || len(k.logs.Consequences) == 0 || len(k.logs.Footprint) == 0 ||
			len(k.logs.Progress) == 0 || len(k.logs.Frames) == 0 {
			t.Errorf("kind %q leaves a field empty: %+v", k.Name, k)
		}
	}
	if !slices.Equal(got, kinds.Names()) {
		t.Errorf("registered kinds %v, kind names %v", got, kinds.Names())
	}
	if Lookup("tgi") != nil || Lookup("") != nil {
		t.Error("Lookup of a kind roofline does not run must be nil")
	}
	if LookupOrDefault("") != Default() {
		t.Error("LookupOrDefault(\"\") must be the default kind")
	}
}

// TestAttrTable: the flag table each kind answers AttrOf from (plan names
// the attribute of a recorded command line's flag with it) is the
// renderer's own: every flag a render writes is in it with the attribute
// the render recorded, and every flag in it is written by some render.
func TestAttrTable(t *testing.T) {
	// vLLM's --max-num-batched-tokens renders from either batching
	// attribute; a recorded command line names the first.
	ambiguous := map[string]bool{"vllm:--max-num-batched-tokens": true}
	for _, name := range kinds.Names() {
		k := Lookup(name)
		seen := map[string]bool{}
		variants := []func(s *config.Server){
			func(s *config.Server) { s.PipelineParallel = 2 },
			func(s *config.Server) {
				s.ChunkedPrefillSize, s.MaxNumBatchedTokens = -1, 0
				s.EnforceEager = true
				f := false
				s.EnablePrefixCaching = &f
			},
			func(s *config.Server) { s.ChunkedPrefillSize, s.MaxNumBatchedTokens = 4096, 0; s.KVCacheDtype = "auto" },
		}
		for i, v := range variants {
			s := testServer(name)
			s.KVCacheDtype = "auto"
			v(s)
			e := testEngine(name, "0.9.0")
			l, diags := Render(s, testModel(), e, nil)
			if l == nil {
				t.Fatalf("%s variant %d: %v", name, i, diags)
			}
			for flag, attr := range l.Attrs {
				seen[flag] = true
				want, ok := k.AttrOf(flag)
				switch {
				case !ok:
					t.Errorf("%s renders %s (from %q), which its flag table lacks", name, flag, attr)
				case want != attr && !ambiguous[name+":"+flag]:
					t.Errorf("%s renders %s from %q; its flag table says %q", name, flag, attr, want)
				}
			}
		}
		for flag := range k.attrs {
			if !seen[flag] {
				t.Errorf("%s's flag table has %s, which no render writes", name, flag)
			}
		}
	}
	if got := FlagAttr("--context-length"); got != "max_model_len" {
		t.Errorf("FlagAttr(--context-length) = %q", got)
	}
	if got := FlagAttr("--enable-metrics"); got != "extra_args --enable-metrics" {
		t.Errorf("FlagAttr(--enable-metrics) = %q: a flag no attribute sets is named as extra_args", got)
	}
}

// TestRenderUnknownKind: a kind no Kind answers for is a diagnostic, never a
// panic.
func TestRenderUnknownKind(t *testing.T) {
	e := testEngine(kinds.VLLM, "0.16.0")
	e.Kind = "tgi"
	l, diags := Render(testServer(kinds.VLLM), testModel(), e, nil)
	if l != nil || !diags.HasErrors() || !strings.Contains(diags.Error(), `kind "tgi"`) {
		t.Errorf("launch %v, diagnostics %v", l, diags)
	}
}
