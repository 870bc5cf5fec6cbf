package vram

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/engine/kinds"
)

func h100(m ModelSpec, tp, ctx int) Input {
	return Input{Model: m, GPUMemoryBytes: gb(79.18), GPUName: "NVIDIA H100 80GB HBM3", ComputeCapability: "9.0", TP: tp, MaxModelLen: ctx}
}

func mustEstimate(t *testing.T, in Input) *Result {
	t.Helper()
	res, err := Estimate(in)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestStageLayers(t *testing.T) {
	for _, c := range []struct {
		n, pp int
		want  []int
	}{
		{27, 2, []int{14, 13}}, // DeepSeek-V2-Lite PP2 (V09)
		{30, 4, []int{7, 8, 8, 7}},
		{32, 4, []int{8, 8, 8, 8}},
		{61, 8, []int{7, 7, 8, 8, 8, 8, 8, 7}},
		{5, 1, []int{5}},
	} {
		var got []int
		end := 0
		for s := 0; s < c.pp; s++ {
			a, b := stageLayers(c.n, c.pp, s)
			if a != end {
				t.Errorf("%d/%d stage %d starts at %d, want %d", c.n, c.pp, s, a, end)
			}
			end = b
			got = append(got, b-a)
		}
		if end != c.n || !equalInts(got, c.want) {
			t.Errorf("%d layers over %d stages: %v, want %v", c.n, c.pp, got, c.want)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRankWeights(t *testing.T) {
	spec := ModelSpec{Layers: make([]Layer, 4), Weights: []WeightPart{
		{Name: "embed", Bytes: 1000, Shard: ShardTP, Place: PlaceFirst},
		{Name: "l0", Bytes: 800, Shard: ShardTP, Place: PlaceLayer, Layer: 0},
		{Name: "l3", Bytes: 800, Shard: ShardTP, Place: PlaceLayer, Layer: 3},
		{Name: "kv3", Bytes: 8 * 10, Shard: ShardKVHeads, Heads: 8, Place: PlaceLayer, Layer: 3},
		{Name: "norm3", Bytes: 7, Shard: Replicated, Place: PlaceLayer, Layer: 3},
		{Name: "final_norm", Bytes: 5, Shard: Replicated, Place: PlaceLast},
		{Name: "tied_lm_head", Bytes: 1000, Shard: ShardTP, Place: PlaceLastIfSplit},
		{Name: "rotary", Bytes: 3, Shard: Replicated, Place: PlaceEvery},
	}}
	for _, c := range []struct {
		name             string
		tp, pp, stage    int
		want             uint64
		explainsSharding string
	}{
		{"TP1 PP1 holds everything but the tied copy", 1, 1, 0, 1000 + 800 + 800 + 80 + 7 + 5 + 3, ""},
		{"TP2 halves TP parts, keeps replicated ones", 2, 1, 0, 500 + 400 + 400 + 40 + 7 + 5 + 3, ""},
		{"TP16 > 8 KV heads: one head per rank", 16, 1, 0, 63 + 50 + 50 + 10 + 7 + 5 + 3, ""},
		{"PP2 stage 0: embedding and layers 0-1", 1, 2, 0, 1000 + 800 + 3, ""},
		{"PP2 stage 1: layers 2-3, final norm, tied lm_head copy", 1, 2, 1, 800 + 80 + 7 + 5 + 1000 + 3, ""},
		{"TP2 PP2 stage 1", 2, 2, 1, 400 + 40 + 7 + 5 + 500 + 3, ""},
	} {
		if got := spec.rankWeights(c.tp, c.pp, c.stage); got != c.want {
			t.Errorf("%s: %d bytes, want %d", c.name, got, c.want)
		}
	}
}

func TestKVBytesPerToken(t *testing.T) {
	llama := llama31_8B.spec()
	for _, c := range []struct {
		name  string
		model ModelSpec
		tp    int
		dtype string
		want  uint64
	}{
		{"Llama-3.1-8B TP1 bf16 (vram.md §5: 131,072)", llama, 1, "auto", 131072},
		{"Llama-3.1-8B TP2 halves the heads", llama, 2, "auto", 65536},
		{"Llama-3.1-8B TP8: one KV head per rank", llama, 8, "auto", 16384},
		{"Llama-3.1-8B TP16 > 8 KV heads: still one head per rank (replicated)", llama, 16, "", 16384},
		{"fp8 KV halves the bytes", llama, 1, "fp8", 65536},
		{"fp8_e5m2 too", llama, 2, "fp8_e5m2", 32768},
		{"Qwen3-32B TP1 (262,144)", qwen3_32B.spec(), 1, "auto", 262144},
		{"Qwen2-7B (57,344)", qwen2_7B.spec(), 1, "bfloat16", 57344},
		{"MLA: 27 x 576 x 2 (31,104), whatever the TP", mlaSpec(27), 4, "auto", 31104},
		{"MLA fp8", mlaSpec(27), 1, "fp8", 27 * 576},
		{"MLA fp8_ds_mla: 656 bytes per layer", mlaSpec(27), 1, "fp8_ds_mla", 27 * 656},
		{"gpt-oss-120b TP4: 36 layers x 512 (vram.md V13)", gptOSS120B.spec(), 4, "auto", 36 * 512},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := h100(c.model, c.tp, 4096)
			in.KVCacheDtype = c.dtype
			in.Model.NumAttentionHeads = 0 // TP 16 would not divide the heads
			res := mustEstimate(t, in)
			if res.KVBytesPerToken != c.want {
				t.Errorf("%d bytes per token, want %d", res.KVBytesPerToken, c.want)
			}
		})
	}
}

func TestFP8DoublesTokens(t *testing.T) {
	in := h100(llama31_8B.spec(), 1, 16384)
	in.Overrides.KVBudgetBytes = one(40)
	bf := mustEstimate(t, in)
	in.KVCacheDtype = "fp8"
	f8 := mustEstimate(t, in)
	if f8.KVTokens != 2*bf.KVTokens {
		t.Errorf("fp8 %d tokens, bf16 %d: want exactly twice", f8.KVTokens, bf.KVTokens)
	}
	if math.Abs(f8.MaxConcurrency-2*bf.MaxConcurrency) > 0.01 {
		t.Errorf("fp8 concurrency %.2f, bf16 %.2f", f8.MaxConcurrency, bf.MaxConcurrency)
	}
}

func TestBlockRounding(t *testing.T) {
	// 40 GiB plus half a block: the half block is dropped.
	in := h100(llama31_8B.spec(), 1, 16384)
	page := uint64(16 * 131072)
	in.Overrides.KVBudgetBytes = []uint64{40*GiB + page/2}
	res := mustEstimate(t, in)
	if res.KVTokens != 40*GiB/int64(page)*16 || res.KVTokens%16 != 0 {
		t.Errorf("tokens %d not whole blocks of 40 GiB", res.KVTokens)
	}
	in.BlockSize = 128
	res = mustEstimate(t, in)
	if res.KVTokens%128 != 0 {
		t.Errorf("tokens %d not a multiple of block 128", res.KVTokens)
	}
	// Concurrency counts whole blocks per request: 16001 tokens take 126 blocks of 128.
	in.MaxModelLen = 16001
	res = mustEstimate(t, in)
	if want := float64(res.Ranks[0].NumBlocks) / 126; math.Abs(res.MaxConcurrency-want) > 1e-9 {
		t.Errorf("concurrency %.4f, want %.4f", res.MaxConcurrency, want)
	}
}

func TestSlidingWindow(t *testing.T) {
	// Gemma-3-1B shape: 26 layers, 1 KV head of 256, window 512 on 5 of 6 layers.
	g := denseCfg{name: "gemma-3-1b", layers: 26, hidden: 1152, heads: 4, kvh: 1, headDim: 256, inter: 6912,
		vocab: 262144, maxPos: 32768, tied: true, window: 512}
	spec := g.spec()
	for i := range spec.Layers {
		if (i+1)%6 != 0 {
			spec.Layers[i].Kind, spec.Layers[i].Window = AttnSliding, 512
		}
	}
	full := g.spec() // the same model with every layer full
	in := h100(spec, 1, 32768)
	in.Overrides.KVBudgetBytes = one(4)
	in.MaxNumBatchedTokens = 2048
	sw := mustEstimate(t, in)
	in.Model = full
	fl := mustEstimate(t, in)
	// A request needs full-context blocks only in the 4 full layers.
	if sw.NeededBytes >= fl.NeededBytes/4 {
		t.Errorf("sliding model needs %d bytes per request, full model %d: want far less", sw.NeededBytes, fl.NeededBytes)
	}
	if sw.MaxConcurrency < 3*fl.MaxConcurrency {
		t.Errorf("sliding concurrency %.2f vs full %.2f: want several times more", sw.MaxConcurrency, fl.MaxConcurrency)
	}
	// vLLM's per-layer need: full layers cdiv(L,16) blocks, sliding ones
	// cdiv(min(511+2048, L),16)+1.
	page := uint64(16 * 512 * 2)
	want := 4*page*2048 + 22*page*(160+1)
	if sw.NeededBytes != want {
		t.Errorf("needed %d bytes, want %d", sw.NeededBytes, want)
	}
	// Groups: 4 full and 22 sliding layers -> group size 4, 1 + 6 groups.
	if got, want := sw.KVTokens, sw.Ranks[0].NumBlocks/7*16; got != want {
		t.Errorf("tokens %d, want num_blocks // 7 x 16 = %d", got, want)
	}
}

func TestHybridGroupingPadding(t *testing.T) {
	// 20 sliding + 16 full: older vLLM groups by 16 (2 + 1 groups with 12
	// padding slots); newer vLLM (0.11+) pads to 20 when max < 1.5 x min.
	spec := llama31_8B.spec()
	spec.Layers = nil
	for i := 0; i < 36; i++ {
		l := Layer{Kind: AttnFull, KVHeads: 8, HeadDim: 128}
		if i < 20 {
			l.Kind, l.Window = AttnSliding, 4096
		}
		spec.Layers = append(spec.Layers, l)
	}
	spec.Weights = nil
	for _, c := range []struct {
		version string
		groups  int64
		group   uint64
	}{{"0.10.1", 3, 16}, {"0.11.0", 2, 20}} {
		in := h100(spec, 1, 8192)
		in.EngineVersion = c.version
		in.Overrides = Overrides{KVBudgetBytes: one(10), WeightsBytes: one(1)}
		res := mustEstimate(t, in)
		blocks := int64(gb(10) / (16 * 4096) / c.group) // 8 heads x 256 x 2 B per layer
		if res.Ranks[0].NumBlocks != blocks || res.KVTokens != blocks/c.groups*16 {
			t.Errorf("vLLM %s: %d blocks, %d tokens; want %d blocks, %d tokens", c.version,
				res.Ranks[0].NumBlocks, res.KVTokens, blocks, blocks/c.groups*16)
		}
	}
}

func TestMambaBlockSize(t *testing.T) {
	// A hybrid with 1 attention layer per 4: the Mamba state page (2 MiB per
	// rank) exceeds a 16-token attention page, so vLLM enlarges the block.
	spec := ModelSpec{NumAttentionHeads: 16, HeadDim: 128, HiddenSize: 2048, IntermediateSize: 8192, VocabSize: 32000, MaxModelLen: 65536}
	for i := 0; i < 16; i++ {
		if i%4 == 3 {
			spec.Layers = append(spec.Layers, Layer{Kind: AttnFull, KVHeads: 2, HeadDim: 128})
		} else {
			spec.Layers = append(spec.Layers, Layer{Kind: AttnLinear, StateBytes: 2 << 20})
		}
	}
	in := h100(spec, 1, 65536)
	in.Overrides = Overrides{WeightsBytes: one(1), KVBudgetBytes: one(10)}
	res := mustEstimate(t, in)
	// attention: 2 heads x 256 x 2 = 1024 bytes/token; 2 MiB / 1024 = 2048 tokens.
	if res.BlockSize != 2048 {
		t.Errorf("block size %d, want 2048", res.BlockSize)
	}
	if res.KVTokens <= 0 || res.MaxConcurrency <= 0 {
		t.Errorf("tokens %d, concurrency %.2f", res.KVTokens, res.MaxConcurrency)
	}
	in.Engine = kinds.SGLang
	res = mustEstimate(t, in)
	if len(res.Warnings) == 0 || !strings.Contains(res.Warnings[0], "state pool") {
		t.Errorf("SGLang hybrid: want the state-pool warning, got %q", res.Warnings)
	}
}

func TestMLABlockSize(t *testing.T) {
	for _, c := range []struct {
		cc, name string
		want     int
	}{{"9.0", "", 64}, {"", "NVIDIA H200", 64}, {"10.0", "", 128}, {"8.9", "NVIDIA L4", 16}, {"8.0", "", 16}} {
		in := Input{Model: mlaSpec(27), GPUMemoryBytes: gb(79), ComputeCapability: c.cc, GPUName: c.name, MaxModelLen: 4096}
		if res := mustEstimate(t, in); res.BlockSize != c.want {
			t.Errorf("cc %q %q: block %d, want %d", c.cc, c.name, res.BlockSize, c.want)
		}
	}
	in := h100(llama31_8B.spec(), 1, 4096)
	if res := mustEstimate(t, in); res.BlockSize != 16 {
		t.Errorf("Llama on H100: block %d, want 16", res.BlockSize)
	}
}

func TestVLLMDefaults(t *testing.T) {
	for _, c := range []struct {
		name, version, gpu string
		mem                float64
		util               float64
		seqs, mbt          int
	}{
		{"H100 0.16: 8192/1024, 0.90", "0.16.0", "NVIDIA H100 80GB HBM3", 79.18, 0.90, 1024, 8192},
		{"A100-80GB 0.16: small batches", "0.16.0", "NVIDIA A100-SXM4-80GB", 79.15, 0.90, 256, 2048},
		{"A100-80GB 0.8.5: big batches (before PR #17885)", "0.8.5", "NVIDIA A100-SXM4-80GB", 79.15, 0.90, 1024, 8192},
		{"L4: small batches", "0.16.0", "NVIDIA L4", 22.03, 0.90, 256, 2048},
		{"0.21: utilization 0.92", "0.21.0", "NVIDIA H200", 139.8, 0.92, 1024, 8192},
		{"V0 0.6.4: 256 seqs, max(len, 2048) tokens", "0.6.4", "NVIDIA H100", 79.18, 0.90, 256, 20000},
	} {
		in := Input{Model: llama31_8B.spec(), EngineVersion: c.version, GPUName: c.gpu, GPUMemoryBytes: gb(c.mem), MaxModelLen: 20000}
		res := mustEstimate(t, in)
		if res.GPUMemoryUtilization != c.util || res.MaxNumSeqs != c.seqs || res.MaxNumBatchedTokens != c.mbt {
			t.Errorf("%s: util %.2f seqs %d mbt %d; want %.2f %d %d", c.name, res.GPUMemoryUtilization,
				res.MaxNumSeqs, res.MaxNumBatchedTokens, c.util, c.seqs, c.mbt)
		}
	}
}

func TestVLLMGraphsDeductedFrom021(t *testing.T) {
	in := h100(llama31_8B.spec(), 1, 16384)
	in.GPUMemoryUtilization = 0.9
	in.EngineVersion = "0.20.0"
	old := mustEstimate(t, in)
	in.EngineVersion = "0.21.0"
	nw := mustEstimate(t, in)
	g := nw.Ranks[0].CUDAGraphBytes
	if g == 0 || !nw.Ranks[0].CUDAGraphDeducted || old.Ranks[0].CUDAGraphDeducted {
		t.Fatalf("graphs %d, deducted old %v new %v", g, old.Ranks[0].CUDAGraphDeducted, nw.Ranks[0].CUDAGraphDeducted)
	}
	if old.KVBudgetBytes-nw.KVBudgetBytes != int64(g) {
		t.Errorf("budget difference %d, want the graph estimate %d", old.KVBudgetBytes-nw.KVBudgetBytes, g)
	}
	in.EnforceEager = true
	if eager := mustEstimate(t, in); eager.Ranks[0].CUDAGraphBytes != 0 || eager.KVBudgetBytes != old.KVBudgetBytes {
		t.Errorf("enforce-eager: graphs %d, budget %d (want 0, %d)", eager.Ranks[0].CUDAGraphBytes, eager.KVBudgetBytes, old.KVBudgetBytes)
	}
}

func TestStartupRefusal(t *testing.T) {
	in := h100(llama31_8B.spec(), 2, 16384)
	in.FreeMemoryBytes = []uint64{gb(79), gb(40)} // rank 1 shares its GPU
	res := mustEstimate(t, in)
	if res.Fits || len(res.Reasons) == 0 || !strings.Contains(res.Reasons[0], "rank 1: vLLM refuses to start") {
		t.Fatalf("want a start-up refusal for rank 1, got fits=%v %q", res.Fits, res.Reasons)
	}
	if len(res.Suggestions) == 0 || !strings.Contains(strings.Join(res.Suggestions, " "), "Lower -util") {
		t.Errorf("want a lower-utilization suggestion, got %q", res.Suggestions)
	}
	// Idle GPUs at 0.99 and TP2: 78.39 GiB requested, 77.64 free after NCCL (llm-d).
	in.FreeMemoryBytes = nil
	in.GPUMemoryUtilization = 0.99
	if res = mustEstimate(t, in); res.Fits {
		t.Errorf("utilization 0.99 with TP2 should be refused on an idle H100")
	}
	// vLLM 0.9 has no start-up check: the other tenant's memory comes off the KV budget.
	in.GPUMemoryUtilization = 0.9
	in.EngineVersion = "0.9.2"
	in.FreeMemoryBytes = []uint64{gb(79.18), gb(69.18)}
	res = mustEstimate(t, in)
	idle := in
	idle.FreeMemoryBytes = nil
	base := mustEstimate(t, idle)
	if d := base.Ranks[1].KVBudgetBytes - res.Ranks[1].KVBudgetBytes; d != int64(gb(10)) {
		t.Errorf("0.9.2: rank 1 budget lower by %d, want 10 GiB", d)
	}
	if res.KVBudgetBytes != res.Ranks[1].KVBudgetBytes || res.KVTokens != res.Ranks[1].KVTokens {
		t.Errorf("result is not the minimum over ranks")
	}
}

func TestFitSearches(t *testing.T) {
	// Llama-3.3-70B-FP8 on H100s: 67.7 GiB of weights do not fit one GPU
	// (llm-d: -1.44 GiB of KV), two do.
	l70 := llama33_70B_FP8
	res := mustEstimate(t, h100(l70.spec(), 1, 32768))
	if res.Fits || res.MinTPFit != 2 || res.MaxModelLenFit != 0 {
		t.Errorf("TP1: fits %v, min TP %d, max len %d; want false, 2, 0", res.Fits, res.MinTPFit, res.MaxModelLenFit)
	}
	if len(res.Suggestions) == 0 || !strings.HasPrefix(res.Suggestions[0], "Raise TP to 2") {
		t.Errorf("suggestions %q", res.Suggestions)
	}
	res2 := mustEstimate(t, h100(l70.spec(), 2, 32768))
	if !res2.Fits || res2.MinTPFit != 2 {
		t.Errorf("TP2: fits %v, min TP %d", res2.Fits, res2.MinTPFit)
	}
	// The largest context is the one whose need equals the budget.
	in := h100(l70.spec(), 2, 131072)
	in.Concurrency = 8
	r8 := mustEstimate(t, in)
	if r8.Fits {
		t.Fatalf("8 x 128k on 2 H100 should not fit")
	}
	l := r8.MaxModelLenFit
	in.Concurrency = 1
	in.MaxModelLen = int(l)
	if !mustEstimate(t, in).Fits {
		t.Errorf("max_model_len_fit %d does not fit", l)
	}
	in.MaxModelLen = int(l) + 1
	if l < 131072 && mustEstimate(t, in).Fits {
		t.Errorf("max_model_len_fit %d + 1 also fits", l)
	}
	if !strings.Contains(strings.Join(r8.Suggestions, "\n"), "to hold 8 requests") {
		t.Errorf("want a context suggestion for 8 requests, got %q", r8.Suggestions)
	}
	if !strings.Contains(r8.Reasons[0], "fewer than the 8 required") {
		t.Errorf("reasons %q", r8.Reasons)
	}
}

func TestModelMaximumAndHeads(t *testing.T) {
	res := mustEstimate(t, h100(qwen3_32B.spec(), 1, 65536))
	if res.Fits || !strings.Contains(res.Reasons[0], "longer than the model's maximum of 40960") {
		t.Errorf("reasons %q", res.Reasons)
	}
	if res.MaxModelLenFit > 40960 {
		t.Errorf("max_model_len_fit %d beyond the model maximum", res.MaxModelLenFit)
	}
	res = mustEstimate(t, h100(qwen2_7B.spec(), 8, 4096)) // 28 heads
	if res.Fits || !strings.Contains(res.Reasons[0], "28 attention heads") {
		t.Errorf("reasons %q", res.Reasons)
	}
	if res.MinTPFit != 1 {
		t.Errorf("min TP %d, want 1", res.MinTPFit)
	}
	if got := qwen2_7B.spec(); !equalInts(got.tpCandidates(), []int{1, 2, 4}) {
		t.Errorf("Qwen2-7B TP candidates %v, want [1 2 4] (28 heads, 4 KV heads)", got.tpCandidates())
	}
}

func TestSGLangDefaultMemFraction(t *testing.T) {
	for _, c := range []struct {
		name    string
		version string
		nvmlMiB uint64
		tp      int
		want    float64
	}{
		// vram.md §3.3: reserved 13,440 MiB (80 GiB TP1), 14,848 (TP8), 3,760 (24 GiB TP1).
		{"80 GiB TP1", "0.5.6", 81559, 1, math.Round((81559.0-13440)/81559*1000) / 1000},
		{"80 GiB TP8", "0.5.6", 81559, 8, math.Round((81559.0-14848)/81559*1000) / 1000},
		{"24 GiB TP1", "0.5.6", 24500, 1, math.Round((24500.0-3760)/24500*1000) / 1000},
		{"old TP table, TP4", "0.4.3", 23034, 4, 0.85},
		{"old TP table, TP1", "0.4.3", 81559, 1, 0.88},
		{"old TP table, TP8", "0.4.3", 81559, 8, 0.81},
	} {
		in := Input{Engine: kinds.SGLang, EngineVersion: c.version, Model: llama31_8B.spec(), GPUMemoryBytes: c.nvmlMiB << 20,
			NVMLTotalBytes: c.nvmlMiB << 20, TP: c.tp, MaxModelLen: 8192}
		res := mustEstimate(t, in)
		if res.GPUMemoryUtilization != c.want {
			t.Errorf("%s: mem_fraction_static %.3f, want %.3f", c.name, res.GPUMemoryUtilization, c.want)
		}
	}
}

func TestSGLangSemantics(t *testing.T) {
	// Other tenants shrink SGLang's budget in proportion (mfs x free).
	in := Input{Engine: kinds.SGLang, Model: qwen3_32B.spec(), GPUMemoryBytes: gb(79.18), TP: 2, MaxModelLen: 32768, GPUMemoryUtilization: 0.85}
	idle := mustEstimate(t, in)
	in.FreeMemoryBytes = []uint64{gb(72)}
	busy := mustEstimate(t, in)
	if busy.RequestedBytes >= idle.RequestedBytes || busy.KVTokens >= idle.KVTokens {
		t.Errorf("busy GPUs: requested %d tokens %d, idle %d %d", busy.RequestedBytes, busy.KVTokens, idle.RequestedBytes, idle.KVTokens)
	}
	// Unequal free memory: SGLang refuses.
	in.FreeMemoryBytes = []uint64{gb(79), gb(60)}
	if res := mustEstimate(t, in); res.Fits || !strings.Contains(res.Reasons[0], "unbalanced") {
		t.Errorf("reasons %q", res.Reasons)
	}
	// A pool smaller than the context: SGLang starts but caps requests.
	in.FreeMemoryBytes = nil
	in.TP = 1
	in.GPUMemoryUtilization = 0.83
	res := mustEstimate(t, in)
	if res.Fits || !strings.Contains(strings.Join(res.Reasons, " "), "caps every request") {
		t.Errorf("fits %v reasons %q (tokens %d)", res.Fits, res.Reasons, res.KVTokens)
	}
	// Weights beyond mfs x free: "Not enough memory".
	in.GPUMemoryUtilization = 0.7
	if res = mustEstimate(t, in); res.Fits || !strings.Contains(res.Reasons[0], "Not enough memory") {
		t.Errorf("reasons %q", res.Reasons)
	}
	// Page size rounds the pool down.
	in.GPUMemoryUtilization, in.BlockSize, in.MaxModelLen = 0.9, 64, 4096
	if res = mustEstimate(t, in); res.KVTokens%64 != 0 || res.KVTokens == 0 {
		t.Errorf("tokens %d not whole pages of 64", res.KVTokens)
	}
}

func TestSGLangSlidingPool(t *testing.T) {
	spec := gptOSS120B.spec()
	in := Input{Engine: kinds.SGLang, Model: spec, GPUMemoryBytes: gb(79.18), TP: 4, MaxModelLen: 16384,
		Overrides: Overrides{KVBudgetBytes: one(40)}}
	res := mustEstimate(t, in)
	// 18 full + 18 sliding layers of 512 B: tokens = rest / (18*512 + 0.8*18*512).
	want := int64(float64(gb(40)) / (18*512 + 0.8*18*512))
	if res.KVTokens != want {
		t.Errorf("full-layer tokens %d, want %d", res.KVTokens, want)
	}
}

func TestValidation(t *testing.T) {
	good := h100(llama31_8B.spec(), 1, 4096)
	for _, c := range []struct {
		name string
		mod  func(*Input)
		want string
	}{
		{"engine", func(in *Input) { in.Engine = "tgi" }, "unknown engine"},
		{"no GPU memory", func(in *Input) { in.GPUMemoryBytes = 0 }, "GPU memory is unknown"},
		{"util", func(in *Input) { in.GPUMemoryUtilization = 1.5 }, "outside (0, 1]"},
		{"NaN util", func(in *Input) { in.GPUMemoryUtilization = math.NaN() }, "outside (0, 1]"},
		{"dtype", func(in *Input) { in.KVCacheDtype = "int3" }, "unknown KV cache dtype"},
		{"ds_mla on a non-MLA model", func(in *Input) { in.KVCacheDtype = "fp8_ds_mla" }, "for MLA models"},
		{"block", func(in *Input) { in.BlockSize = 24 }, "not one vLLM accepts"},
		{"free list", func(in *Input) { in.FreeMemoryBytes = []uint64{1, 2, 3} }, "3 values for 1 ranks"},
		{"no layers", func(in *Input) { in.Model.Layers = nil }, "no decoder layers"},
		{"bad layer", func(in *Input) { in.Model.Layers[3].HeadDim = 0 }, "layer 3"},
		{"version", func(in *Input) { in.EngineVersion = "latest" }, "does not start with a number"},
		{"no context", func(in *Input) { in.MaxModelLen, in.Model.MaxModelLen = 0, 0 }, "give one (-ctx LEN)"},
		{"huge TP", func(in *Input) { in.TP = 4096 }, "1024 GPUs at most"},
	} {
		in := good
		in.Model.Layers = append([]Layer(nil), good.Model.Layers...)
		c.mod(&in)
		_, err := Estimate(in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

func TestParseVersion(t *testing.T) {
	for _, c := range []struct {
		in   string
		want version
	}{{"0.10.1.1", version{0, 10, 1}}, {"v0.16.0", version{0, 16, 0}}, {"0.5.6.post2", version{0, 5, 6}},
		{"0.17.1rc1", version{0, 17, 1}}, {"1", version{1, 0, 0}}, {"0.11.0+cu128", version{0, 11, 0}}} {
		got, err := parseVersion(c.in)
		if err != nil || got != c.want {
			t.Errorf("%q: %v %v, want %v", c.in, got, err, c.want)
		}
	}
}

// TestSuggestionsInHCLSatisfyEveryConstraint: plan's suggestions name the
// server block's attributes, and each one, followed, fits the
// concurrency too.
func TestSuggestionsInHCLSatisfyEveryConstraint(t *testing.T) {
	in := h100(llama33_70B_FP8.spec(), 2, 131072)
	in.Concurrency, in.HCL = 8, true
	res := mustEstimate(t, in)
	all := strings.Join(res.Suggestions, "\n")
	if res.Fits || strings.Contains(all, "-ctx") || strings.Contains(all, "-tp ") || strings.Contains(all, "-util") {
		t.Fatalf("suggestions %q", res.Suggestions)
	}
	if strings.Contains(all, "the longest one request fits in") {
		t.Errorf("a context for one request is suggested although 8 are required: %q", res.Suggestions)
	}
	var ctx int
	for _, s := range res.Suggestions {
		if i := strings.Index(s, "max_model_len = "); i >= 0 {
			if _, err := fmt.Sscanf(s[i:], "max_model_len = %d", &ctx); err == nil {
				break
			}
		}
	}
	if ctx == 0 {
		t.Fatalf("no max_model_len suggestion: %q", res.Suggestions)
	}
	in.MaxModelLen = ctx
	if r := mustEstimate(t, in); !r.Fits {
		t.Errorf("max_model_len = %d, as suggested, does not fit 8 requests: %q", ctx, r.Reasons)
	}
}
