package gate

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/gate/gatetest"
)

// TestRunner: the gates run in order against a real HTTP engine stand-in,
// the first failure ends the run, and the verdict, the reports and the
// summary lines say which gate did what.
func TestRunner(t *testing.T) {
	fixed := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		opts    gatetest.Options
		spec    Spec
		passed  bool
		err     string   // in the error; "" for a pass
		summary []string // prefixes of the summary lines, in order
		smoke   bool     // a smoke report is recorded
	}{
		{name: "health only", opts: gatetest.Options{}, passed: true,
			summary: []string{"Gate health: passed (4 checks"}},
		{name: "health and smoke", opts: gatetest.Options{ToolParser: true}, spec: Spec{SmokeToolcall: true}, passed: true,
			summary: []string{"Gate health: passed", "Gate smoke: passed"}, smoke: true},
		{name: "smoke fails: tool calls as text", opts: gatetest.Options{}, spec: Spec{SmokeToolcall: true},
			err: "smoke:", summary: []string{"Gate health: passed", "Gate smoke: FAILED"}, smoke: true},
		{name: "health fails: sglang without metrics, smoke never runs", opts: gatetest.Options{Engine: "sglang", ToolParser: true},
			spec: Spec{SmokeToolcall: true}, err: "/metrics", summary: []string{"Gate health: FAILED"}},
		{name: "bench misses its threshold", opts: gatetest.Options{TTFT: 20 * time.Millisecond},
			spec: Spec{Bench: &config.Bench{Requests: 4, Concurrency: 2, InputTokens: 16, OutputTokens: 8, MaxTTFTP99: time.Millisecond}},
			err:  "bench:", summary: []string{"Gate health: passed", "Gate bench: FAILED"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, target := serve(t, tt.opts)
			res, err := Runner{Now: func() time.Time { return fixed }}.Run(context.Background(), target, tt.spec)
			if res == nil {
				t.Fatal("no result")
			}
			if res.Passed != tt.passed || (tt.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("Run = passed %v, %v; want passed %v and an error with %q", res.Passed, err, tt.passed, tt.err)
			}
			if !res.CheckedAt.Equal(fixed) || len(res.Health) == 0 || (len(res.Smoke) > 0) != tt.smoke {
				t.Errorf("result %+v", res)
			}
			if len(res.Summary) != len(tt.summary) {
				t.Fatalf("summary %q; want lines starting %q", res.Summary, tt.summary)
			}
			for i, p := range tt.summary {
				if !strings.HasPrefix(res.Summary[i], p) {
					t.Errorf("summary line %d %q; want it to start %q", i, res.Summary[i], p)
				}
			}
		})
	}
}

// TestRunnerCheckHealth: a health report the spec's own check refuses
// fails the health gate, and nothing after it runs.
func TestRunnerCheckHealth(t *testing.T) {
	_, target := serve(t, gatetest.Options{ToolParser: true})
	var seen *HealthResult
	spec := Spec{SmokeToolcall: true, CheckHealth: func(h *HealthResult) error {
		seen = h
		return errors.New("health: the engine reports version 0.15.1, but the configuration pins 0.16.0")
	}}
	res, err := Runner{}.Run(context.Background(), target, spec)
	if err == nil || !strings.Contains(err.Error(), "pins 0.16.0") || res.Passed || len(res.Smoke) != 0 {
		t.Fatalf("Run = %+v, %v; want the health gate failed by the check, no smoke", res, err)
	}
	if seen == nil || !seen.OK {
		t.Errorf("the check saw %+v; want the passed health report", seen)
	}
}

// TestChecksLine: apply's line per gate counts the checks and names each
// one; a name with a comma in it ("tool call, streamed") stays one check
// to the reader.
func TestChecksLine(t *testing.T) {
	tests := []struct {
		ok   bool
		cs   []Check
		want string
	}{
		{true, []Check{{Name: "tool call", OK: true}, {Name: "tool call, streamed", OK: true}, {Name: "reasoning", OK: true}},
			"passed (3 checks: tool call; tool call, streamed; reasoning)"},
		{false, []Check{{Name: "tool call", Detail: "no tool_calls"}, {Name: "tool call, streamed", Skipped: true}},
			"FAILED (2 checks: tool call FAILED: no tool_calls; tool call, streamed (skipped))"},
	}
	for _, tt := range tests {
		if got := checksLine(tt.ok, tt.cs); got != tt.want {
			t.Errorf("checksLine = %q\n             want %q", got, tt.want)
		}
	}
}
