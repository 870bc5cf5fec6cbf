package plan

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/model/modeltest"
	"github.com/roofline/roofline/internal/state"
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

// TestTruncatedShardNamedOnce: a cut-short shard is named once in its
// error ("model-00002-of-00002.safetensors: model-00002-of-00002.safetensors:
// header length ..." named it twice).
func TestTruncatedShardNamedOnce(t *testing.T) {
	dir := filepath.Join(models, "truncated-shard")
	if err := modeltest.Write(dir, modeltest.Qwen3_8B); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	shards, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	if len(shards) == 0 {
		t.Fatal("no shards")
	}
	last := shards[len(shards)-1]
	if err := os.Truncate(last, 1000); err != nil {
		t.Fatal(err)
	}
	p := run(t, tc{hcl: `
model "cut" {
  path = "truncated-shard"
}

server "s" {
  engine = engine.vllm_016
  model  = model.cut
  gpus   = [0]
  port   = 8000
}
`})
	name := filepath.Base(last)
	found := false
	for _, d := range p.Diagnostics {
		if strings.Contains(d.Detail, name) {
			found = true
			if strings.Count(d.Detail, name) != 1 {
				t.Errorf("%s: %s", d.Summary, d.Detail)
			}
		}
	}
	if !found {
		t.Fatalf("no diagnostic names %s: %q", name, summaries(p))
	}
}

// TestOverlapCountsTheOldInstancesOwnClaim: during a create-before-destroy
// rollout the old instance holds what it claimed at its start (the state's
// claim_bytes), not the new share: raising gpu_memory_utilization from 0.45
// to 0.52 fits beside it (it was planned with downtime, counted as 2 × 0.52),
// and lowering it from 0.6 to 0.45 does not (it was planned without, and the
// new engine could not have started).
func TestOverlapCountsTheOldInstancesOwnClaim(t *testing.T) {
	server := func(util string) string {
		return `
server "qwen" {
  engine                 = engine.vllm_016
  model                  = model.qwen
  gpus                   = [0]
  port                   = 8000
  max_model_len          = 8192
  gpu_memory_utilization = ` + util + `
  lifecycle {
    create_before_destroy = true
  }
}
`
	}
	for _, tt := range []struct {
		from, to string
		want     Action
	}{
		{"0.45", "0.52", CreateThenDelete},
		{"0.6", "0.45", DeleteThenCreate},
	} {
		t.Run(tt.from+" to "+tt.to, func(t *testing.T) {
			first := run(t, tc{hcl: server(tt.from)})
			st, obs := stateFrom(first)
			st.Servers["qwen"].ClaimBytes = first.Change("qwen").After.ClaimBytes
			st.Servers["qwen"].Proxy = &state.Instance{Driver: state.DriverProcess, PID: 4000}
			c := run(t, tc{hcl: server(tt.to), prior: st, observed: obs}).Change("qwen")
			if c.Action != tt.want {
				t.Fatalf("action %q, want %q (%s)", c.Action.Symbol(), tt.want.Symbol(), c.Downtime)
			}
		})
	}
}
