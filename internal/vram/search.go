package vram

import (
	"fmt"
	"math"
)

// at returns a copy of r sized for max_model_len l and conc requests.
func (r *run) at(l, conc int) *run {
	c := *r
	c.maxLen, c.conc = l, conc
	if c.v0 && c.in.MaxNumBatchedTokens == 0 {
		// V0 profiles a whole max_model_len prompt unless chunked prefill is on.
		c.mbt = 2048
		if l <= 32768 {
			c.mbt = max(l, 2048)
		}
	}
	return &c
}

func (r *run) fits(l, conc int) bool { return r.at(l, conc).compute().Fits }

// largestLen is the largest max_model_len at which conc requests fit, capped
// at the model's maximum; 0 when not even one token does. Every term grows
// with the length, so a binary search finds it.
func (r *run) largestLen(conc int) int64 {
	hi := r.in.Model.MaxModelLen
	if hi <= 0 {
		hi = maxTokens
	}
	if !r.fits(1, conc) {
		return 0
	}
	lo := 1
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if r.fits(mid, conc) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return int64(lo)
}

// tpCandidates are the TP sizes the engines accept for the model, up to 8:
// attention heads divisible by TP, and KV heads divisible by TP or TP by them.
func (s *ModelSpec) tpCandidates() []int {
	kvh := 0
	for _, l := range s.Layers {
		if l.Kind == AttnFull || l.Kind == AttnSliding {
			kvh = l.KVHeads
			break
		}
	}
	var out []int
	for t := 1; t <= 8; t++ {
		if s.NumAttentionHeads > 0 && s.NumAttentionHeads%t != 0 {
			continue
		}
		if kvh > 0 && ((t >= kvh && t%kvh != 0) || (t < kvh && kvh%t != 0)) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// withTP is the input at another TP. Measured figures belong to the
// original layout, so they are dropped; free memory becomes the least free.
func (r *run) withTP(t int) (*run, error) {
	in := r.in
	if t == in.TP {
		return r, nil
	}
	in.TP = t
	in.Overrides = Overrides{}
	if len(in.FreeMemoryBytes) > 1 {
		m := in.FreeMemoryBytes[0]
		for _, f := range in.FreeMemoryBytes {
			m = min(m, f)
		}
		in.FreeMemoryBytes = []uint64{m}
	}
	in.MaxModelLen = r.maxLen
	in.Concurrency = r.conc
	return resolve(in)
}

// minTP is the smallest TP up to 8 at which the model fits.
func (r *run) minTP() int {
	for _, t := range r.in.Model.tpCandidates() {
		c, err := r.withTP(t)
		if err != nil || t*r.in.PP > maxRanks {
			continue
		}
		if c.compute().Fits {
			return t
		}
	}
	return 0
}

// refused reports whether vLLM's start-up free-memory check fails.
func (r *run) refused(res *Result) bool {
	if r.m.startupCheck == nil || !r.m.startupCheck(r) || r.in.KVCacheMemoryBytes > 0 {
		return false
	}
	for _, k := range res.Ranks {
		if k.FreeBytes < k.RequestedBytes {
			return true
		}
	}
	return false
}

// suggest adds the changes that would make the model fit.
func (r *run) suggest(res *Result) {
	if res.Fits {
		return
	}
	add := func(format string, a ...any) { res.Suggestions = append(res.Suggestions, fmt.Sprintf(format, a...)) }
	// Each suggestion satisfies every constraint at once (the concurrency
	// included), so following one never leads into the next error.
	if t := res.MinTPFit; t > r.in.TP {
		if c, err := r.withTP(t); err == nil {
			if cr := c.compute(); cr.Fits {
				how := fmt.Sprintf("-tp %d", t)
				if r.in.HCL {
					how = fmt.Sprintf("tensor_parallel = %d, with %d GPUs in gpus", t, t*max(r.in.PP, 1))
				}
				add("Raise TP to %d (%s): %s of weights per GPU, %d KV tokens, %.2f requests of %d tokens at once.",
					t, how, gib(cr.WeightsBytes), cr.KVTokens, cr.MaxConcurrency, r.maxLen)
			}
		}
	}
	ctx := func(l int64) string {
		if r.in.HCL {
			return fmt.Sprintf("max_model_len = %d", l)
		}
		return fmt.Sprintf("-ctx %d", l)
	}
	if l := res.MaxModelLenFit; l > 0 && l < int64(r.maxLen) && r.conc <= 1 {
		add("Lower the context to %d tokens (%s), the longest one request fits in.", l, ctx(l))
	}
	if r.conc > 1 {
		if lc := r.largestLen(r.conc); lc > 0 && lc < int64(r.maxLen) {
			add("Lower the context to %d tokens (%s) to hold %d requests at once.", lc, ctx(lc), r.conc)
		}
	}
	if r.elem.size >= 2 {
		c := *r
		c.elem = kvElem{size: 1}
		if cr := c.compute(); cr.Fits {
			how := "-kv-cache-dtype fp8"
			if r.in.HCL {
				how = `kv_cache_dtype = "fp8"`
			}
			add("Use an fp8 KV cache (%s): %d KV tokens, %.2f requests of %d tokens at once.",
				how, cr.KVTokens, cr.MaxConcurrency, r.maxLen)
		}
	}
	flag := r.m.utilFlag
	if r.in.HCL {
		flag = "gpu_memory_utilization"
	}
	if r.refused(res) {
		minFree := res.Ranks[0].FreeBytes
		for _, k := range res.Ranks {
			minFree = min(minFree, k.FreeBytes)
		}
		u := math.Floor(float64(minFree)/float64(r.in.GPUMemoryBytes)*100) / 100
		if u > 0 {
			c := *r
			c.util = u
			if cr := c.compute(); cr.Fits {
				add("Lower %s to %.2f, which the free memory allows: %d KV tokens.", flag, u, cr.KVTokens)
			} else {
				add("Free the GPUs (other processes hold memory): at %s %.2f the engine starts but the model does not fit.", flag, u)
			}
		}
		return
	}
	// More memory for the engine, up to 0.95 (above it prefill tends to OOM).
	for u := math.Ceil(r.util*100)/100 + 0.01; u <= 0.955; u += 0.01 {
		c := *r
		c.util = u
		cr := c.compute()
		if c.refused(cr) {
			break
		}
		if cr.Fits {
			add("Raise %s to %.2f: %d KV tokens.", flag, u, cr.KVTokens)
			break
		}
	}
}
