package vram

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/roofline/roofline/internal/engine/kinds"
)

// The versions assumed when Input.EngineVersion is empty: those whose flag
// lists ship in the reference (engines/*.csv).
const (
	DefaultVLLMVersion   = "0.16.0"
	DefaultSGLangVersion = "0.5.6.post2"
)

// GiB is 2^30 bytes, the unit both engines print (SGLang calls it "GB").
const GiB = 1 << 30

// Input is one server to size: a model on TP x PP GPUs of one kind.
type Input struct {
	// HCL words suggestions as the server block's attributes
	// (tensor_parallel = 2) instead of the vram command's flags (-tp 2).
	HCL bool

	Engine string // "vllm" (default) or "sglang"
	// EngineVersion selects the behaviour: vLLM < 0.8 is the V0 engine;
	// >= 0.21 deducts a CUDA-graph estimate and defaults utilization to 0.92.
	// "" assumes DefaultVLLMVersion / DefaultSGLangVersion.
	EngineVersion string
	Model         ModelSpec

	// GPUMemoryBytes is the per-GPU total the CUDA runtime reports
	// (cudaMemGetInfo; NVML's total minus the driver's reservation).
	GPUMemoryBytes uint64
	// NVMLTotalBytes is NVML's (nvidia-smi's) total, which SGLang's default
	// mem_fraction_static reads; 0 = GPUMemoryBytes.
	NVMLTotalBytes uint64
	// GPUName ("NVIDIA H100 80GB HBM3") and ComputeCapability ("9.0") pick
	// the engines' defaults: batch sizes (A100 or not) and the MLA block size.
	GPUName           string
	ComputeCapability string
	// FreeMemoryBytes is the free memory of each rank's GPU before launch (as
	// NVML or cudaMemGetInfo reports it; one value for all ranks, or one per
	// rank); nil assumes idle GPUs. The engine's own CUDA context and NCCL
	// take some of it before it measures.
	FreeMemoryBytes []uint64

	TP, PP int // 0 means 1
	// MaxModelLen is --max-model-len / --context-length; 0 = the model's maximum.
	MaxModelLen int
	// GPUMemoryUtilization is vLLM's --gpu-memory-utilization or SGLang's
	// --mem-fraction-static; 0 = the engine's default.
	GPUMemoryUtilization float64
	// KVCacheDtype is "auto" (or ""), "bfloat16", "fp8", "fp8_e4m3",
	// "fp8_e5m2", "fp8_ds_mla" ...
	KVCacheDtype string
	// BlockSize is vLLM's --block-size or SGLang's --page-size; 0 = default.
	BlockSize int
	// MaxNumSeqs and MaxNumBatchedTokens: vLLM's batch limits (SGLang:
	// --max-running-requests and --chunked-prefill-size); 0 = default.
	MaxNumSeqs, MaxNumBatchedTokens int
	// Concurrency is the number of requests of MaxModelLen tokens that must
	// fit in the KV cache at once; 0 or 1 means one.
	Concurrency int
	// EnforceEager disables CUDA graphs (vLLM --enforce-eager, SGLang
	// --disable-cuda-graph).
	EnforceEager bool
	// KVCacheMemoryBytes is vLLM's --kv-cache-memory-bytes: the KV budget per
	// rank as given, profiling and gpu_memory_utilization ignored.
	KVCacheMemoryBytes uint64

	// Overrides replace roofline's estimates with figures read from an
	// engine's log (for the worked checks, and to re-plan from a real launch).
	Overrides Overrides
}

// Overrides are measured figures. Each slice holds one value for every rank
// or one per rank (index = rank = pp_stage*TP + tp_rank); nil = estimate.
type Overrides struct {
	// WeightsBytes: vLLM "Model loading took X GiB"; SGLang "Load weight
	// end ... mem usage=X GB".
	WeightsBytes []uint64
	// ActivationBytes: vLLM "PyTorch activation peak memory takes X".
	ActivationBytes []uint64
	// NonTorchBytes: vLLM "non_torch_memory takes X".
	NonTorchBytes []uint64
	// CUDAGraphBytes: vLLM >= 0.21 "Estimated CUDA graph memory: X GiB".
	CUDAGraphBytes []uint64
	// InitFreeBytes is the free memory after the engine's CUDA/NCCL init:
	// SGLang "Load weight begin. avail mem=X GB"; vLLM "Free memory on device (X/..".
	InitFreeBytes []uint64
	// KVBudgetBytes: vLLM "Available KV cache memory: X GiB".
	KVBudgetBytes []uint64
}

// kvElem is a KV cache element type.
type kvElem struct {
	size  int  // bytes
	dsMLA bool // vLLM fp8_ds_mla: 656 bytes per token per MLA layer
}

func (e kvElem) bytes() uint64 { return uint64(e.size) }

// parseKVDtype maps an engine's --kv-cache-dtype to an element size; auto
// is the model dtype (vLLM stores bf16 for fp32 checkpoints, so at most 2).
func parseKVDtype(s string, modelBytes int) (kvElem, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return kvElem{size: min(modelBytes, 2)}, nil
	case "bfloat16", "bf16", "float16", "fp16", "half":
		return kvElem{size: 2}, nil
	case "float32", "fp32", "float":
		return kvElem{size: 4}, nil
	case "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc":
		return kvElem{size: 1}, nil
	case "fp8_ds_mla":
		return kvElem{size: 1, dsMLA: true}, nil
	}
	return kvElem{}, fmt.Errorf("unknown KV cache dtype %q: use auto, bfloat16, fp8, fp8_e4m3, fp8_e5m2 or fp8_ds_mla", s)
}

// version is a parsed engine version, numeric components only.
type version [3]int

// parseVersion reads "0.10.1.1", "v0.16.0", "0.5.6.post2", "0.17.1rc1".
func parseVersion(s string) (version, error) {
	var v version
	t := strings.TrimPrefix(strings.TrimSpace(s), "v")
	if t == "" {
		return v, errors.New("empty version")
	}
	parts := strings.Split(t, ".")
	for i := 0; i < len(parts) && i < 3; i++ {
		p := parts[i]
		end := 0
		for end < len(p) && p[end] >= '0' && p[end] <= '9' {
			end++
		}
		if end == 0 {
			if i == 0 {
				return v, fmt.Errorf("engine version %q does not start with a number", s)
			}
			break
		}
		n, err := strconv.Atoi(p[:end])
		if err != nil || n > 1<<20 {
			return v, fmt.Errorf("engine version %q: bad component %q", s, p)
		}
		v[i] = n
		if end < len(p) {
			break
		}
	}
	return v, nil
}

func (v version) atLeast(major, minor, patch int) bool {
	o := version{major, minor, patch}
	for i := range v {
		if v[i] != o[i] {
			return v[i] > o[i]
		}
	}
	return true
}

// pick returns the rank's value of a per-rank override.
func pick(s []uint64, rank int) (uint64, bool) {
	switch {
	case len(s) == 0:
		return 0, false
	case len(s) == 1:
		return s[0], true
	case rank < len(s):
		return s[rank], true
	}
	return s[len(s)-1], true
}

// validate checks the input and returns the resolved engine version.
func (in *Input) validate() error {
	if models[in.Engine] == nil {
		return fmt.Errorf("unknown engine %q: use %s", in.Engine, kinds.Or(false))
	}
	if in.TP < 1 || in.PP < 1 || in.TP*in.PP > maxRanks {
		return fmt.Errorf("tensor parallel %d x pipeline parallel %d: each must be at least 1, %d GPUs at most", in.TP, in.PP, maxRanks)
	}
	if in.GPUMemoryBytes == 0 {
		return errors.New("GPU memory is unknown: give -gpu-gib, -gpu NAME or -inventory FILE")
	}
	if in.GPUMemoryBytes > maxBytes || in.NVMLTotalBytes > maxBytes {
		return fmt.Errorf("GPU memory of %d bytes is more than any GPU has", in.GPUMemoryBytes)
	}
	if in.MaxModelLen < 0 || in.MaxModelLen > maxTokens {
		return fmt.Errorf("max model length %d is outside 1..%d", in.MaxModelLen, maxTokens)
	}
	u := in.GPUMemoryUtilization
	if math.IsNaN(u) || u < 0 || u > 1 {
		return fmt.Errorf("memory utilization %v is outside (0, 1]", u)
	}
	for _, v := range []struct {
		name string
		v    int
	}{{"block size", in.BlockSize}, {"max_num_seqs", in.MaxNumSeqs}, {"max_num_batched_tokens", in.MaxNumBatchedTokens}, {"concurrency", in.Concurrency}} {
		if v.v < 0 || v.v > maxTokens {
			return fmt.Errorf("%s %d is outside 0..%d", v.name, v.v, maxTokens)
		}
	}
	if in.BlockSize > maxBlockSize {
		return fmt.Errorf("block size %d is larger than %d", in.BlockSize, maxBlockSize)
	}
	if in.KVCacheMemoryBytes > maxBytes {
		return fmt.Errorf("KV cache memory of %d bytes is more than any GPU has", in.KVCacheMemoryBytes)
	}
	n := in.TP * in.PP
	check := func(name string, s []uint64) error {
		if len(s) > 1 && len(s) != n {
			return fmt.Errorf("%s has %d values for %d ranks: give one, or one per rank", name, len(s), n)
		}
		for _, v := range s {
			if v > maxBytes {
				return fmt.Errorf("%s of %d bytes is more than any GPU has", name, v)
			}
		}
		return nil
	}
	o := in.Overrides
	for _, c := range []struct {
		name string
		s    []uint64
	}{{"free memory", in.FreeMemoryBytes}, {"weights override", o.WeightsBytes}, {"activation override", o.ActivationBytes},
		{"non-torch override", o.NonTorchBytes}, {"CUDA graph override", o.CUDAGraphBytes}, {"init free override", o.InitFreeBytes},
		{"KV budget override", o.KVBudgetBytes}} {
		if err := check(c.name, c.s); err != nil {
			return err
		}
	}
	return in.Model.Validate()
}
