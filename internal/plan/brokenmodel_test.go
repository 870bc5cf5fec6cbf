package plan

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/model/modeltest"
)

// TestBrokenConfigJSONIsOneError: a model folder whose config.json is cut
// short is one error that names the file once; the VRAM check it prevents
// is not a second diagnostic ("Cannot size the model ... inspect the folder
// first").
func TestBrokenConfigJSONIsOneError(t *testing.T) {
	dir := filepath.Join(models, "broken-config")
	if err := modeltest.Write(dir, modeltest.Qwen3_8B); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"architectures": ["Qwen3ForCausalLM"], "hidden_size": `), 0o644); err != nil {
		t.Fatal(err)
	}
	p := run(t, tc{hcl: `
model "broken" {
  path = "broken-config"
}

server "s" {
  engine = engine.vllm_016
  model  = model.broken
  gpus   = [0]
  port   = 8000
}
`})
	if got := summaries(p); !slices.Equal(got, []string{"Error: config.json is not valid"}) {
		t.Fatalf("diagnostics %q", got)
	}
	if d := p.Diagnostics[0].Detail; strings.Count(d, "config.json") != 1 || !strings.Contains(d, "copy it again") {
		t.Errorf("detail %q", d)
	}
}

// TestDoesNotFitReadsAsSentences: a context past the model's maximum that
// also overflows the KV cache gives two reasons, each its own sentence
// (they were joined as "... or less.; rank 0: ...").
func TestDoesNotFitReadsAsSentences(t *testing.T) {
	p := run(t, tc{hcl: `
server "long" {
  engine        = engine.vllm_016
  model         = model.qwen
  gpus          = [0]
  port          = 8000
  max_model_len = 1000000
}
`})
	if got := summaries(p); !slices.Equal(got, []string{"Error: Model does not fit"}) {
		t.Fatalf("diagnostics %q", got)
	}
	var d string
	for _, diag := range p.Diagnostics {
		if diag.Summary == "Model does not fit" {
			d = diag.Detail
		}
	}
	if strings.Contains(d, ".;") || !strings.Contains(d, "or less. Rank 0: one request") {
		t.Errorf("detail %q", d)
	}
}
