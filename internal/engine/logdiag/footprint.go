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
// The lines each figure comes from are the kinds' (Rules.Footprint,
// engine/vllm_log.go and sglang_log.go); the fields name them.
type Footprint struct {
	Engine string `json:"engine,omitempty"` // the kind whose lines were recognised (Rules.Kind)

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

// FootprintLine reads the figures of one kind of start-up line.
type FootprintLine struct {
	// Hint: only lines that hold it are read (cheap; most lines hold none).
	Hint string
	// Re must match the line; its submatches go to Read.
	Re *regexp.Regexp
	// Read hands the figures of m (Re's submatches) to r.
	Read func(r *Reading, m []string)
}

// kindLine is a footprint line and the kind that logs it.
type kindLine struct {
	kind string
	FootprintLine
}

// Footprint extracts the measured footprint from a start's log. It reads the
// whole log (the lines are near its start) but only lines that hold one of a
// few words; a log with several launches gives the last launch's figures.
// It returns nil when the log has none of the lines.
func (c *Classifier) Footprint(log []byte) *Footprint {
	var r Reading
	for len(log) > 0 {
		var raw []byte
		if i := bytes.IndexByte(log, '\n'); i >= 0 {
			raw, log = log[:i], log[i+1:]
		} else {
			raw, log = log, nil
		}
		if !hasAny(raw, c.footprintHints) {
			continue
		}
		for seg := range strings.SplitSeq(stripANSI(string(raw)), "\r") {
			msg, _, _ := stripPrefixes(seg)
			if containsAny(msg, c.starts) {
				r = Reading{}
				continue
			}
			if isCodeLine(msg) {
				continue
			}
			for _, f := range c.footprint {
				if !strings.Contains(msg, f.Hint) {
					continue
				}
				if m := f.Re.FindStringSubmatch(msg); m != nil {
					r.kind = f.kind
					f.Read(&r, m)
				}
			}
		}
	}
	return r.result()
}

func hasAny(b []byte, keys [][]byte) bool {
	for _, k := range keys {
		if bytes.Contains(b, k) {
			return true
		}
	}
	return false
}

// Reading accumulates the figures of one launch. Each method takes a figure
// as the log writes it ("184,832", "28.21") and ignores one that does not
// parse. Where a figure has several sources, pref ranks them: the lowest
// pref seen wins, and within one pref the rule of the figure applies (the
// limiting rank: minimum or maximum; the last model length).
type Reading struct {
	f    Footprint
	kind string // of the line being read
	any  bool
	// tokens and modelLen by pref.
	tokens, modelLen []*int64
}

// found notes that the log holds a measured figure, of the kind whose line
// is being read.
func (r *Reading) found() {
	r.any = true
	if r.f.Engine == "" {
		r.f.Engine = r.kind
	}
}

// Weights is the memory the weights took (the largest rank's).
func (r *Reading) Weights(gib string) {
	if v, ok := parseFloat(gib); ok {
		r.found()
		r.f.WeightsGiB = maxF(r.f.WeightsGiB, v)
	}
}

// KVCache is the KV cache memory (the smallest rank's); several parts (K
// and V) are summed, at two decimals.
func (r *Reading) KVCache(gib ...string) {
	var sum float64
	for _, p := range gib {
		v, ok := parseFloat(p)
		if !ok {
			return
		}
		sum += v
	}
	if len(gib) > 1 {
		sum = round2(sum)
	}
	r.found()
	r.f.KVCacheGiB = minF(r.f.KVCacheGiB, sum)
}

// KVTokens is the KV cache's size in tokens (the smallest rank's).
func (r *Reading) KVTokens(n string, pref int) {
	if v, ok := parseInt(n); ok {
		r.found()
		r.tokens = setPref(r.tokens, pref, func(p *int64) *int64 { return minI(p, v) })
	}
}

// GPUBlocks is the KV cache's size in blocks (the smallest rank's).
func (r *Reading) GPUBlocks(n string) {
	if v, ok := parseInt(n); ok {
		r.found()
		r.f.GPUBlocks = minI(r.f.GPUBlocks, v)
	}
}

// MaxConcurrency is how many requests of the full length the KV cache
// holds (the smallest rank's).
func (r *Reading) MaxConcurrency(x string) {
	if v, ok := parseFloat(x); ok {
		r.found()
		r.f.MaxConcurrency = minF(r.f.MaxConcurrency, v)
	}
}

// CUDAGraph is the memory CUDA graphs took (the largest rank's).
func (r *Reading) CUDAGraph(gib string) {
	if v, ok := parseFloat(gib); ok {
		r.found()
		r.f.CUDAGraphGiB = maxF(r.f.CUDAGraphGiB, v)
	}
}

// MaxModelLen is the context length the engine serves (the last one
// logged). A configuration figure: alone it is no footprint.
func (r *Reading) MaxModelLen(n string, pref int) {
	if v, ok := parseInt(n); ok {
		r.modelLen = setPref(r.modelLen, pref, func(*int64) *int64 { return &v })
	}
}

// MaxRunningRequests is the engine's cap on concurrent requests (the
// smallest rank's). A configuration figure: alone it is no footprint.
func (r *Reading) MaxRunningRequests(n string) {
	if v, ok := parseInt(n); ok {
		r.f.MaxRunningRequests = minI(r.f.MaxRunningRequests, v)
	}
}

func setPref(s []*int64, pref int, f func(*int64) *int64) []*int64 {
	pref = max(pref, 0)
	for len(s) <= pref {
		s = append(s, nil)
	}
	s[pref] = f(s[pref])
	return s
}

// best is the figure of the lowest pref seen.
func best(s []*int64) *int64 {
	for _, p := range s {
		if p != nil {
			return p
		}
	}
	return nil
}

func (r *Reading) result() *Footprint {
	if !r.any {
		return nil
	}
	f := r.f
	f.KVTokens = best(r.tokens)
	f.MaxModelLen = best(r.modelLen)
	return &f
}

func parseFloat(s string) (float64, bool) {
	v, err := strconv.ParseFloat(s, 64)
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
