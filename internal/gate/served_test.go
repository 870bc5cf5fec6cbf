package gate

import (
	"reflect"
	"testing"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/journal"
)

func TestConfiguredServed(t *testing.T) {
	srv := &config.Server{Name: "q", GPUs: []int{0, 1}}
	mod := &config.Model{Path: "/models/q"}
	for _, tc := range []struct {
		name string
		eng  *config.Engine
		want journal.EngineInfo
	}{
		{"image", &config.Engine{Kind: "vllm", Version: "0.16.0", Image: "vllm/vllm-openai@sha256:1", Command: []string{"x"}},
			journal.EngineInfo{Kind: "vllm", Version: "0.16.0", Identity: "vllm/vllm-openai@sha256:1"}},
		{"rehearsal", &config.Engine{Kind: "sglang", Version: "0.5.6", Rehearsal: true},
			journal.EngineInfo{Kind: "sglang", Version: "0.5.6", Identity: "rehearsal"}},
		{"command", &config.Engine{Kind: "vllm", Version: "0.16.0", Command: []string{"/opt/v/bin/vllm", "serve"}},
			journal.EngineInfo{Kind: "vllm", Version: "0.16.0", Identity: "/opt/v/bin/vllm serve"}},
		{"no engine block", nil, journal.EngineInfo{}},
	} {
		got := ConfiguredServed(srv, tc.eng, mod, "served-q")
		want := journal.Served{Server: "q", GPUs: []int{0, 1}, Engine: tc.want, Model: journal.ModelInfo{Name: "served-q", Path: "/models/q"}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, want)
		}
	}
	if got := ConfiguredServed(srv, nil, nil, "m"); got.Model.Path != "" || got.Model.Name != "m" {
		t.Errorf("no model block: %+v", got.Model)
	}
}
