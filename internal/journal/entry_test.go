package journal

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

var (
	t0     = time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("CET", 3600))
	served = Served{Server: "chat", Engine: EngineInfo{Kind: "vllm", Version: "0.16.0", Identity: "/usr/bin/vllm sha256:ab"},
		Model: ModelInfo{Name: "qwen", Path: "/m", Fingerprint: "fp"}, Argv: []string{"vllm", "serve"}, GPUs: []int{1, 0, 7}}
	host = &Host{DriverVersion: "570.1", CUDAVersion: "12.8", GPUName: func(i int) (string, bool) {
		return map[int]string{0: "H100-0", 1: "H100-1"}[i], i < 2
	}}
)

func TestNew(t *testing.T) {
	e := New(KindRollout, t0, served, host)
	want := Entry{Time: t0.UTC(), Kind: KindRollout, Server: "chat", Engine: served.Engine, Model: served.Model, Argv: served.Argv,
		GPUs: []string{"H100-1", "H100-0"}, DriverVersion: "570.1", CUDAVersion: "12.8"}
	if !reflect.DeepEqual(e, want) {
		t.Errorf("New = %+v\nwant %+v", e, want)
	}
	if e := New(KindBench, t0, served, nil); e.GPUs != nil || e.DriverVersion != "" {
		t.Errorf("without an inventory: GPUs %v, driver %q", e.GPUs, e.DriverVersion)
	}
}

func TestRollout(t *testing.T) {
	bench := json.RawMessage(`{"num_prompts":10,"output_throughput":99.5,"completed":10}`)
	for _, tc := range []struct {
		name      string
		gates     *Gates
		failed    *Failure
		wantGate  *GateSummary
		wantBench bool
	}{
		{name: "no gates", wantGate: nil},
		{name: "health only", gates: &Gates{Passed: true, Health: json.RawMessage(`{"ok":true}`)},
			wantGate: &GateSummary{Passed: true, Health: "pass", Smoke: "skipped", Bench: "skipped"}},
		{name: "all passed", gates: &Gates{Passed: true, Health: json.RawMessage(`{"ok":true}`), Smoke: json.RawMessage(`{"ok":true}`), Bench: bench},
			wantGate: &GateSummary{Passed: true, Health: "pass", Smoke: "pass", Bench: "pass"}, wantBench: true},
		{name: "smoke failed", gates: &Gates{Health: json.RawMessage(`{"ok":true}`), Smoke: json.RawMessage(`{"ok":false}`)},
			wantGate: &GateSummary{Health: "pass", Smoke: "fail", Bench: "skipped"}},
		{name: "bench failed", gates: &Gates{Health: json.RawMessage(`{"ok":true}`), Bench: json.RawMessage(`{"passed":false}`)},
			failed:   &Failure{Phase: "gates", Error: "bench: TTFT p99 over 500 ms"},
			wantGate: &GateSummary{Health: "pass", Smoke: "skipped", Bench: "fail", Failures: []string{"bench: TTFT p99 over 500 ms"}}, wantBench: true},
		{name: "start failed", failed: &Failure{Phase: "start", Class: "oom_weights", Error: "exited"}},
	} {
		e := Rollout(t0, served, host, tc.gates, tc.failed)
		if e.Kind != KindRollout || e.Server != "chat" || len(e.GPUs) != 2 {
			t.Errorf("%s: kind %q server %q GPUs %v", tc.name, e.Kind, e.Server, e.GPUs)
		}
		if !reflect.DeepEqual(e.Gate, tc.wantGate) {
			t.Errorf("%s: gate = %+v, want %+v", tc.name, e.Gate, tc.wantGate)
		}
		if (e.Bench != nil) != tc.wantBench {
			t.Errorf("%s: bench = %+v, want one: %v", tc.name, e.Bench, tc.wantBench)
		}
		if e.Failure != tc.failed {
			t.Errorf("%s: failure = %+v, want %+v", tc.name, e.Failure, tc.failed)
		}
	}
	if e := Rollout(t0, served, nil, &Gates{Passed: true, Bench: bench}, nil); e.Bench.OutputThroughput != 99.5 || e.Bench.NumPrompts != 10 {
		t.Errorf("bench summary = %+v", e.Bench)
	}
}

func TestBenchEntry(t *testing.T) {
	b := &BenchSummary{NumPrompts: 5}
	e := Bench(t0, served, host, "http://127.0.0.1:8000", b)
	if e.Kind != KindBench || e.URL != "http://127.0.0.1:8000" || e.Bench != b || e.Gate != nil || e.Model != served.Model {
		t.Errorf("Bench = %+v", e)
	}
}

func TestGateVerdict(t *testing.T) {
	for raw, want := range map[string]string{
		"": "skipped", "null": "skipped", `{"ok":true}`: "pass", `{"ok":false}`: "fail",
		`{"passed":false}`: "fail", `{"passed":true}`: "pass", `{}`: "pass", `not json`: "pass",
	} {
		if got := GateVerdict(json.RawMessage(raw)); got != want {
			t.Errorf("GateVerdict(%q) = %q, want %q", raw, got, want)
		}
	}
}
