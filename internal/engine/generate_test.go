package engine

import (
	"fmt"
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
	// An engine and model the configuration lacks are generated too.
	src, notes, err := GenerateServer(cfg, "other", []string{"/opt/vllm/bin/vllm", "serve", "/models/x", "--port", "9000"}, map[string]string{"CUDA_VISIBLE_DEVICES": "0"}, nil)
	if err != nil || !strings.Contains(string(src), `engine "other_engine"`) || !strings.Contains(string(src), `model "other_model"`) || len(notes) == 0 {
		t.Errorf("new engine and model: %v %v\n%s", err, notes, src)
	}
	if _, _, err := GenerateServer(cfg, "x", []string{"/usr/bin/python3", "-m", "http.server"}, nil, nil); err == nil {
		t.Error("a process that is no engine must be refused")
	}
	// The generated engine block is the one of a configured command
	// (internal/rehearsal TestRecognize generates with a Recognizer).
	cfg.Engines["e"].Command = []string{"/opt/vllm/bin/vllm"}
	src, _, err = GenerateServer(cfg, "again", []string{"/opt/vllm/bin/vllm", "serve", "/m", "--port", "9000"}, map[string]string{"CUDA_VISIBLE_DEVICES": "0"}, nil)
	if flat := strings.Join(strings.Fields(string(src)), " "); err != nil || !strings.Contains(flat, "engine = engine.e") || strings.Contains(flat, "engine \"") {
		t.Errorf("a configured command: %v\n%s", err, src)
	}
}

// TestGenerateRecognizer: a Recognizer is asked first; one that does not
// know a command line leaves it to the kinds, one that fails fails it.
func TestGenerateRecognizer(t *testing.T) {
	cfg, diags := config.Load("/cfg", []string{"a.hcl"}, map[string][]byte{"a.hcl": nil})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	argv := []string{"/opt/vllm/bin/vllm", "serve", "/m", "--port", "9000"}
	pass := func([]string) (Recognized, bool, error) { return Recognized{}, false, nil }
	if src, _, err := GenerateServer(cfg, "s", argv, nil, pass); err != nil || !strings.Contains(string(src), `"/opt/vllm/bin/vllm"`) {
		t.Errorf("a command line the recognizer leaves: %v\n%s", err, src)
	}
	unknown := func([]string) (Recognized, bool, error) {
		return Recognized{Kind: "tgi", Is: func(*config.Engine) bool { return true }}, true, nil
	}
	if _, _, err := GenerateServer(cfg, "s", argv, nil, unknown); err == nil || !strings.Contains(err.Error(), `"tgi" is not an engine kind`) {
		t.Errorf("a recognizer's unknown kind: %v", err)
	}
	fail := func([]string) (Recognized, bool, error) { return Recognized{}, false, fmt.Errorf("bad spec") }
	if _, _, err := GenerateServer(cfg, "s", argv, nil, fail); err == nil || err.Error() != "bad spec" {
		t.Errorf("a recognizer's error: %v", err)
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

// TestGenerateLeavesSecretFlags: an API key on the process's command line
// is not written to the generated file (which would leak it and which
// validate refuses: "Secret in extra_args"); a note says how to set it.
func TestGenerateLeavesSecretFlags(t *testing.T) {
	cfg, diags := config.Load("/cfg", []string{"a.hcl"}, map[string][]byte{"a.hcl": nil})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	for _, argv := range [][]string{
		{"/opt/vllm/bin/vllm", "serve", "/m", "--port", "9000", "--api-key", "sk-hand-123", "--enforce-eager"},
		{"/opt/vllm/bin/vllm", "serve", "/m", "--port", "9000", "--api-key=sk-hand-123", "--enforce-eager"},
		{"/usr/bin/python3", "-m", "sglang.launch_server", "--model-path", "/m", "--port", "9000", "--api-key", "sk-hand-123"},
	} {
		src, notes, err := GenerateServer(cfg, "s", argv, map[string]string{"CUDA_VISIBLE_DEVICES": "0"}, nil)
		if err != nil {
			t.Fatalf("%q: %v", argv, err)
		}
		if strings.Contains(string(src), "sk-hand-123") || strings.Contains(string(src), "api-key") {
			t.Errorf("%q: the key is in the generated file:\n%s", argv, src)
		}
		if !strings.Contains(strings.Join(notes, "\n"), "--api-key") {
			t.Errorf("%q: no note on the key: %q", argv, notes)
		}
		gen, diags := config.Load("/cfg", []string{"gen.hcl"}, map[string][]byte{"gen.hcl": src})
		if diags.HasErrors() || gen.Servers["s"] == nil {
			t.Errorf("%q: the generated file does not load: %v\n%s", argv, diags, src)
		}
	}
}
