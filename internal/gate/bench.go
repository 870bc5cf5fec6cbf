package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roofline/roofline/internal/config"
)

// Bench endpoints.
const (
	EndpointCompletions = "completions" // /v1/completions, token-id prompts: exact input lengths
	EndpointChat        = "chat"        // /v1/chat/completions, text prompts: lengths approximate
)

// BenchSpec is a benchmark's load. Zero values take the defaults noted.
type BenchSpec struct {
	Endpoint string // EndpointCompletions (default) or EndpointChat

	// Concurrency is the number of requests in flight in a closed loop
	// (default 1 without RequestRate); with RequestRate it caps the open
	// loop (0: no cap).
	Concurrency int
	// RequestRate makes an open loop: Poisson arrivals at this many
	// requests per second, whether or not earlier ones have finished.
	RequestRate float64
	// Requests is the number of measured requests; Duration stops sending
	// new ones after that long. With neither, 100 requests.
	Requests int
	Duration time.Duration

	InputTokens  int // default 1024
	OutputTokens int // default 128; sent as max_tokens, min_tokens and ignore_eos

	// Warmup requests run before the measured phase and are excluded
	// (default 1; negative: none).
	Warmup int
	Seed   int64

	// Goodput SLOs (zero: unset). A request is good when each set SLO holds;
	// goodput = good requests / duration (vLLM's --goodput).
	GoodputTTFT, GoodputTPOT, GoodputE2EL time.Duration

	RequestTimeout time.Duration // per request; default 10 minutes
	// SkipMetrics turns off the /metrics cross-check of token counts.
	SkipMetrics bool
}

// SpecFromConfig returns the load of a gate.bench block.
func SpecFromConfig(b *config.Bench) BenchSpec {
	if b == nil {
		return BenchSpec{}
	}
	return BenchSpec{Concurrency: b.Concurrency, RequestRate: b.RequestRate, Requests: b.Requests,
		InputTokens: b.InputTokens, OutputTokens: b.OutputTokens}
}

// WithDefaults returns s with the defaults filled in.
func (s BenchSpec) WithDefaults() BenchSpec {
	if s.Endpoint == "" {
		s.Endpoint = EndpointCompletions
	}
	if s.Concurrency <= 0 && s.RequestRate <= 0 {
		s.Concurrency = 1
	}
	if s.Requests <= 0 && s.Duration <= 0 {
		s.Requests = 100
	}
	if s.InputTokens <= 0 {
		s.InputTokens = 1024
	}
	if s.OutputTokens <= 0 {
		s.OutputTokens = 128
	}
	switch {
	case s.Warmup == 0:
		s.Warmup = 1
	case s.Warmup < 0:
		s.Warmup = 0
	}
	if s.RequestTimeout <= 0 {
		s.RequestTimeout = 10 * time.Minute
	}
	return s
}

// Validate checks a spec after WithDefaults.
func (s BenchSpec) Validate() error {
	switch {
	case s.Endpoint != EndpointCompletions && s.Endpoint != EndpointChat:
		return fmt.Errorf("endpoint %q is not %q or %q", s.Endpoint, EndpointCompletions, EndpointChat)
	case s.Concurrency < 0 || s.RequestRate < 0 || s.Requests < 0 || s.Duration < 0:
		return errors.New("concurrency, request rate, requests and duration cannot be negative")
	case math.IsInf(s.RequestRate, 0) || math.IsNaN(s.RequestRate):
		return errors.New("the request rate must be a finite number; leave it 0 for a closed loop")
	case s.Concurrency > 100000:
		return fmt.Errorf("concurrency %d is more than roofline will open connections for", s.Concurrency)
	}
	return nil
}

// BenchResult is a benchmark's outcome with vllm bench serve's metrics
// (gates.md §2.1); bench -json prints it in vLLM's result layout
// (views.BenchReport).
type BenchResult struct {
	Date           time.Time
	BaseURL        string
	Model          string
	Endpoint       string // EndpointCompletions or EndpointChat
	Spec           BenchSpec
	NumPrompts     int // measured requests sent
	RequestRate    float64
	MaxConcurrency int // 0: none

	Duration          time.Duration // first dispatch to last completion of the measured phase
	Completed, Failed int
	TotalInputTokens  int
	TotalOutputTokens int

	RequestThroughput     float64
	RequestGoodput        *float64 // nil without SLOs
	OutputThroughput      float64
	TotalTokenThroughput  float64
	MaxOutputTokensPerS   float64 // peak over 1-second buckets
	MaxConcurrentRequests int     // peak in flight

	TTFT, TPOT, ITL, E2EL Stats // milliseconds
	// ClientQueue is scheduled → sent: time a request waited in roofline
	// for the concurrency cap (open loop), which vLLM leaves out of latency.
	ClientQueue Stats

	// InputTokensExact is true when prompts were token ids (completions
	// endpoint with /tokenize); otherwise input lengths are approximate and
	// the totals come from the server's usage.
	InputTokensExact bool
	// OutputLenMismatch counts completed requests whose completion_tokens
	// differ from OutputTokens: the server ignored ignore_eos or min_tokens,
	// and throughput is then not comparable.
	OutputLenMismatch int
	Errors            []string // the first 10 failures
	Metrics           *MetricsCheck
}

// MetricsCheck compares the server's own generation-token counter with the
// sum of the completion tokens its usage reported.
type MetricsCheck struct {
	Counter      string  `json:"counter"`
	ServerTokens float64 `json:"server_generation_tokens"`
	ClientTokens int     `json:"client_generation_tokens"`
	OK           bool    `json:"ok"`
	Note         string  `json:"note,omitempty"`
}

// reqRecord is what one request leaves behind.
type reqRecord struct {
	scheduled, sent, done time.Duration // since the phase started
	ttft, e2el            time.Duration // since sent
	itl                   []float64     // ms, between output chunks
	chunkTokens           []uint16      // tokens per output chunk (1 without continuous usage)
	prompt, completion    int
	err                   string
}

// readerPool keeps SSE readers and chunks between requests, so the hot loop
// allocates nothing per chunk.
var readerPool = sync.Pool{New: func() any {
	return &streamState{sr: NewSSEReader(nil)}
}}

type streamState struct {
	sr *SSEReader
	c  Chunk
}

// Bench runs spec against t. progress, when not nil, is called (from one
// goroutine at a time) after each measured request with the number done and
// the total (0 when only a duration bounds the run). The error is non-nil
// when the benchmark could not run (bad spec, every warm-up request failed,
// ctx ended); failed requests are counted in the result instead.
func Bench(ctx context.Context, client *http.Client, t Target, spec BenchSpec, progress func(done, total int)) (*BenchResult, error) {
	spec = spec.WithDefaults()
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if client == nil {
		client = NewClient(max(spec.Concurrency, 64))
	}
	if t.Model == "" {
		cctx, cancel := context.WithTimeout(ctx, probeTimeout)
		ids, err := listModels(cctx, client, t)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("finding the served model: %w", err)
		}
		if len(ids) == 0 {
			return nil, errors.New("the server lists no model in /v1/models")
		}
		t.Model = ids[0]
	}
	b := &bencher{client: client, t: t, spec: spec}
	b.prompts = newPromptSource(ctx, client, t, &b.spec)

	res := &BenchResult{Date: time.Now(), BaseURL: t.BaseURL, Model: t.Model, Endpoint: spec.Endpoint, Spec: spec,
		RequestRate: spec.RequestRate, InputTokensExact: b.prompts.exact}
	if spec.RequestRate == 0 || spec.Concurrency > 0 {
		res.MaxConcurrency = spec.Concurrency
	}

	if spec.Warmup > 0 {
		recs := b.run(ctx, spec.Warmup, 0, 0, min(spec.Warmup, max(spec.Concurrency, 1)), -1, nil, true)
		ok := 0
		for _, r := range recs {
			if r.err == "" {
				ok++
			}
		}
		if ok == 0 && len(recs) > 0 && ctx.Err() == nil {
			return nil, fmt.Errorf("every warm-up request failed: %s", recs[0].err)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	var before *Metrics
	counter := generationCounter(t.Engine)
	if !spec.SkipMetrics {
		before = b.scrape(ctx)
		if counter == "" && before != nil {
			counter = generationCounter(before.detectEngine())
		}
	}

	total := spec.Requests
	recs := b.run(ctx, spec.Requests, spec.Duration, spec.RequestRate, spec.Concurrency, total, progress, false)
	res.NumPrompts = len(recs)
	b.compute(res, recs)

	if before != nil && counter != "" {
		res.Metrics = b.crossCheck(ctx, before, counter, recs)
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	return res, nil
}

type bencher struct {
	client  *http.Client
	t       Target
	spec    BenchSpec
	prompts *promptSource
}

func (b *bencher) scrape(ctx context.Context) *Metrics {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	m, _, err := scrapeMetrics(cctx, b.client, b.t)
	if err != nil {
		return nil
	}
	return m
}

// run sends requests and returns their records. n bounds the count (0: no
// bound), dur the dispatch time (0: none). rate > 0 makes an open loop with
// conc as a cap (0: none); otherwise conc workers loop.
func (b *bencher) run(ctx context.Context, n int, dur time.Duration, rate float64, conc int, total int, progress func(int, int), warmup bool) []*reqRecord {
	start := time.Now()
	var mu sync.Mutex
	var recs []*reqRecord
	done := 0
	finish := func(r *reqRecord) {
		mu.Lock()
		defer mu.Unlock()
		recs = append(recs, r)
		done++
		if progress != nil {
			progress(done, max(total, 0))
		}
	}
	expired := func() bool { return dur > 0 && time.Since(start) >= dur }
	var wg sync.WaitGroup
	idx := 0
	if warmup {
		idx = 1 << 30 // warm-up prompts differ from measured ones
	}

	if rate <= 0 {
		var next atomic.Int64
		for range max(conc, 1) {
			wg.Go(func() {
				for {
					i := int(next.Add(1) - 1)
					if (n > 0 && i >= n) || expired() || ctx.Err() != nil {
						return
					}
					at := time.Since(start)
					finish(b.one(ctx, idx+i, start, at, warmup))
				}
			})
		}
		wg.Wait()
		return recs
	}

	// Open loop: arrivals are drawn up front from the seed. With a request
	// count they are rescaled so the last lands at n/rate (vLLM does the
	// same), which removes the run-to-run spread of the total duration.
	r := rand.New(rand.NewPCG(uint64(b.spec.Seed), 0x5851f42d4c957f2d))
	var arrivals []time.Duration
	if n > 0 {
		arrivals = make([]time.Duration, n)
		var t float64
		for i := range arrivals {
			t += r.ExpFloat64() / rate
			arrivals[i] = time.Duration(t * float64(time.Second))
		}
		if last := arrivals[n-1]; last > 0 {
			scale := float64(n) / rate * float64(time.Second) / float64(last)
			for i := range arrivals {
				arrivals[i] = time.Duration(float64(arrivals[i]) * scale)
			}
		}
	}
	var sem chan struct{}
	if conc > 0 {
		sem = make(chan struct{}, conc)
	}
	var at time.Duration
	for i := 0; n == 0 || i < n; i++ {
		if arrivals != nil {
			at = arrivals[i]
		} else {
			at += time.Duration(r.ExpFloat64() / rate * float64(time.Second))
		}
		if dur > 0 && at >= dur {
			break
		}
		if d := time.Until(start.Add(at)); d > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(d):
			}
		}
		if ctx.Err() != nil {
			break
		}
		if sem != nil {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
			}
			if ctx.Err() != nil {
				break
			}
		}
		sched := at
		wg.Go(func() {
			finish(b.one(ctx, idx+i, start, sched, warmup))
			if sem != nil {
				<-sem
			}
		})
	}
	wg.Wait()
	return recs
}

// body builds request i's JSON body. It is written by hand: in a closed
// loop all streams finish and send again together, and the CPU spent
// between one request's timestamp and the next one's send shows up as
// latency (json.Marshal of a map with a 1000-id prompt costs ~100 µs).
func (b *bencher) body(i int, warmup bool) []byte {
	out := b.spec.OutputTokens
	if warmup {
		out = min(out, 16)
	}
	quote := func(s string) []byte { q, _ := json.Marshal(s); return q }
	buf := make([]byte, 0, 256+8*b.spec.InputTokens)
	buf = append(buf, `{"model":`...)
	buf = append(buf, quote(b.t.Model)...)
	switch {
	case b.spec.Endpoint == EndpointChat:
		buf = append(buf, `,"messages":[{"role":"user","content":`...)
		buf = append(buf, quote(b.prompts.text(i, b.spec.InputTokens))...)
		buf = append(buf, `}]`...)
	case b.prompts.ids != nil:
		buf = append(buf, `,"prompt":[`...)
		for k, id := range b.prompts.tokens(i, b.spec.InputTokens) {
			if k > 0 {
				buf = append(buf, ',')
			}
			buf = strconv.AppendInt(buf, int64(id), 10)
		}
		buf = append(buf, ']')
	default:
		buf = append(buf, `,"prompt":`...)
		buf = append(buf, quote(b.prompts.text(i, b.spec.InputTokens))...)
	}
	buf = append(buf, `,"max_tokens":`...)
	buf = strconv.AppendInt(buf, int64(out), 10)
	buf = append(buf, `,"min_tokens":`...)
	buf = strconv.AppendInt(buf, int64(out), 10)
	buf = append(buf, `,"ignore_eos":true,"temperature":0,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`...)
	return buf
}

func (b *bencher) path() string {
	if b.spec.Endpoint == EndpointChat {
		return "/v1/chat/completions"
	}
	return "/v1/completions"
}

// one sends request i and reads its stream, timestamping output chunks.
func (b *bencher) one(ctx context.Context, i int, start time.Time, scheduled time.Duration, warmup bool) *reqRecord {
	rec := &reqRecord{scheduled: scheduled}
	body := b.body(i, warmup)
	ctx, cancel := context.WithTimeout(ctx, b.spec.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.t.url(b.path()), bytes.NewReader(body))
	if err != nil {
		rec.err = err.Error()
		return rec
	}
	req.Header.Set("Content-Type", "application/json")
	b.t.authorize(req)
	req.Header.Set("X-Request-Id", "roofline-bench-"+strconv.FormatInt(start.UnixNano()%1e9, 10)+"-"+strconv.Itoa(i))

	// Latencies run from the moment the request is on the wire (httptrace's
	// WroteRequest), not from before Do as in vLLM: the client's own
	// scheduling and the transport's hand-off to its writer goroutine are
	// not the server's latency, and under a burst of 64 simultaneous sends
	// on a small machine they add milliseconds.
	var wrote atomic.Int64
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) {
		wrote.Store(int64(time.Since(start)))
	}}
	req = req.WithContext(httptrace.WithClientTrace(ctx, trace))
	sent := time.Now()
	rec.sent = sent.Sub(start)
	defer func() { rec.done = time.Since(start) }()
	resp, err := b.client.Do(req)
	if w := wrote.Load(); w > 0 {
		sent = start.Add(time.Duration(w))
	}
	if err != nil {
		rec.err = explainDial(err).Error()
		return rec
	}
	defer closeBody(resp.Body)
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if e := ParseAPIError(resp.StatusCode, data); e != nil {
			rec.err = e.Error()
		} else {
			rec.err = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, snippet(data))
		}
		return rec
	}

	ss := readerPool.Get().(*streamState)
	defer func() {
		ss.sr.Reset(nil)
		readerPool.Put(ss)
	}()
	ss.sr.Reset(resp.Body)
	rec.itl = make([]float64, 0, b.spec.OutputTokens)
	rec.chunkTokens = make([]uint16, 0, b.spec.OutputTokens)
	var last time.Time
	var usage *Usage
	var u Usage
	prevCompletion, gotDone := 0, false
	for {
		data, err := ss.sr.Next()
		now := time.Now()
		if err != nil {
			if err == io.EOF {
				rec.err = ErrNoDone.Error()
			} else {
				rec.err = "reading the stream: " + err.Error()
			}
			break
		}
		if IsDone(data) {
			gotDone = true
			break
		}
		if len(data) == 0 {
			continue
		}
		c := &ss.c
		if err := c.Decode(data); err != nil {
			rec.err = err.Error()
			break
		}
		if c.Error != nil {
			rec.err = "error inside the stream: " + c.Error.Error()
			break
		}
		token := false
		for k := range c.Choices {
			ch := &c.Choices[k]
			if ch.HasToken() {
				token = true
			}
			if ch.FinishReason == "abort" || ch.FinishReason == "error" {
				rec.err = fmt.Sprintf("the server ended the request with finish_reason %q", ch.FinishReason)
			}
		}
		if token {
			// Tokens in this chunk: exact with continuous usage stats
			// (several tokens per chunk with speculative decoding or
			// SGLang's stream interval), else one per chunk.
			k := 1
			if c.HasUsage && c.Usage.CompletionTokens > prevCompletion {
				k = c.Usage.CompletionTokens - prevCompletion
			}
			if last.IsZero() {
				rec.ttft = now.Sub(sent)
			} else {
				rec.itl = append(rec.itl, float64(now.Sub(last).Nanoseconds())/1e6)
			}
			rec.chunkTokens = append(rec.chunkTokens, uint16(min(k, math.MaxUint16)))
			last = now
		}
		if c.HasUsage {
			u = c.Usage
			usage = &u
			prevCompletion = u.CompletionTokens
		}
	}
	if !last.IsZero() {
		rec.e2el = last.Sub(sent)
	}
	if usage != nil {
		rec.prompt, rec.completion = usage.PromptTokens, usage.CompletionTokens
	}
	if rec.err != "" {
		return rec
	}
	switch {
	case !gotDone:
		rec.err = ErrNoDone.Error()
	case last.IsZero():
		rec.err = "the stream carried no output token"
	case usage == nil:
		rec.err = "no usage chunk although stream_options.include_usage was set (the server does not report token counts)"
	}
	return rec
}

// compute fills res from the measured records, with vLLM's definitions.
func (b *bencher) compute(res *BenchResult, recs []*reqRecord) {
	if len(recs) == 0 {
		return
	}
	var first, lastDone time.Duration = math.MaxInt64, 0
	var ttft, tpot, itl, e2el, queue []float64
	type event struct {
		at    time.Duration
		delta int
	}
	var events []event
	buckets := map[int64]float64{}
	good := 0
	for _, r := range recs {
		first = min(first, r.sent)
		lastDone = max(lastDone, r.done)
		events = append(events, event{r.sent, 1}, event{r.done, -1})
		queue = append(queue, ms(r.sent-r.scheduled))
		if r.err != "" {
			res.Failed++
			if len(res.Errors) < 10 {
				res.Errors = append(res.Errors, r.err)
			}
			continue
		}
		res.Completed++
		res.TotalInputTokens += r.prompt
		res.TotalOutputTokens += r.completion
		if r.completion != b.spec.OutputTokens {
			res.OutputLenMismatch++
		}
		t, e := ms(r.ttft), ms(r.e2el)
		ttft = append(ttft, t)
		e2el = append(e2el, e)
		var tp float64
		if r.completion > 1 {
			tp = (e - t) / float64(r.completion-1)
			tpot = append(tpot, tp)
		}
		itl = append(itl, r.itl...)
		if (b.spec.GoodputTTFT == 0 || t <= ms(b.spec.GoodputTTFT)) &&
			(b.spec.GoodputTPOT == 0 || tp <= ms(b.spec.GoodputTPOT)) &&
			(b.spec.GoodputE2EL == 0 || e <= ms(b.spec.GoodputE2EL)) {
			good++
		}
		// Output chunk times for the peak tokens/s, in 1-second buckets of
		// the phase (vLLM's max_output_tokens_per_s).
		at := r.sent + r.ttft
		for k, n := range r.chunkTokens {
			if k > 0 {
				at += time.Duration(r.itl[k-1] * 1e6)
			}
			buckets[int64((at-first)/time.Second)] += float64(n)
		}
	}
	res.Duration = lastDone - first
	dur := res.Duration.Seconds()
	if dur > 0 {
		res.RequestThroughput = float64(res.Completed) / dur
		res.OutputThroughput = float64(res.TotalOutputTokens) / dur
		res.TotalTokenThroughput = float64(res.TotalInputTokens+res.TotalOutputTokens) / dur
		if b.spec.GoodputTTFT > 0 || b.spec.GoodputTPOT > 0 || b.spec.GoodputE2EL > 0 {
			g := float64(good) / dur
			res.RequestGoodput = &g
		}
	}
	for _, v := range buckets {
		res.MaxOutputTokensPerS = max(res.MaxOutputTokensPerS, v)
	}
	sort.Slice(events, func(i, j int) bool {
		if events[i].at != events[j].at {
			return events[i].at < events[j].at
		}
		return events[i].delta < events[j].delta
	})
	inflight := 0
	for _, e := range events {
		inflight += e.delta
		res.MaxConcurrentRequests = max(res.MaxConcurrentRequests, inflight)
	}
	res.TTFT, res.TPOT, res.ITL, res.E2EL = summarize(ttft), summarize(tpot), summarize(itl), summarize(e2el)
	res.ClientQueue = summarize(queue)
}

// crossCheck compares the server's generation counter delta with the usage
// totals. Engines update counters as outputs are processed, so a short lag
// is allowed for before calling it a mismatch.
func (b *bencher) crossCheck(ctx context.Context, before *Metrics, counter string, recs []*reqRecord) *MetricsCheck {
	mc := &MetricsCheck{Counter: counter}
	failed := 0
	for _, r := range recs {
		mc.ClientTokens += r.completion
		if r.err != "" {
			failed++
		}
	}
	v0, ok := before.Sum(counter)
	if !ok {
		return nil // the server has no such counter: nothing to compare
	}
	for attempt := 0; attempt < 3; attempt++ {
		after := b.scrape(ctx)
		v1, ok := after.Sum(counter)
		if !ok {
			mc.Note = "could not read /metrics after the run"
			return mc
		}
		mc.ServerTokens = v1 - v0
		diff := math.Abs(mc.ServerTokens - float64(mc.ClientTokens))
		if diff <= math.Max(1, 0.005*float64(mc.ClientTokens)) {
			mc.OK = true
			return mc
		}
		select {
		case <-ctx.Done():
			attempt = 3
		case <-time.After(200 * time.Millisecond):
		}
	}
	switch {
	case failed > 0:
		mc.OK = true
		mc.Note = fmt.Sprintf("not compared: %d failed requests generated tokens the client could not count", failed)
	case mc.ServerTokens > float64(mc.ClientTokens):
		mc.Note = fmt.Sprintf("the server counted %.0f generated tokens, its usage reported %d: other traffic reached the server during the run, or its usage under-reports", mc.ServerTokens, mc.ClientTokens)
	default:
		mc.Note = fmt.Sprintf("the server counted %.0f generated tokens, its usage reported %d: the usage over-reports", mc.ServerTokens, mc.ClientTokens)
	}
	return mc
}
