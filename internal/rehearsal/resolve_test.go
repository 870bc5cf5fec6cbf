package rehearsal

import (
	"os"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/gpu"
)

func TestResolve(t *testing.T) {
	for _, tt := range []struct {
		e        *config.Engine
		want, id string
	}{
		{&config.Engine{Kind: "vllm", Version: "0.16.0", Rehearsal: true}, "/bin/roofline rehearsal vllm@0.16.0", "rehearsal:vllm@0.16.0"},
		{&config.Engine{Kind: "sglang", Version: "0.5.6.post2", Rehearsal: true}, "/bin/roofline rehearsal sglang@0.5.6.post2 -m sglang.launch_server", "rehearsal:sglang@0.5.6.post2"},
		{&config.Engine{Kind: "vllm", Command: []string{"/opt/v/bin/vllm"}}, "/opt/v/bin/vllm", ""},
	} {
		Resolve(tt.e, "/bin/roofline")
		Resolve(tt.e, "/other/roofline") // twice changes nothing
		if got := strings.Join(tt.e.Command, " "); got != tt.want || tt.e.PinnedIdentity != tt.id {
			t.Errorf("Resolve: command %q, identity %q; want %q, %q", got, tt.e.PinnedIdentity, tt.want, tt.id)
		}
	}
}

func TestUseInventory(t *testing.T) {
	for _, tt := range []struct {
		name string
		snap *gpu.Snapshot
		want string // the rehearsal engine's EnvInventory, "" for unset
	}{
		{"a snapshot file", &gpu.Snapshot{Source: "file:/srv/h100.json"}, "/srv/h100.json"},
		{"NVML", &gpu.Snapshot{Source: "nvml"}, ""},
		{"none", nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			shared := map[string]string{"A": "1"}
			cfg := &config.Config{Engines: map[string]*config.Engine{
				"r": {Rehearsal: true, Env: shared},
				"v": {Command: []string{"vllm"}},
			}}
			UseInventory(cfg, tt.snap)
			if got := cfg.Engines["r"].Env[EnvInventory]; got != tt.want {
				t.Errorf("rehearsal engine's %s = %q, want %q", EnvInventory, got, tt.want)
			}
			if _, ok := cfg.Engines["v"].Env[EnvInventory]; ok {
				t.Error("a real engine got the rehearsal inventory")
			}
			if _, ok := shared[EnvInventory]; ok || cfg.Engines["r"].Env["A"] != "1" {
				t.Errorf("the engine's env map was written in place, or lost its variables: %v", cfg.Engines["r"].Env)
			}
		})
	}
}

// TestRecognize: roofline import reads a running rehearsal engine's
// command line into a server block on the configuration's rehearsal engine.
func TestRecognize(t *testing.T) {
	fixture, err := os.ReadFile("../engine/testdata/import.hcl") // config's testdata/valid/import.hcl
	if err != nil {
		t.Fatal(err)
	}
	cfg, diags := config.Load("/cfg", []string{"import.hcl"}, map[string][]byte{"import.hcl": fixture})
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	argv := []string{"/usr/local/bin/roofline", "rehearsal", "vllm@0.16.0", "serve", "/m", "--served-model-name", "m", "--port", "8001",
		"--tensor-parallel-size", "2", "--enforce-eager", "--seed", "7", "--enable-auto-tool-choice", "--tool-call-parser", "hermes"}
	env := map[string]string{"CUDA_VISIBLE_DEVICES": "2,3", "HF_HUB_OFFLINE": "1", "VLLM_ATTENTION_BACKEND": "FLASHINFER", "HF_TOKEN": "hf_x", "PATH": "/bin"}
	src, notes, err := engine.GenerateServer(cfg, "gen", argv, env, Recognize)
	if err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(string(src)), " ")
	for _, want := range []string{`server "gen" {`, "engine = engine.e", "model = model.m", "gpus = [2, 3]", "port = 8001", "tensor_parallel = 2",
		"enforce_eager = true", `tool_call_parser = "hermes"`, `extra_args = ["--seed", "7"]`, `VLLM_ATTENTION_BACKEND = "FLASHINFER"`} {
		if !strings.Contains(flat, want) {
			t.Errorf("generated block lacks %q:\n%s", want, src)
		}
	}
	if strings.Contains(string(src), "hf_x") || len(notes) != 1 || !strings.Contains(notes[0], "HF_TOKEN") {
		t.Errorf("a secret must be named in a note, never written: %q %v", src, notes)
	}
	// The generated block loads, and with the rest of the configuration.
	all := append(fixture, src...)
	if _, diags := config.Load("/cfg", []string{"a.hcl"}, map[string][]byte{"a.hcl": all}); diags.HasErrors() {
		t.Errorf("generated block does not load: %v\n%s", diags, src)
	}
	// A version the configuration has no engine for gets its own block.
	src, _, err = engine.GenerateServer(cfg, "new", []string{"roofline", "rehearsal", "vllm@0.8.5", "serve", "/m", "--port", "8002"}, env, Recognize)
	if flat := strings.Join(strings.Fields(string(src)), " "); err != nil || !strings.Contains(flat, `engine "new_engine" { kind = "vllm" version = "0.8.5" rehearsal = true }`) {
		t.Errorf("a new rehearsal engine block: %v\n%s", err, src)
	}
	if _, _, err := engine.GenerateServer(cfg, "x", []string{"roofline", "rehearsal", "nope", "serve", "/m"}, env, Recognize); err == nil || !strings.Contains(err.Error(), "not a rehearsal engine spec") {
		t.Errorf("a bad kind@version: %v", err)
	}
	if _, ok, _ := Recognize([]string{"/opt/vllm/bin/vllm", "serve", "/m"}); ok {
		t.Error("Recognize took a plain vllm command line")
	}
}
