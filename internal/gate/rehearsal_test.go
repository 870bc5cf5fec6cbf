package gate

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/rehearsal"
)

// The gates against the rehearsal engine, the stand-in for vLLM and SGLang
// that roofline's users rehearse with: what passes here must pass there.

func simServe(t *testing.T, o rehearsal.ServeOptions) Target {
	t.Helper()
	if len(o.ServedNames) == 0 {
		o.ServedNames = []string{"qwen3-8b"}
	}
	ts := httptest.NewServer(rehearsal.NewHandler(o))
	t.Cleanup(ts.Close)
	kind := o.Kind
	if kind == "" {
		kind = rehearsal.KindVLLM
	}
	return Target{BaseURL: ts.URL, Model: o.ServedNames[0], Engine: kind}
}

func TestSimHealth(t *testing.T) {
	tests := []struct {
		name    string
		opts    rehearsal.ServeOptions
		failing string
	}{
		{"vllm 0.16.0", rehearsal.ServeOptions{Metrics: true}, ""},
		{"vllm 0.8.5 (V0 metric names)", rehearsal.ServeOptions{Version: "0.8.5", V0: true, Metrics: true}, ""},
		{"sglang with --enable-metrics", rehearsal.ServeOptions{Kind: rehearsal.KindSGLang, Metrics: true}, ""},
		{"sglang without --enable-metrics", rehearsal.ServeOptions{Kind: rehearsal.KindSGLang}, "/metrics"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Health(context.Background(), nil, simServe(t, tt.opts))
			var names []string
			for _, c := range res.Failed() {
				names = append(names, c.Name)
			}
			if strings.Join(names, ",") != tt.failing || (err == nil) != (tt.failing == "") {
				t.Fatalf("failing %q (err %v), want %q: %+v", names, err, tt.failing, res.Checks)
			}
		})
	}
}

func TestSimSmoke(t *testing.T) {
	tests := []struct {
		name      string
		opts      rehearsal.ServeOptions
		reasoning bool
		failing   []string
		detail    string
	}{
		{name: "vllm with the right parser", opts: rehearsal.ServeOptions{ToolCallParser: "hermes", EnableAutoToolChoice: true}},
		{name: "sglang with the right parser", opts: rehearsal.ServeOptions{Kind: rehearsal.KindSGLang, ToolCallParser: "qwen25"}},
		{name: "vllm without the parser", opts: rehearsal.ServeOptions{},
			failing: []string{"tool call", "tool call, streamed"}, detail: "tool_call_parser"},
		{name: "sglang without the parser", opts: rehearsal.ServeOptions{Kind: rehearsal.KindSGLang},
			failing: []string{"tool call", "tool call, streamed"}, detail: "came back as plain text in content"},
		{name: "reasoning parser", opts: rehearsal.ServeOptions{ToolCallParser: "hermes", EnableAutoToolChoice: true, ReasoningParser: "qwen3", Thinking: true}, reasoning: true},
		{name: "thinking model without reasoning parser", opts: rehearsal.ServeOptions{ToolCallParser: "hermes", EnableAutoToolChoice: true, Thinking: true}, reasoning: true,
			failing: []string{"reasoning"}, detail: "reasoning_parser"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.opts
			o.TTFT, o.ITL = time.Millisecond, 100*time.Microsecond
			res, _ := Smoke(context.Background(), nil, simServe(t, o), SmokeOptions{Reasoning: tt.reasoning, StepTimeout: 20 * time.Second})
			var names []string
			for _, c := range res.Failed() {
				names = append(names, c.Name)
			}
			if strings.Join(names, "|") != strings.Join(tt.failing, "|") {
				t.Fatalf("failing %q, want %q: %+v", names, tt.failing, res.Steps)
			}
			if len(tt.failing) > 0 && !strings.Contains(res.Failed()[0].Detail, tt.detail) {
				t.Errorf("detail %q lacks %q", res.Failed()[0].Detail, tt.detail)
			}
		})
	}
}

func TestSimBench(t *testing.T) {
	target := simServe(t, rehearsal.ServeOptions{Metrics: true, TTFT: 5 * time.Millisecond, ITL: time.Millisecond})
	res, err := Bench(context.Background(), nil, target, BenchSpec{Concurrency: 4, Requests: 16, InputTokens: 200, OutputTokens: 20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != 16 || res.TotalInputTokens != 16*200 || res.TotalOutputTokens != 16*20 || res.OutputLenMismatch != 0 || !res.InputTokensExact {
		t.Fatalf("completed %d in %d out %d mismatch %d exact %v errors %v", res.Completed, res.TotalInputTokens, res.TotalOutputTokens, res.OutputLenMismatch, res.InputTokensExact, res.Errors)
	}
	if res.Metrics == nil || !res.Metrics.OK {
		t.Errorf("metrics cross-check against the rehearsal engine: %+v", res.Metrics)
	}
}

// TestSimFidelity is the acceptance test: the rehearsal engine set
// to 50 ms TTFT and 10 ms ITL, concurrency 64, medians within 3 % of those
// settings. The engine's own timers are part of the error here (it promises
// 2 %), so the test counts a miss only when other processes used less than
// a tenth of the CPUs.
func TestSimFidelity(t *testing.T) {
	if testing.Short() {
		t.Skip("timing test")
	}
	const ttft, itl = 50 * time.Millisecond, 10 * time.Millisecond
	target := simServe(t, rehearsal.ServeOptions{TTFT: ttft, ITL: itl, Metrics: true})
	checkFidelity(t, target, itl, 0.03, 0.10, func() float64 { return ms(ttft) })
}
