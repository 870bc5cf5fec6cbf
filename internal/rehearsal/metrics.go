package rehearsal

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Prometheus metrics under the engines' real names (engines.md §7), in the
// text format prometheus_client writes: counters end in _total, values are
// Python floats ("0.0"), histogram buckets carry le="..." and "+Inf".

type histogram struct {
	buckets []float64
	counts  []atomic.Uint64
	count   atomic.Uint64
	sumBits atomic.Uint64
}

func newHistogram(buckets []float64) *histogram {
	return &histogram{buckets: buckets, counts: make([]atomic.Uint64, len(buckets))}
}

func (h *histogram) observe(v float64) {
	for i, b := range h.buckets {
		if v <= b {
			h.counts[i].Add(1)
			break
		}
	}
	h.count.Add(1)
	for {
		old := h.sumBits.Load()
		if h.sumBits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// family is one metric family: a name, a type and how to write its samples.
type family struct {
	name, typ, help string
	write           func(b *strings.Builder, name, labels string)
}

type metricSet struct {
	labels   string // rendered base labels, e.g. `model_name="x"`
	families []family

	promptTokens, genTokens, requests, aborted atomic.Int64
	finished                                   sync.Map // finished_reason -> *atomic.Int64
	runningTokens                              atomic.Int64
	ttft, itl, tpot, e2e, queue                *histogram
	inference, prefill, decode                 *histogram
	promptHist, genHist, maxGenHist            *histogram
	paramsN, paramsMax, iterTokens             *histogram

	steps *stepper // engine steps for vllm:iteration_tokens_total

	mu        sync.Mutex
	lastScan  time.Time
	lastGen   int64
	startTime float64
}

var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
		2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itlBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5,
		5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	latencyBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0,
		50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	tokenBuckets = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000,
		50000, 100000, 200000}
	nBuckets = []float64{1, 2, 5, 10, 20}
)

func (h *Handler) newMetrics() *metricSet {
	m := &metricSet{
		ttft: newHistogram(ttftBuckets), itl: newHistogram(itlBuckets), tpot: newHistogram(itlBuckets),
		e2e: newHistogram(latencyBuckets), queue: newHistogram(latencyBuckets),
		inference: newHistogram(latencyBuckets), prefill: newHistogram(latencyBuckets),
		decode: newHistogram(latencyBuckets), promptHist: newHistogram(tokenBuckets),
		genHist: newHistogram(tokenBuckets), maxGenHist: newHistogram(tokenBuckets),
		paramsN: newHistogram(nBuckets), paramsMax: newHistogram(tokenBuckets),
		iterTokens: newHistogram(tokenBuckets),
		lastScan:   time.Now(), startTime: float64(time.Now().UnixNano()) / 1e9,
	}
	m.steps = &stepper{window: h.opts.ITL, hist: m.iterTokens}
	name := h.opts.servedName()
	m.labels = `model_name=` + strconv.Quote(name)
	o := h.opts
	switch {
	case o.Kind == KindSGLang:
		m.families = h.sglangFamilies(m)
	case versionLess(o.Version, "0.10"):
		m.families = h.vllm085Families(m)
	default:
		m.labels = `engine="0",` + m.labels
		m.families = h.vllm016Families(m)
	}
	return m
}

func gauge(name, help string, v func() float64) family {
	return family{name: name, typ: "gauge", help: help, write: func(b *strings.Builder, n, l string) {
		sample(b, n, l, v())
	}}
}

func counter(name, help string, v func() float64) family {
	return family{name: name + "_total", typ: "counter", help: help, write: func(b *strings.Builder, n, l string) {
		sample(b, n, l, v())
	}}
}

func hist(name, help string, h *histogram) family {
	return family{name: name, typ: "histogram", help: help, write: func(b *strings.Builder, n, l string) {
		var cum uint64
		for i, le := range h.buckets {
			cum += h.counts[i].Load()
			sample(b, n+"_bucket", l+`,le="`+pyFloat(le)+`"`, float64(cum))
		}
		sample(b, n+"_bucket", l+`,le="+Inf"`, float64(h.count.Load()))
		sample(b, n+"_count", l, float64(h.count.Load()))
		sample(b, n+"_sum", l, math.Float64frombits(h.sumBits.Load()))
	}}
}

func sample(b *strings.Builder, name, labels string, v float64) {
	b.WriteString(name)
	b.WriteByte('{')
	b.WriteString(labels)
	b.WriteString("} ")
	b.WriteString(pyFloat(v))
	b.WriteByte('\n')
}

// pyFloat formats like Python's repr(float): "0.0", "12.5", "1e-05".
func pyFloat(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e16 {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func zero() float64 { return 0 }

func load(a *atomic.Int64) func() float64 { return func() float64 { return float64(a.Load()) } }

// render writes the exposition text.
func (m *metricSet) render() string {
	m.steps.flush(time.Now())
	var b strings.Builder
	for _, f := range m.families {
		b.WriteString("# HELP " + f.name + " " + f.help + "\n")
		b.WriteString("# TYPE " + f.name + " " + f.typ + "\n")
		f.write(&b, f.name, m.labels)
	}
	return b.String()
}

func (m *metricSet) finishedCount(reason string) *atomic.Int64 {
	v, _ := m.finished.LoadOrStore(reason, new(atomic.Int64))
	return v.(*atomic.Int64)
}

func (h *Handler) running() float64 { r, _ := h.sched.counts(); return float64(r) }
func (h *Handler) waiting() float64 { _, w := h.sched.counts(); return float64(w) }

func (h *Handler) kvUsage() float64 {
	if h.opts.KVTokens <= 0 {
		return 0
	}
	return math.Min(1, float64(h.met.runningTokens.Load())/float64(h.opts.KVTokens))
}

func successFamily(m *metricSet) family {
	return family{name: "vllm:request_success_total", typ: "counter", help: "Count of successfully processed requests.",
		write: func(b *strings.Builder, n, l string) {
			for _, r := range []string{"stop", "length", "abort"} {
				sample(b, n, l+`,finished_reason="`+r+`"`, float64(m.finishedCount(r).Load()))
			}
		}}
}

func (h *Handler) vllmCommon(m *metricSet, kvName string) []family {
	return []family{
		gauge("vllm:num_requests_running", "Number of requests in model execution batches.", h.running),
		gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", h.waiting),
		gauge(kvName, "KV-cache usage. 1 means 100 percent usage.", h.kvUsage),
		counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", zero),
		counter("vllm:prompt_tokens", "Number of prefill tokens processed.", load(&m.promptTokens)),
		counter("vllm:generation_tokens", "Number of generation tokens processed.", load(&m.genTokens)),
		successFamily(m),
		hist("vllm:request_prompt_tokens", "Number of prefill tokens processed.", m.promptHist),
		hist("vllm:request_generation_tokens", "Number of generation tokens processed.", m.genHist),
		hist("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.", m.iterTokens),
		hist("vllm:request_max_num_generation_tokens", "Histogram of maximum number of requested generation tokens.", m.maxGenHist),
		hist("vllm:request_params_n", "Histogram of the n request parameter.", m.paramsN),
		hist("vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter.", m.paramsMax),
		hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", m.ttft),
		hist("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", m.e2e),
		hist("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", m.queue),
		hist("vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.", m.inference),
		hist("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", m.prefill),
		hist("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", m.decode),
	}
}

func (h *Handler) cacheConfigInfo() family {
	return family{name: "vllm:cache_config_info", typ: "gauge", help: "Information of the LLMEngine CacheConfig",
		write: func(b *strings.Builder, n, l string) {
			sample(b, n, l+`,block_size="`+strconv.Itoa(h.opts.BlockSize)+`",cache_dtype="`+h.opts.KVCacheDtype+
				`",gpu_memory_utilization="`+pyFloat(h.opts.GPUMemoryUtilization)+
				`",num_gpu_blocks="`+strconv.Itoa(h.opts.numBlocks())+`"`, 1)
		}}
}

func (h *Handler) vllm085Families(m *metricSet) []family {
	fs := h.vllmCommon(m, "vllm:gpu_cache_usage_perc")
	fs = append(fs,
		counter("vllm:gpu_prefix_cache_queries", "GPU prefix cache queries, in terms of number of queried blocks.", zero),
		counter("vllm:gpu_prefix_cache_hits", "GPU prefix cache hits, in terms of number of cached blocks.", zero),
		hist("vllm:time_per_output_token_seconds", "Histogram of time per output token in seconds.", m.itl),
		h.cacheConfigInfo())
	if h.opts.V0 {
		fs = append(fs,
			gauge("vllm:num_requests_swapped", "Number of requests swapped to CPU.", zero),
			gauge("vllm:cpu_cache_usage_perc", "CPU KV-cache usage. 1 means 100 percent usage.", zero),
			gauge("vllm:cpu_prefix_cache_hit_rate", "CPU prefix cache block hit rate.", zero),
			gauge("vllm:gpu_prefix_cache_hit_rate", "GPU prefix cache block hit rate.", zero))
	}
	return fs
}

func (h *Handler) vllm016Families(m *metricSet) []family {
	fs := h.vllmCommon(m, "vllm:kv_cache_usage_perc")
	for _, c := range []struct{ name, help string }{
		{"vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens."},
		{"vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens."},
		{"vllm:external_prefix_cache_queries", "External prefix cache queries from KV connector cross-instance cache sharing, in terms of number of queried tokens."},
		{"vllm:external_prefix_cache_hits", "External prefix cache hits from KV connector cross-instance cache sharing, in terms of number of cached tokens."},
		{"vllm:mm_cache_queries", "Multi-modal cache queries, in terms of number of queried items."},
		{"vllm:mm_cache_hits", "Multi-modal cache hits, in terms of number of cached items."},
		{"vllm:prompt_tokens_cached", "Number of cached prompt tokens (local + external)."},
		{"vllm:prompt_tokens_recomputed", "Number of cached tokens recomputed for forward pass."},
		{"vllm:corrupted_requests", "Corrupted requests, in terms of total number of requests with NaNs in logits."},
	} {
		fs = append(fs, counter(c.name, c.help, zero))
	}
	fs = append(fs,
		family{name: "vllm:prompt_tokens_by_source_total", typ: "counter", help: "Number of prompt tokens by source.",
			write: func(b *strings.Builder, n, l string) {
				sample(b, n, l+`,source="local_compute"`, float64(m.promptTokens.Load()))
				sample(b, n, l+`,source="local_cache_hit"`, 0)
				sample(b, n, l+`,source="external_kv_transfer"`, 0)
			}},
		gauge("vllm:engine_sleep_state", "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake.", func() float64 { return 1 }),
		family{name: "vllm:lora_requests_info", typ: "gauge", help: "Running stats on lora requests.",
			write: func(b *strings.Builder, n, l string) {
				sample(b, n, l+`,max_lora="0",running_lora_adapters="",waiting_lora_adapters=""`, m.startTime)
			}},
		hist("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", m.itl),
		hist("vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.", m.tpot),
		hist("vllm:request_prefill_kv_computed_tokens", "Histogram of new KV tokens computed during prefill (excluding cached tokens).", m.promptHist),
		hist("vllm:kv_block_lifetime_seconds", "Histogram of KV cache block lifetime from allocation to eviction. Sampled metrics (controlled by --kv-cache-metrics-sample).", newHistogram(latencyBuckets)),
		hist("vllm:kv_block_idle_before_evict_seconds", "Histogram of idle time before KV cache block eviction. Sampled metrics (controlled by --kv-cache-metrics-sample).", newHistogram(latencyBuckets)),
		hist("vllm:kv_block_reuse_gap_seconds", "Histogram of time gaps between consecutive KV cache block accesses. Only the first and last 4 accesses are recorded. Sampled metrics (controlled by --kv-cache-metrics-sample).", newHistogram(latencyBuckets)),
		h.cacheConfigInfo())
	return fs
}

func (h *Handler) sglangFamilies(m *metricSet) []family {
	o := h.opts
	return []family{
		gauge("sglang:num_running_reqs", "The number of running requests.", h.running),
		gauge("sglang:num_queue_reqs", "The number of requests in the waiting queue.", h.waiting),
		gauge("sglang:num_used_tokens", "The number of used tokens.", func() float64 { return float64(m.runningTokens.Load()) }),
		gauge("sglang:token_usage", "The token usage.", h.kvUsage),
		gauge("sglang:gen_throughput", "The generation throughput (token/s).", m.genThroughput),
		gauge("sglang:cache_hit_rate", "The prefix cache hit rate.", zero),
		gauge("sglang:max_total_num_tokens", "Maximum total number of tokens in the KV cache pool.", func() float64 { return float64(o.KVTokens) }),
		gauge("sglang:utilization", "The utilization.", func() float64 { return h.running() / float64(max(o.MaxNumSeqs, 1)) }),
		gauge("sglang:is_cuda_graph", "Whether the batch is using CUDA graph.", func() float64 { return 1 }),
		gauge("sglang:engine_startup_time", "The time taken for the engine to start up.", func() float64 { return o.LoadTime.Seconds() }),
		gauge("sglang:engine_load_weights_time", "The time taken for the engine to load weights.", func() float64 { return o.LoadTime.Seconds() / 2 }),
		counter("sglang:prompt_tokens", "Number of prefill tokens processed.", load(&m.promptTokens)),
		counter("sglang:generation_tokens", "Number of generation tokens processed.", load(&m.genTokens)),
		counter("sglang:cached_tokens", "Number of cached prompt tokens.", zero),
		counter("sglang:num_requests", "Number of requests processed.", load(&m.requests)),
		counter("sglang:num_aborted_requests", "Number of requests aborted.", load(&m.aborted)),
		hist("sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.", m.ttft),
		hist("sglang:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", m.itl),
		hist("sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds", m.e2e),
		hist("sglang:queue_time_seconds", "Histogram of queueing time in seconds.", m.queue),
	}
}

// stepper groups the tokens that streams emit into engine steps. vLLM
// observes vllm:iteration_tokens_total once per step with every token the
// step processed (prompt tokens of prefilling requests included); the
// rehearsal's streams are paced one by one, so a step is closed when a
// request that is already in it emits again (a sequence gets one token per
// step) or one inter-token interval after it opened: with r streams running,
// one observation of about r tokens per interval, as vLLM's batch.
type stepper struct {
	window time.Duration
	hist   *histogram

	mu      sync.Mutex
	open    time.Time
	pending int
	members map[any]bool
}

func (s *stepper) add(now time.Time, req any, tokens int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.members[req] {
		s.observeLocked()
	}
	s.closeLocked(now)
	if s.pending == 0 {
		s.open = now
	}
	if s.members == nil {
		s.members = map[any]bool{}
	}
	s.members[req] = true
	s.pending += tokens
}

// flush closes the current step if its interval has passed (a scrape must
// not see a step that is still collecting tokens).
func (s *stepper) flush(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeLocked(now)
}

func (s *stepper) closeLocked(now time.Time) {
	if s.pending > 0 && now.Sub(s.open) >= s.window {
		s.observeLocked()
	}
}

func (s *stepper) observeLocked() {
	if s.pending > 0 {
		s.hist.observe(float64(s.pending))
	}
	s.pending = 0
	clear(s.members)
}

// genThroughput is the generation rate since the previous scrape.
func (m *metricSet) genThroughput() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	now, gen := time.Now(), m.genTokens.Load()
	dt := now.Sub(m.lastScan).Seconds()
	rate := 0.0
	if dt > 0 {
		rate = float64(gen-m.lastGen) / dt
	}
	m.lastScan, m.lastGen = now, gen
	return rate
}
