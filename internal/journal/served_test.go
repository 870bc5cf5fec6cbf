package journal

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/state"
)

func stateServer() *state.Server {
	return &state.Server{Name: "chat", Argv: []string{"vllm", "serve"}, GPUs: []int{1, 0},
		Engine: state.EngineRef{Kind: "vllm", Version: "0.16.0", Identity: "/usr/bin/vllm sha256:ab"},
		Model:  state.ModelRef{ServedName: "qwen", Path: "/m", Fingerprint: "fp"}}
}

func TestServedOf(t *testing.T) {
	want := Served{Server: "chat", Argv: []string{"vllm", "serve"}, GPUs: []int{1, 0},
		Engine: EngineInfo{Kind: "vllm", Version: "0.16.0", Identity: "/usr/bin/vllm sha256:ab"},
		Model:  ModelInfo{Name: "qwen", Path: "/m", Fingerprint: "fp"}}
	if got := ServedOf(stateServer()); !reflect.DeepEqual(got, want) {
		t.Errorf("ServedOf = %+v\nwant %+v", got, want)
	}
}

func TestHostOf(t *testing.T) {
	if HostOf(nil) != nil {
		t.Error("HostOf(nil) is not nil")
	}
	sn := &gpu.Snapshot{DriverVersion: "570.1", CUDADriverVersion: "12.8", GPUs: []gpu.GPU{{Index: 0, Name: "H100-0"}, {Index: 1, Name: "H100-1"}}}
	h := HostOf(sn)
	if h.DriverVersion != "570.1" || h.CUDAVersion != "12.8" {
		t.Errorf("host = %+v", h)
	}
	// A server's GPU the snapshot lacks (another host's inventory) is left
	// out, not a crash.
	e := New(KindBench, t0, Served{Server: "chat", GPUs: []int{1, 3, 0}}, h)
	if want := []string{"H100-1", "H100-0"}; !reflect.DeepEqual(e.GPUs, want) {
		t.Errorf("GPUs = %v, want %v", e.GPUs, want)
	}
}

func TestRolloutOf(t *testing.T) {
	s := stateServer()
	if e := RolloutOf(t0, s, nil, nil); e.Gate != nil || e.Server != "chat" || e.Engine.Version != "0.16.0" || e.Model.Fingerprint != "fp" {
		t.Errorf("without gates: %+v", e)
	}
	s.Gate = &state.GateResult{Passed: true, Health: json.RawMessage(`{"ok":true}`), Smoke: json.RawMessage(`{"ok":true}`)}
	want := &GateSummary{Passed: true, Health: "pass", Smoke: "pass", Bench: "skipped"}
	if e := RolloutOf(t0, s, nil, nil); !reflect.DeepEqual(e.Gate, want) {
		t.Errorf("gate = %+v, want %+v", e.Gate, want)
	}
}

func TestBenchOf(t *testing.T) {
	configured := Served{Server: "chat", Model: ModelInfo{Name: "qwen-configured"}, GPUs: []int{2}}
	for _, tc := range []struct {
		name      string
		rec       *state.Server
		wantModel string
		wantGPUs  []int
	}{
		{name: "not started by roofline", wantModel: "qwen-configured", wantGPUs: []int{2}},
		{name: "from the state", rec: stateServer(), wantModel: "qwen", wantGPUs: []int{1, 0}},
		{name: "state names no GPUs", rec: func() *state.Server { s := stateServer(); s.GPUs = nil; return s }(), wantModel: "qwen", wantGPUs: []int{2}},
	} {
		e := BenchOf(t0, tc.rec, configured, nil, "http://127.0.0.1:8000", &BenchSummary{NumPrompts: 3})
		if e.Kind != KindBench || e.URL != "http://127.0.0.1:8000" || e.Model.Name != tc.wantModel || e.Bench.NumPrompts != 3 {
			t.Errorf("%s: %+v", tc.name, e)
		}
		if got := BenchOf(t0, tc.rec, configured, nil, "", nil); tc.rec != nil && !reflect.DeepEqual(got.Argv, tc.rec.Argv) {
			t.Errorf("%s: argv %v", tc.name, got.Argv)
		}
		// The GPUs of the entry are named by a host; check the served set through one.
		h := &Host{GPUName: func(i int) (string, bool) { return string(rune('a' + i)), true }}
		var want []string
		for _, g := range tc.wantGPUs {
			want = append(want, string(rune('a'+g)))
		}
		if got := BenchOf(t0, tc.rec, configured, h, "", nil).GPUs; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: GPUs %v, want %v", tc.name, got, want)
		}
	}
}
