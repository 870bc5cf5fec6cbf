package engine

import (
	"os"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/config"
)

func TestGenerateServer(t *testing.T) {
	fixture, err := os.ReadFile("testdata/import.hcl") // config's testdata/valid/import.hcl
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
	src, notes, err := GenerateServer(cfg, "gen", argv, env)
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
	// An engine and model the configuration lacks are generated too.
	src, notes, err = GenerateServer(cfg, "other", []string{"/opt/vllm/bin/vllm", "serve", "/models/x", "--port", "9000"}, map[string]string{"CUDA_VISIBLE_DEVICES": "0"})
	if err != nil || !strings.Contains(string(src), `engine "other_engine"`) || !strings.Contains(string(src), `model "other_model"`) || len(notes) == 0 {
		t.Errorf("new engine and model: %v %v\n%s", err, notes, src)
	}
	if _, _, err := GenerateServer(cfg, "x", []string{"/usr/bin/python3", "-m", "http.server"}, nil); err == nil {
		t.Error("a process that is no engine must be refused")
	}
}

// TestGenFlagsAgree: what import reads a flag as is what the kinds' flag
// tables say renders it.
func TestGenFlagsAgree(t *testing.T) {
	for flag, g := range genFlags {
		if g.attr == "" {
			continue
		}
		if got := FlagAttr(flag); got != g.attr {
			t.Errorf("import reads %s as %s; the flag tables say %s", flag, g.attr, got)
		}
	}
}
