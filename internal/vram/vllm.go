package vram

import (
	"fmt"
	"math"
	"strings"
)

// Calibrated constants (docs/vram.md explains each; the figures are from the
// logs quoted in ../shared/reference/vram.md §2.2 and §5).
const (
	// Non-torch memory (NCCL, cuBLAS workspaces) measured by vLLM's profiler:
	// 0.10-0.14 GiB on one GPU, 0.54-0.55 GiB with NCCL (llm-d, H100).
	nonTorchSingle uint64 = 13 * GiB / 100
	nonTorchMulti  uint64 = 55 * GiB / 100
	// What the engine's CUDA context (and NCCL) take before it measures free
	// memory: H100 79.18 GiB total, 78.57 free at start (TP1), 77.64 (TP2).
	ctxSingle uint64 = 61 * GiB / 100
	ctxMulti  uint64 = 154 * GiB / 100
	// SGLang's pre-load "avail mem" on 4x L4 was 21.63 of 22.03 GiB (S02).
	ctxSGLang uint64 = 40 * GiB / 100
	// CUDA graphs: a coarse estimate, 0.1 GiB plus 10 MiB per layer (logged
	// figures range 0.1-1.0 GiB for 24-80 layers).
	graphBase     uint64 = GiB / 10
	graphPerLayer uint64 = 10 << 20
)

// samplerCopies is how many fp32 [max_num_seqs x vocab] buffers the profile
// run's dummy sampler peaks at, fitted to logged activation peaks: V1 from
// 0.11 (llm-d, five models on H100: 9.6), V1 0.8-0.10 (Qwen2-7B on A100,
// V11/V12: about 3.3), V0 (its sampler ran on max_num_seqs rows once: 1).
func (r *run) samplerCopies() float64 {
	switch {
	case r.v0:
		return 1
	case r.ver.atLeast(0, 11, 0):
		return 9.6
	}
	return 3.3
}

// Version thresholds of vLLM behaviour.
func (r *run) graphsDeducted() bool    { return r.ver.atLeast(0, 21, 0) } // CUDA graph memory profiling on by default
func (r *run) startupCheck() bool      { return r.ver.atLeast(0, 10, 0) } // "Free memory on device ... on startup"
func (r *run) paddedGrouping() bool    { return r.ver.atLeast(0, 11, 0) } // "Add N padding layers"
func (r *run) a100SmallBatch() bool    { return r.ver.atLeast(0, 9, 0) }  // PR #17885
func (r *run) defaultUtilNew() bool    { return r.ver.atLeast(0, 21, 0) } // 0.92 (PR #38284)
func (r *run) foreignCountsAsNT() bool { return !r.startupCheck() }

var vllmBlockSizes = []int{1, 8, 16, 32, 64, 128, 256}

// gpuFamily is "hopper", "blackwell" or "" from the compute capability or name.
func gpuFamily(cc, name string) string {
	switch {
	case strings.HasPrefix(cc, "9."):
		return "hopper"
	case strings.HasPrefix(cc, "10."):
		return "blackwell"
	case cc != "":
		return ""
	}
	n := strings.ToLower(name)
	for _, h := range []string{"h100", "h200", "h800", "h20", "gh200"} {
		if strings.Contains(n, h) {
			return "hopper"
		}
	}
	for _, b := range []string{"b100", "b200", "b300", "gb200", "gb300"} {
		if strings.Contains(n, b) {
			return "blackwell"
		}
	}
	return ""
}

// vllmModel is vLLM's arithmetic: V0 before 0.8, V1 from it.
var vllmModel = &model{
	defaultVersion: DefaultVLLMVersion,
	utilFlag:       "-util (--gpu-memory-utilization)",
	defaults: func(r *run) error {
		r.v0 = !r.ver.atLeast(0, 8, 0)
		return r.vllmDefaults()
	},
	compute: func(r *run, res *Result) {
		res.Mode = "vLLM V1"
		if r.v0 {
			res.Mode = "vLLM V0"
		}
		r.vllm(res)
	},
	startupCheck: (*run).startupCheck,
}

func (r *run) vllmDefaults() error {
	in := &r.in
	r.util = in.GPUMemoryUtilization
	if r.util == 0 {
		r.util = 0.9
		if r.defaultUtilNew() {
			r.util = 0.92
		}
	}
	// Batch defaults (EngineArgs.get_batch_defaults, OpenAI server): big
	// GPUs get 8192 tokens / 1024 sequences, A100s (from 0.9) and small GPUs
	// 2048 / 256. V0 without chunked prefill profiles max(max_model_len, 2048)
	// tokens; it turns chunked prefill on above 32K context.
	big := float64(in.GPUMemoryBytes) >= 70*GiB &&
		!(r.a100SmallBatch() && strings.Contains(strings.ToLower(in.GPUName), "a100"))
	r.seqs, r.mbt = 256, 2048
	if !r.v0 && big {
		r.seqs, r.mbt = 1024, 8192
	}
	if r.v0 && r.maxLen <= 32768 {
		r.mbt = max(r.maxLen, 2048)
	}
	if in.MaxNumSeqs > 0 {
		r.seqs = in.MaxNumSeqs
	}
	if in.MaxNumBatchedTokens > 0 {
		r.mbt = in.MaxNumBatchedTokens
	}

	// Block size: 16, but FlashMLA forces 64 on Hopper and CUTLASS MLA uses
	// 128 on Blackwell; Triton MLA elsewhere keeps 16.
	r.block = 16
	if in.Model.hasKind(AttnMLA) && !r.v0 {
		switch gpuFamily(in.ComputeCapability, in.GPUName) {
		case "hopper":
			r.block = 64
		case "blackwell":
			r.block = 128
		}
	}
	if in.BlockSize > 0 {
		ok := false
		for _, b := range vllmBlockSizes {
			ok = ok || b == in.BlockSize
		}
		if !ok {
			return fmt.Errorf("block size %d is not one vLLM accepts (1, 8, 16, 32, 64, 128, 256)", in.BlockSize)
		}
		r.block, r.userBlk = in.BlockSize, true
	}
	// Hybrid Mamba/linear models: vLLM enlarges the attention block so an
	// attention page is at least a Mamba state page ("Setting attention block
	// size to N tokens"), in multiples of 16.
	if !r.v0 && in.Model.hasKind(AttnLinear) {
		var attn, state uint64
		for _, l := range in.Model.Layers {
			if l.Kind == AttnLinear {
				state = max(state, l.stateBytes(in.TP))
			} else if attn == 0 {
				attn = l.tokenBytes(in.TP, r.elem)
			}
		}
		if attn > 0 && state > uint64(r.block)*attn {
			r.block = int(16 * ceilDiv(state, 16*attn))
		}
	}
	return nil
}

// vllm fills res with vLLM's per-rank arithmetic.
func (r *run) vllm(res *Result) {
	in := &r.in
	world := in.TP * in.PP
	nt, ctx := nonTorchSingle, ctxSingle
	if world > 1 {
		nt, ctx = nonTorchMulti, ctxMulti
	}
	requested := frac(in.GPUMemoryBytes, r.util)
	refused := false
	ov := in.Overrides
	for rank := 0; rank < world; rank++ {
		k, layers, launchFree := r.rankBase(rank, ctx)
		k.RequestedBytes = requested
		foreign := uint64(0)
		if r.foreignCountsAsNT() {
			foreign = in.GPUMemoryBytes - launchFree
		}
		k.NonTorchBytes = k.measured(ov.NonTorchBytes, "non_torch", nt+foreign)
		k.CUDAGraphDeducted = r.graphsDeducted() && !r.v0

		budget := subs(requested, k.WeightsBytes, k.ActivationBytes, k.NonTorchBytes)
		if k.CUDAGraphDeducted {
			budget -= int64(k.CUDAGraphBytes)
		}
		if in.KVCacheMemoryBytes > 0 {
			budget = int64(in.KVCacheMemoryBytes)
		}
		if v, ok := pick(ov.KVBudgetBytes, rank); ok {
			k.Measured = append(k.Measured, "kv_budget")
			budget = int64(v)
		}
		k.KVBudgetBytes = budget

		kv := r.vllmKV(layers, budget)
		k.KVBytesPerToken, k.NumBlocks, k.KVTokens, k.NeededBytes, k.Concurrency = kv.perToken, kv.blocks, kv.tokens, kv.needed, kv.conc
		res.Ranks = append(res.Ranks, k)

		if r.startupCheck() && in.KVCacheMemoryBytes == 0 && k.FreeBytes < requested && !refused {
			refused = true
			src := "an idle GPU"
			if len(in.FreeMemoryBytes) > 0 {
				src = fmt.Sprintf("%s free at launch", gib(launchFree))
			}
			if len(ov.InitFreeBytes) > 0 {
				src = "the measured free memory"
			}
			res.Reasons = append(res.Reasons, fmt.Sprintf(
				"rank %d: vLLM refuses to start: the free memory after its CUDA context (%s of %s, from %s) is below gpu_memory_utilization %.2f x %s = %s (\"Free memory on device ... on startup is less than desired GPU memory utilization\"). Lower the utilization or free the GPU.",
				rank, gib(k.FreeBytes), gib(in.GPUMemoryBytes), src, r.util, gib(in.GPUMemoryBytes), gib(requested)))
		}
	}
	r.vllmVerdict(res)
	if !r.graphsDeducted() && !in.EnforceEager && in.KVCacheMemoryBytes == 0 {
		headroom := in.GPUMemoryBytes - requested
		for _, k := range res.Ranks {
			if k.CUDAGraphBytes > headroom {
				res.Warnings = append(res.Warnings, fmt.Sprintf(
					"rank %d: CUDA graphs (about %s) are captured after the KV cache, in the %s that utilization %.2f leaves; capture may run out of memory (use -enforce-eager or a lower utilization).",
					k.Rank, gib(k.CUDAGraphBytes), gib(headroom), r.util))
				break
			}
		}
	}
}

// vllmVerdict adds vLLM's KV errors for the worst rank.
func (r *run) vllmVerdict(res *Result) {
	worst := -1
	for i, k := range res.Ranks {
		if k.KVBudgetBytes <= 0 || uint64(k.KVBudgetBytes) < k.NeededBytes {
			if worst < 0 || k.KVBudgetBytes < res.Ranks[worst].KVBudgetBytes {
				worst = i
			}
		}
	}
	if worst < 0 {
		return
	}
	k := res.Ranks[worst]
	switch {
	case k.KVBudgetBytes <= 0:
		res.Reasons = append(res.Reasons, fmt.Sprintf(
			"rank %d: no memory is left for the KV cache (%s after weights %s, activation %s, overhead %s%s of %s): vLLM stops with \"No available memory for the cache blocks\".",
			k.Rank, gibSigned(k.KVBudgetBytes), gib(k.WeightsBytes), gib(k.ActivationBytes), gib(k.NonTorchBytes), graphText(k), gib(k.RequestedBytes)))
	case r.v0:
		res.Reasons = append(res.Reasons, fmt.Sprintf(
			"rank %d: the KV cache holds %d tokens, fewer than one request of %d: vLLM stops with \"The model's max seq len (%d) is larger than the maximum number of tokens that can be stored in KV cache (%d)\".",
			k.Rank, k.KVTokens, r.maxLen, r.maxLen, k.KVTokens))
	default:
		res.Reasons = append(res.Reasons, fmt.Sprintf(
			"rank %d: one request of %d tokens needs %s of KV cache, more than the %s available: vLLM stops with \"To serve at least one request with the models's max seq len (%d), (%.2f GiB KV cache is needed, ...\".",
			k.Rank, r.maxLen, gib(k.NeededBytes), gibSigned(k.KVBudgetBytes), r.maxLen, float64(k.NeededBytes)/GiB))
	}
}

func graphText(k Rank) string {
	if !k.CUDAGraphDeducted {
		return ""
	}
	return ", CUDA graphs " + gib(k.CUDAGraphBytes)
}

// activation estimates the profile run's torch peak increase on one rank:
// the larger of a forward pass over mbt tokens (residual, qkv, MLP
// intermediates) and, on the last stage, the dummy sampler over
// min(max_num_seqs, mbt) rows of fp32 logits.
func (r *run) activation(last bool, mbt int) uint64 {
	s := &r.in.Model
	tp := float64(r.in.TP)
	dt := float64(s.dtypeBytes())
	h := float64(s.HiddenSize)
	q := float64(s.NumAttentionHeads*s.HeadDim) / tp
	var kv float64
	for _, l := range s.Layers {
		if t := l.tokenBytes(r.in.TP, kvElem{size: 1}); t > 0 {
			kv = float64(t)
			break
		}
	}
	mlp := 3 * float64(s.IntermediateSize) / tp
	if s.ExpertsPerToken > 0 {
		mlp = max(mlp, float64(s.ExpertsPerToken)*(3*float64(s.MoEIntermediateSize)/tp+h))
	}
	// Floats: with absurd inputs the products pass 2^64.
	fwd := float64(mbt) * dt * (2*h + q + kv + mlp)
	if last {
		rows := float64(min(r.seqs, mbt))
		fwd = max(fwd, float64(mbt)*h*dt+r.samplerCopies()*rows*float64(s.VocabSize)*4)
	}
	return uint64(min(math.Floor(fwd), maxBytes*16))
}

// kvResult is one rank's KV arithmetic.
type kvResult struct {
	perToken uint64 // one token in every KV layer
	blocks   int64
	tokens   int64
	needed   uint64 // KV of one request of maxLen
	conc     float64
}

// layerType groups layers that share a KV spec (vLLM groups equal specs).
type layerType struct {
	kind   AttentionKind
	window int
	page   uint64 // bytes per block per layer
	count  int
}

// blocksNeeded is vLLM's max_memory_usage_bytes / page for one layer.
func (r *run) blocksNeeded(t layerType, maxLen int) int64 {
	b := int64(r.block)
	switch t.kind {
	case AttnSliding:
		n := min(int64(t.window)-1+int64(r.mbt), int64(maxLen))
		return ceilDivI(n, b) + 1
	case AttnLinear:
		return 1
	}
	return ceilDivI(int64(maxLen), b)
}

func ceilDivI(a, b int64) int64 {
	if b <= 0 {
		return 0
	}
	return (a + b - 1) / b
}

// vllmKV sizes the KV cache of one rank with budget bytes.
func (r *run) vllmKV(layers []Layer, budget int64) kvResult {
	return r.vllmKVAt(layers, budget, r.maxLen)
}

func (r *run) vllmKVAt(layers []Layer, budget int64, maxLen int) kvResult {
	tp := r.in.TP
	block := uint64(r.block)
	var out kvResult
	var attnToken uint64
	for _, l := range layers {
		t := l.tokenBytes(tp, r.elem)
		out.perToken += t
		if attnToken == 0 {
			attnToken = t
		}
	}
	if r.v0 {
		// V0: one cache block holds block_size tokens of every layer; sliding
		// windows and linear layers get no discount.
		cacheBlock := block * out.perToken
		if cacheBlock == 0 {
			return out
		}
		if budget > 0 {
			out.blocks = int64(uint64(budget) / cacheBlock)
		}
		out.tokens = out.blocks * int64(block)
		out.needed = satMul(uint64(ceilDivI(int64(maxLen), int64(block))), cacheBlock)
		out.conc = float64(out.tokens) / float64(maxLen)
		return out
	}
	var types []layerType
	for _, l := range layers {
		t := layerType{kind: l.Kind, window: l.Window, page: block * l.tokenBytes(tp, r.elem)}
		switch l.Kind {
		case AttnMLA:
			t.kind = AttnFull // same spec behaviour, separate page size
		case AttnLinear:
			// Mamba state pages are padded to the attention page.
			t.page = max(block*attnToken, l.stateBytes(tp))
		}
		found := false
		for i := range types {
			if types[i].kind == t.kind && types[i].window == t.window && types[i].page == t.page {
				types[i].count++
				found = true
				break
			}
		}
		if !found {
			t.count = 1
			types = append(types, t)
		}
	}
	if len(types) == 0 {
		return out
	}
	for _, t := range types {
		out.needed = satAdd(out.needed, satMul(uint64(t.count)*t.page, uint64(r.blocksNeeded(t, maxLen))))
	}
	samePage := true
	for _, t := range types {
		samePage = samePage && t.page == types[0].page
	}
	if types[0].page == 0 {
		return out
	}
	if !samePage {
		// Unequal page sizes (rare mixes): one block of every layer at a time.
		var blockBytes uint64
		var perReq int64
		for _, t := range types {
			blockBytes += uint64(t.count) * t.page
			perReq = max(perReq, r.blocksNeeded(t, maxLen))
		}
		if budget > 0 {
			out.blocks = int64(uint64(budget) / blockBytes)
		}
		out.tokens = out.blocks * int64(block)
		if out.needed > 0 && budget > 0 {
			out.conc = float64(budget) / float64(out.needed)
		}
		return out
	}
	// Equal pages: layers are split into groups of group_size; one tensor
	// slot serves one layer of every group (kv_cache_utils, hybrid allocator).
	minN, maxN := types[0].count, types[0].count
	for _, t := range types {
		minN, maxN = min(minN, t.count), max(maxN, t.count)
	}
	group := minN
	if len(types) == 1 || (r.paddedGrouping() && 2*maxN < 3*minN) {
		group = maxN
	}
	var groups, perReq int64
	for _, t := range types {
		g := ceilDivI(int64(t.count), int64(group))
		groups += g
		perReq += g * r.blocksNeeded(t, maxLen)
	}
	if budget > 0 {
		out.blocks = int64(uint64(budget) / types[0].page / uint64(group))
	}
	out.tokens = out.blocks / groups * int64(block)
	if perReq > 0 {
		out.conc = float64(out.blocks) / float64(perReq)
	}
	return out
}

// satMul and satAdd saturate instead of wrapping.
func satMul(a, b uint64) uint64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > math.MaxUint64/b {
		return math.MaxUint64
	}
	return a * b
}

func satAdd(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}
