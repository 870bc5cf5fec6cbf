package logdiag_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFootprintTestdata compares every footprint excerpt with its golden
// JSON and checks the figures quoted in vram.md §2.5 and §3 by hand, so a
// golden file rewritten with a wrong value still fails.
func TestFootprintTestdata(t *testing.T) {
	f64 := func(v float64) *float64 { return &v }
	i64 := func(v int64) *int64 { return &v }
	want := map[string]Footprint{
		"vllm-v1-mistral-small-24b-h100":   {Engine: "vllm", WeightsGiB: f64(44.7618), KVCacheGiB: f64(28.21), KVTokens: i64(184832), MaxConcurrency: f64(11.55), MaxModelLen: i64(16000), CUDAGraphGiB: f64(0.82)},
		"compose-vllm-v1":                  {Engine: "vllm", WeightsGiB: f64(44.7618), KVCacheGiB: f64(28.21), KVTokens: i64(184832), MaxConcurrency: f64(11.55), MaxModelLen: i64(16000), CUDAGraphGiB: f64(0.82)},
		"vllm-two-launches":                {Engine: "vllm", WeightsGiB: f64(44.7618), KVCacheGiB: f64(28.21), KVTokens: i64(184832), MaxConcurrency: f64(11.55), MaxModelLen: i64(16000), CUDAGraphGiB: f64(0.82)},
		"vllm-v1-qwen3-235b-fp8-tp4":       {Engine: "vllm", WeightsGiB: f64(54.7402), KVCacheGiB: f64(8.11), KVTokens: i64(178880), MaxConcurrency: f64(4.37), MaxModelLen: i64(40960)},
		"vllm-v0-llama-3.1-8b-rtx3090":     {Engine: "vllm", WeightsGiB: f64(14.9595), KVCacheGiB: f64(3.81), GPUBlocks: i64(1952), MaxConcurrency: f64(1.56), MaxModelLen: i64(20000), CUDAGraphGiB: f64(0.37)},
		"vllm-v0.7-llama-3-8b-a100-40gb":   {Engine: "vllm", WeightsGiB: f64(14.9596), KVCacheGiB: f64(11.12), GPUBlocks: i64(5691), MaxConcurrency: f64(11.11), MaxModelLen: i64(8192)},
		"vllm-v1-deepseek-v2-lite-tp2-pp2": {Engine: "vllm", WeightsGiB: f64(7.8120), KVCacheGiB: f64(11.33), KVTokens: i64(807792), MaxConcurrency: f64(24.65), MaxModelLen: i64(32768)},
		"vllm-v1-gpt-oss-120b-tp4":         {Engine: "vllm", WeightsGiB: f64(16.3817), KVCacheGiB: f64(45.32), KVTokens: i64(2640144), MaxConcurrency: f64(284.25), MaxModelLen: i64(16384)},
		"sglang-qwen3-235b-fp8-tp4":        {Engine: "sglang", WeightsGiB: f64(54.58), KVCacheGiB: f64(16.46), KVTokens: i64(367404), MaxModelLen: i64(40960), CUDAGraphGiB: f64(1.81), MaxRunningRequests: i64(4096)},
		"sglang-qwq-32b-tp4-l4":            {Engine: "sglang", WeightsGiB: f64(15.54), KVCacheGiB: f64(2.84), KVTokens: i64(46611), MaxModelLen: i64(131072), CUDAGraphGiB: f64(0.93), MaxRunningRequests: i64(2048)},
		"sglang-deepseek-mla":              {Engine: "sglang", WeightsGiB: f64(29.80), KVCacheGiB: f64(36.49), KVTokens: i64(1180612), MaxModelLen: i64(163840), MaxRunningRequests: i64(4096)},
	}
	files, _ := filepath.Glob("testdata/footprint/*.log")
	if len(files) != len(want) {
		t.Errorf("%d footprint excerpts, %d expectations", len(files), len(want))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".log")
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got := ParseFootprint(b)
			if got == nil {
				t.Fatal("no footprint")
			}
			w, ok := want[name]
			if !ok {
				t.Fatalf("no expectation for %s", name)
			}
			if g, w := string(mustJSON(t, got)), string(mustJSON(t, w)); g != w {
				t.Errorf("footprint\n got %s\nwant %s", g, w)
			}
			golden(t, strings.TrimSuffix(f, ".log")+".json", mustJSON(t, got))
		})
	}
}

func TestFootprintPartialAndNone(t *testing.T) {
	b, err := os.ReadFile("testdata/kv_too_small/vllm-0.16-v1.log")
	if err != nil {
		t.Fatal(err)
	}
	fp := ParseFootprint(b)
	if fp == nil || fp.WeightsGiB == nil || *fp.WeightsGiB != 15.2683 || fp.KVCacheGiB == nil || *fp.KVCacheGiB != 5.59 || fp.KVTokens != nil {
		t.Errorf("failed start: footprint %+v, want weights 15.2683 and KV 5.59 only", fp)
	}
	for _, log := range []string{"", "usage: vllm serve\nvllm serve: error: unrecognized arguments: --x\n", "Model loading took lots of GiB\n"} {
		if fp := ParseFootprint([]byte(log)); fp != nil {
			t.Errorf("ParseFootprint(%q) = %+v, want nil", log, fp)
		}
	}
	// A traceback's source line is not a figure.
	if fp := ParseFootprint([]byte(`    logger.info("GPU KV cache size: 12 tokens")` + "\n")); fp != nil {
		t.Errorf("code line read as a footprint: %+v", fp)
	}
}

func FuzzFootprint(f *testing.F) {
	files, _ := filepath.Glob("testdata/footprint/*.log")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("GPU KV cache size: 99999999999999999999999 tokens\nMaximum concurrency for 1, tokens per request: .x\nKV Cache is allocated. #tokens: 1, K size: 1e999 GB, V size: 1 GB\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fp := ParseFootprint(b)
		if fp != nil && fp.Engine != "vllm" && fp.Engine != "sglang" {
			t.Fatalf("engine %q", fp.Engine)
		}
	})
}

func BenchmarkParseFootprint(b *testing.B) {
	log := benchLog()
	b.SetBytes(int64(len(log)))
	for b.Loop() {
		ParseFootprint(log)
	}
}
