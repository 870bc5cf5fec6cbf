package logdiag

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
)

// Footprint is the memory an engine reported while starting, per GPU rank,
// in GiB (2^30 bytes: vLLM prints "GiB", SGLang prints "GB" but divides by
// 2^30). A nil field was not in the log.
//
// With several ranks (tensor or pipeline parallel, each logging its own
// lines) the field is the one that limits the server: the minimum KV cache
// memory, KV tokens, GPU blocks and concurrency (both engines size the KV
// cache by the smallest rank), and the maximum weights and CUDA-graph memory.
type Footprint struct {
	Engine string `json:"engine,omitempty"` // "vllm" or "sglang", from the lines recognised

	WeightsGiB *float64 `json:"weights_gib,omitempty"` // vLLM "Model loading took X GiB"; SGLang "Load weight end ... mem usage=X GB"
	// KVCacheGiB: vLLM "Available KV cache memory: X GiB" (V0: "the rest of
	// the memory reserved for KV Cache is X GiB" / "kv_cache_size=X GiB");
	// SGLang K size + V size (or the MLA "KV size").
	KVCacheGiB *float64 `json:"kv_cache_gib,omitempty"`
	// KVTokens: vLLM V1 "GPU KV cache size: N tokens"; SGLang
	// "max_total_num_tokens=N" (else "KV Cache is allocated. #tokens: N").
	// vLLM V0 logs blocks only: see GPUBlocks.
	KVTokens *int64 `json:"kv_tokens,omitempty"`
	// GPUBlocks: vLLM V0 "# GPU blocks: N". Tokens are N × block size (16
	// unless --block-size says otherwise); the log does not say which, so
	// KVTokens is left to the caller who knows.
	GPUBlocks *int64 `json:"gpu_blocks,omitempty"`
	// MaxConcurrency: vLLM "Maximum concurrency for L tokens per request: Nx".
	MaxConcurrency *float64 `json:"max_concurrency,omitempty"`
	// MaxModelLen: L of the concurrency line, else vLLM's "max_seq_len=L" of
	// the engine config line; SGLang "context_len=L".
	MaxModelLen *int64 `json:"max_model_len,omitempty"`
	// CUDAGraphGiB: vLLM "Graph capturing finished in S secs, took X GiB";
	// SGLang "Capture cuda graph end. ... mem usage=X GB".
	CUDAGraphGiB *float64 `json:"cuda_graph_gib,omitempty"`
	// MaxRunningRequests: SGLang "max_running_requests=N".
	MaxRunningRequests *int64 `json:"max_running_requests,omitempty"`
}

var (
	fpWeightsV1   = regexp.MustCompile(`Model loading took ([\d.]+) ?(?:GiB|GB)`)
	fpWeightsV0   = regexp.MustCompile(`Loading model weights took ([\d.]+) ?(?:GiB|GB)`)
	fpWeightsSGL  = regexp.MustCompile(`Load weight end\..*mem usage=([\d.]+) ?GB`)
	fpKVAvail     = regexp.MustCompile(`Available KV cache memory: (-?[\d.]+) ?GiB`)
	fpKVRest      = regexp.MustCompile(`reserved for KV Cache is (-?[\d.]+) ?GiB`)
	fpKVSizeV0    = regexp.MustCompile(`kv_cache_size=(-?[\d.]+) ?GiB`)
	fpKVTokens    = regexp.MustCompile(`GPU KV cache size: ([\d,]+) tokens`)
	fpConcurrency = regexp.MustCompile(`Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x`)
	fpBlocks      = regexp.MustCompile(`# (?:GPU|cuda) blocks: (\d+)`)
	fpMaxSeqLen   = regexp.MustCompile(`max_seq_len=(\d+)`)
	fpGraphV1     = regexp.MustCompile(`Graph capturing finished in [\d.]+ secs?, took (-?[\d.]+) ?GiB`)
	fpSGLPool     = regexp.MustCompile(`KV Cache is allocated\. #tokens: (\d+), K size: ([\d.]+) GB, V size: ([\d.]+) GB`)
	fpSGLPoolMLA  = regexp.MustCompile(`KV Cache is allocated\. #tokens: (\d+), KV size: ([\d.]+) GB`)
	fpSGLMaxTotal = regexp.MustCompile(`max_total_num_tokens=(\d+)`)
	fpSGLContext  = regexp.MustCompile(`context_len=(\d+)`)
	fpSGLRunning  = regexp.MustCompile(`max_running_requests=(\d+)`)
	fpSGLGraph    = regexp.MustCompile(`Capture cuda graph end\..*mem usage=([\d.]+) ?GB`)
	// footprintHints: a line holds a figure only if it holds one of these.
	footprintHints = [][]byte{
		[]byte("Model loading took"), []byte("Loading model weights took"), []byte("Graph capturing finished"),
		[]byte("Available KV cache memory"), []byte("reserved for KV Cache"), []byte("kv_cache_size="),
		[]byte("GPU KV cache size"), []byte("Maximum concurrency"), []byte("blocks:"), []byte("max_seq_len="),
		[]byte("max_total_num_tokens="), []byte("Load weight end"), []byte("Capture cuda graph end"),
		[]byte("KV Cache is allocated"), []byte("vLLM API server version"), []byte("server_args=ServerArgs("),
	}
)

// ParseFootprint extracts the measured footprint from a start's log. It reads the
// whole log (the lines are near its start) but only lines that hold one of a
// few words; a log with several launches gives the last launch's figures.
// It returns nil when the log has none of the lines.
func ParseFootprint(log []byte) *Footprint {
	var fp fpAcc
	for len(log) > 0 {
		var raw []byte
		if i := bytes.IndexByte(log, '\n'); i >= 0 {
			raw, log = log[:i], log[i+1:]
		} else {
			raw, log = log, nil
		}
		if !hasAny(raw, footprintHints) {
			continue
		}
		for seg := range strings.SplitSeq(stripANSI(string(raw)), "\r") {
			msg, _, _ := stripPrefixes(seg)
			if containsAny(msg, startKeys) {
				fp = fpAcc{}
				continue
			}
			fp.add(msg)
		}
	}
	return fp.result()
}

func hasAny(b []byte, keys [][]byte) bool {
	for _, k := range keys {
		if bytes.Contains(b, k) {
			return true
		}
	}
	return false
}

// fpAcc accumulates the figures of one launch.
type fpAcc struct {
	f                  Footprint
	any                bool
	sglPoolTokens      *int64
	sglMaxTotal        *int64
	vllmMaxLen, sglLen *int64
	seqLen             *int64
}

func (a *fpAcc) add(m string) {
	if isCodeLine(m) {
		return
	}
	f := &a.f
	if v, ok := a.first(m, fpWeights); ok {
		f.WeightsGiB = maxF(f.WeightsGiB, v)
	}
	if v, ok := a.first(m, fpKVCache); ok {
		f.KVCacheGiB = minF(f.KVCacheGiB, v)
	}
	if n, ok := int1(fpKVTokens, m); ok {
		a.set("vllm")
		f.KVTokens = minI(f.KVTokens, n)
	}
	if mm := fpConcurrency.FindStringSubmatch(m); mm != nil {
		n, ok1 := parseInt(mm[1])
		c, err := strconv.ParseFloat(mm[2], 64)
		if ok1 && err == nil {
			a.set("vllm")
			a.vllmMaxLen = &n
			f.MaxConcurrency = minF(f.MaxConcurrency, c)
		}
	}
	if n, ok := int1(fpBlocks, m); ok {
		a.set("vllm")
		f.GPUBlocks = minI(f.GPUBlocks, n)
	}
	if strings.Contains(m, "max_seq_len=") && !strings.Contains(m, "max_total_num_tokens") {
		if n, ok := int1(fpMaxSeqLen, m); ok {
			a.seqLen = &n
		}
	}
	if v, ok := a.first(m, fpGraph); ok {
		f.CUDAGraphGiB = maxF(f.CUDAGraphGiB, v)
	}
	if mm := fpSGLPool.FindStringSubmatch(m); mm != nil {
		n, ok := parseInt(mm[1])
		k, e1 := strconv.ParseFloat(mm[2], 64)
		v, e2 := strconv.ParseFloat(mm[3], 64)
		if ok && e1 == nil && e2 == nil {
			a.set("sglang")
			a.sglPoolTokens = minI(a.sglPoolTokens, n)
			f.KVCacheGiB = minF(f.KVCacheGiB, round2(k+v))
		}
	} else if mm := fpSGLPoolMLA.FindStringSubmatch(m); mm != nil {
		n, ok := parseInt(mm[1])
		kv, err := strconv.ParseFloat(mm[2], 64)
		if ok && err == nil {
			a.set("sglang")
			a.sglPoolTokens = minI(a.sglPoolTokens, n)
			f.KVCacheGiB = minF(f.KVCacheGiB, kv)
		}
	}
	if strings.Contains(m, "max_total_num_tokens=") {
		if n, ok := int1(fpSGLMaxTotal, m); ok {
			a.set("sglang")
			a.sglMaxTotal = minI(a.sglMaxTotal, n)
		}
		if n, ok := int1(fpSGLContext, m); ok {
			a.sglLen = &n
		}
		if n, ok := int1(fpSGLRunning, m); ok {
			f.MaxRunningRequests = minI(f.MaxRunningRequests, n)
		}
	}
}

func (a *fpAcc) set(engine string) {
	a.any = true
	if a.f.Engine == "" {
		a.f.Engine = engine
	}
}

func (a *fpAcc) result() *Footprint {
	if !a.any {
		return nil
	}
	f := a.f
	if f.KVTokens == nil {
		// The scheduler's figure is the one SGLang serves with.
		if a.sglMaxTotal != nil {
			f.KVTokens = a.sglMaxTotal
		} else {
			f.KVTokens = a.sglPoolTokens
		}
	}
	switch {
	case a.vllmMaxLen != nil:
		f.MaxModelLen = a.vllmMaxLen
	case a.sglLen != nil:
		f.MaxModelLen = a.sglLen
	case a.seqLen != nil:
		f.MaxModelLen = a.seqLen
	}
	return &f
}

// fpFloat is a pattern whose first group is a figure, and the engine that
// logs it.
type fpFloat struct {
	re     *regexp.Regexp
	engine string
}

// The patterns of one figure, in the order they are tried.
var (
	fpWeights = []fpFloat{{fpWeightsV1, "vllm"}, {fpWeightsV0, "vllm"}, {fpWeightsSGL, "sglang"}}
	fpKVCache = []fpFloat{{fpKVAvail, "vllm"}, {fpKVRest, "vllm"}, {fpKVSizeV0, "vllm"}}
	fpGraph   = []fpFloat{{fpGraphV1, "vllm"}, {fpSGLGraph, "sglang"}}
)

// first returns the figure of the first of pats that m matches, noting its
// engine.
func (a *fpAcc) first(m string, pats []fpFloat) (float64, bool) {
	for _, p := range pats {
		if v, ok := float1(p.re, m); ok {
			a.set(p.engine)
			return v, true
		}
	}
	return 0, false
}

// int1 returns re's first group in s as an integer.
func int1(re *regexp.Regexp, s string) (int64, bool) {
	m := re.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	return parseInt(m[1])
}

func float1(re *regexp.Regexp, s string) (float64, bool) {
	m := re.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	return v, err == nil
}

// parseInt reads "184,832" or "184832".
func parseInt(s string) (int64, bool) {
	n, err := strconv.ParseInt(strings.ReplaceAll(s, ",", ""), 10, 64)
	return n, err == nil
}

func minF(p *float64, v float64) *float64 {
	if p == nil || v < *p {
		return &v
	}
	return p
}

func maxF(p *float64, v float64) *float64 {
	if p == nil || v > *p {
		return &v
	}
	return p
}

func minI(p *int64, v int64) *int64 {
	if p == nil || v < *p {
		return &v
	}
	return p
}

// round2 keeps a sum of two 2-decimal figures at 2 decimals (8.23+8.23 is
// 16.46, not 16.460000000000001).
func round2(v float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', 2, 64), 64)
	return r
}
