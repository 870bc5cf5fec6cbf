package vram

import (
	"fmt"
	"math"
)

// swaFullTokensRatio is SGLang's --swa-full-tokens-ratio default.
const swaFullTokensRatio = 0.8

// sglangModel is SGLang's arithmetic.
var sglangModel = &model{
	defaultVersion: DefaultSGLangVersion,
	utilFlag:       "-util (--mem-fraction-static)",
	defaults: func(r *run) error {
		r.sglangDefaults()
		return nil
	},
	compute: func(r *run, res *Result) {
		res.Mode = "SGLang"
		r.sglang(res)
	},
}

// sglangHeuristic is true for SGLang versions with the GPU-memory-based
// default mem_fraction_static (PR #10975, September 2025).
func (r *run) sglangHeuristic() bool { return r.ver.atLeast(0, 5, 3) }

// sglangDefaults resolves mem_fraction_static, chunked_prefill_size,
// cuda_graph_max_bs and page_size.
func (r *run) sglangDefaults() {
	in := &r.in
	nvml := in.NVMLTotalBytes
	if nvml == 0 {
		nvml = in.GPUMemoryBytes
	}
	memMiB := float64(nvml) / (1 << 20)
	tp := in.TP
	var chunk, gbs int
	if r.sglangHeuristic() {
		// server_args._handle_gpu_memory_settings: by nvidia-smi total.
		small := tp < 4
		pickBS := func(a, b int) int {
			if small {
				return a
			}
			return b
		}
		switch {
		case memMiB < 20*1024:
			chunk, gbs = 2048, 8
		case memMiB < 35*1024:
			chunk, gbs = 2048, pickBS(24, 80)
		case memMiB < 60*1024:
			chunk, gbs = 4096, pickBS(32, 160)
		case memMiB < 160*1024:
			chunk, gbs = 8192, pickBS(256, 512)
		default:
			chunk, gbs = 16384, 512
		}
	} else {
		chunk, gbs = 8192, 160
		if memMiB < 25000 {
			chunk = 2048
		}
	}
	if in.MaxNumBatchedTokens > 0 {
		chunk = in.MaxNumBatchedTokens
	}
	r.mbt, r.cudaGraphBS = chunk, gbs
	r.seqs = in.MaxNumSeqs // 0: SGLang derives max_running_requests from the pool
	r.util = in.GPUMemoryUtilization
	if r.util == 0 {
		r.util = r.sglangDefaultMFS(memMiB, chunk, gbs)
	}
	r.block = 1
	if in.Model.hasKind(AttnMLA) && gpuFamily(in.ComputeCapability, in.GPUName) == "blackwell" {
		r.block = 64 // trtllm_mla
	}
	if in.BlockSize > 0 {
		r.block, r.userBlk = in.BlockSize, true
	}
}

// sglangDefaultMFS is SGLang's default --mem-fraction-static.
func (r *run) sglangDefaultMFS(memMiB float64, chunk, gbs int) float64 {
	tp, pp := r.in.TP, r.in.PP
	if !r.sglangHeuristic() {
		switch {
		case tp >= 16:
			return 0.79
		case tp >= 8:
			return 0.81
		case tp >= 4:
			return 0.85
		case tp >= 2:
			return 0.87
		}
		return 0.88
	}
	reserved := 512 + float64(max(chunk, 2048))*1.5 + float64(gbs)*2 + float64(tp*pp)/8*1024
	if memMiB > 60*1024 {
		reserved = max(reserved, 10240)
	}
	if memMiB <= reserved {
		return 0.88
	}
	return math.Round((memMiB-reserved)/memMiB*1000) / 1000
}

// sglang fills res with SGLang's arithmetic: rest = post - pre x (1 - mfs),
// both the minimum over ranks; tokens = rest / cell per stage, minimum over
// stages, rounded down to the page size.
func (r *run) sglang(res *Result) {
	in := &r.in
	tp, pp := in.TP, in.PP
	world := tp * pp
	ctx := ctxSGLang
	ov := in.Overrides
	ranks := make([]Rank, world)
	var minPre, maxPre, minPost uint64
	for rank := 0; rank < world; rank++ {
		k, _, _ := r.rankBase(rank, ctx)
		k.NonTorchBytes = k.measured(ov.NonTorchBytes, "non_torch", ctx)
		post := uint64(max(subs(k.FreeBytes, k.WeightsBytes), 0))
		if rank == 0 {
			minPre, maxPre, minPost = k.FreeBytes, k.FreeBytes, post
		}
		minPre, maxPre, minPost = min(minPre, k.FreeBytes), max(maxPre, k.FreeBytes), min(minPost, post)
		ranks[rank] = k
	}
	if tp > 1 && float64(minPre) < 0.9*float64(maxPre) {
		res.Reasons = append(res.Reasons, fmt.Sprintf(
			"the GPUs have unequal free memory (%s to %s): SGLang stops with \"The memory capacity is unbalanced. Some GPUs may be occupied by other processes.\" Free the busy GPU or pick idle ones.",
			gib(minPre), gib(maxPre)))
	}
	headroom := uint64(float64(minPre) * (1 - r.util))
	rest := int64(minPost) - int64(headroom)
	requested := frac(minPre, r.util)
	if in.Model.hasKind(AttnLinear) {
		res.Warnings = append(res.Warnings, "SGLang keeps a separate state pool for the linear-attention (Mamba) layers that this estimate does not size: the token count is an upper bound.")
	}
	for i := range ranks {
		k := &ranks[i]
		k.RequestedBytes = requested
		k.KVBudgetBytes = rest
		if v, ok := pick(ov.KVBudgetBytes, i); ok {
			k.Measured = append(k.Measured, "kv_budget")
			k.KVBudgetBytes = int64(v)
		}
		start, end := stageLayers(len(in.Model.Layers), pp, k.PPStage)
		kv := r.sglangKV(in.Model.Layers[start:end], k.KVBudgetBytes, r.maxLen)
		k.KVBytesPerToken, k.KVTokens, k.NeededBytes, k.Concurrency = kv.perToken, kv.tokens, kv.needed, kv.conc
		k.NumBlocks = kv.tokens / int64(r.block)
	}
	res.Ranks = ranks

	worst := ranks[0]
	for _, k := range ranks {
		if k.KVTokens < worst.KVTokens || (k.KVTokens == worst.KVTokens && k.KVBudgetBytes < worst.KVBudgetBytes) {
			worst = k
		}
	}
	switch {
	case worst.KVBudgetBytes <= 0:
		res.Reasons = append(res.Reasons, fmt.Sprintf(
			"rank %d: the weights (%s) leave no room for the KV pool within mem_fraction_static %.3f x %s free: SGLang stops with \"Not enough memory. Please try to increase --mem-fraction-static.\"",
			worst.Rank, gib(worst.WeightsBytes), r.util, gib(minPre)))
	case worst.KVTokens < int64(r.maxLen):
		res.Reasons = append(res.Reasons, fmt.Sprintf(
			"rank %d: the KV pool holds %d tokens, fewer than one request of %d: SGLang starts but caps every request at %d tokens.",
			worst.Rank, worst.KVTokens, r.maxLen, max(worst.KVTokens-1, 0)))
	}
	if len(res.Reasons) == 0 {
		need := worst.ActivationBytes + worst.CUDAGraphBytes
		if need > headroom {
			res.Warnings = append(res.Warnings, fmt.Sprintf(
				"SGLang does not profile activations or CUDA graphs: they must fit in the (1 - %.3f) x %s = %s left over, and about %s is expected (chunked prefill of %d tokens plus graphs up to batch %d). Lower -util (mem_fraction_static) or the chunked prefill size.",
				r.util, gib(minPre), gib(headroom), gib(need), r.mbt, r.cudaGraphBS))
		}
	}
}

// sglangKV is SGLang's profile_max_num_token for one stage.
func (r *run) sglangKV(layers []Layer, rest int64, maxLen int) kvResult {
	tp := r.in.TP
	var out kvResult
	var full, swa uint64
	for _, l := range layers {
		t := l.tokenBytes(tp, r.elem)
		out.perToken += t
		if l.Kind == AttnSliding {
			swa += t
		} else {
			full += t
		}
	}
	out.needed = satMul(out.perToken, uint64(maxLen))
	if out.perToken == 0 {
		return out
	}
	// Hybrid SWA pools: full layers get `tokens`, sliding ones r x tokens.
	cell := float64(full) + swaFullTokensRatio*float64(swa)
	if swa == 0 {
		cell = float64(full)
	}
	if full == 0 {
		cell = float64(swa)
	}
	if rest > 0 {
		t := int64(math.Floor(float64(rest) / cell))
		out.tokens = t / int64(r.block) * int64(r.block)
	}
	out.conc = float64(out.tokens) / float64(maxLen)
	return out
}
