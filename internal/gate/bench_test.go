package gate

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/engine/kinds"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/gate/gatetest"
	"github.com/roofline/roofline/internal/testload"
)

func TestPercentileMatchesNumpy(t *testing.T) {
	// numpy.percentile(x, p), method "linear", worked by hand: sorted x is
	// 1 3 7 9 15 20 35 40 50 120; p90 → rank 8.1 → 50 + 0.1·70 = 57.
	x := []float64{15, 20, 35, 40, 50, 1, 3, 7, 9, 120}
	tests := []struct{ p, want float64 }{
		{0, 1}, {50, 17.5}, {90, 57}, {99, 113.7}, {100, 120}, {25, 7.5}, {75, 38.75},
	}
	s := slices.Clone(x)
	slices.Sort(s)
	for _, tt := range tests {
		if got := percentile(s, tt.p); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("p%v = %v, want %v", tt.p, got, tt.want)
		}
	}
	st := summarize(slices.Clone(x))
	// Population std as numpy.std (ddof=0) and statistics.pstdev: 33.8969025…
	if st.Mean != 30 || math.Abs(st.Std-33.8969025) > 1e-6 || st.Median != 17.5 || st.N != 10 {
		t.Errorf("summary %+v", st)
	}
	if got := summarize(nil); got != (Stats{}) {
		t.Errorf("empty: %+v", got)
	}
	if got := percentile([]float64{4}, 99); got != 4 {
		t.Errorf("one sample: %v", got)
	}
}

func TestBenchClosedLoop(t *testing.T) {
	fake, target := serve(t, gatetest.Options{TTFT: 5 * time.Millisecond, ITL: time.Millisecond})
	var calls, lastDone, lastTotal atomic.Int64
	res, err := Bench(context.Background(), nil, target, BenchSpec{Concurrency: 4, Requests: 20, InputTokens: 100, OutputTokens: 10},
		func(done, total int) { calls.Add(1); lastDone.Store(int64(done)); lastTotal.Store(int64(total)) })
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != 20 || res.Failed != 0 || res.NumPrompts != 20 {
		t.Fatalf("completed %d failed %d prompts %d: %v", res.Completed, res.Failed, res.NumPrompts, res.Errors)
	}
	if res.TotalInputTokens != 20*100 || res.TotalOutputTokens != 20*10 || !res.InputTokensExact {
		t.Errorf("input %d output %d exact %v; token-id prompts must make lengths exact", res.TotalInputTokens, res.TotalOutputTokens, res.InputTokensExact)
	}
	if calls.Load() != 20 || lastDone.Load() != 20 || lastTotal.Load() != 20 {
		t.Errorf("progress: %d calls, last %d/%d", calls.Load(), lastDone.Load(), lastTotal.Load())
	}
	if res.MaxConcurrentRequests > 4 || res.MaxConcurrentRequests < 2 || res.MaxConcurrency != 4 {
		t.Errorf("peak concurrency %d with a cap of 4", res.MaxConcurrentRequests)
	}
	if res.ITL.N != 20*9 || res.TPOT.N != 20 || res.TTFT.N != 20 {
		t.Errorf("samples: itl %d tpot %d ttft %d", res.ITL.N, res.TPOT.N, res.TTFT.N)
	}
	if res.TTFT.Median < 5 || res.E2EL.Median < res.TTFT.Median || res.OutputThroughput <= 0 {
		t.Errorf("implausible: %+v", res)
	}
	// The warm-up request is not counted; the server saw it.
	if fake.Requests() != 21 {
		t.Errorf("server saw %d requests, want 20 + 1 warm-up", fake.Requests())
	}
	if res.Metrics == nil || !res.Metrics.OK || res.Metrics.ServerTokens != 200 {
		t.Errorf("metrics cross-check: %+v", res.Metrics)
	}
	body := fake.LastBody()
	if body["ignore_eos"] != true || body["max_tokens"] != float64(10) || body["min_tokens"] != float64(10) || body["stream"] != true {
		t.Errorf("request body %v", body)
	}
	if p, ok := body["prompt"].([]any); !ok || len(p) != 100 {
		t.Errorf("prompt is not 100 token ids: %T", body["prompt"])
	}
}

func TestBenchPromptsDiffer(t *testing.T) {
	p := &promptSource{ids: make([]int, 2000), seed: 7}
	for i := range p.ids {
		p.ids[i] = i
	}
	seen := map[int]bool{}
	for i := range 50 {
		seen[p.tokens(i, 16)[0]] = true
	}
	if len(seen) < 45 {
		t.Errorf("only %d distinct first tokens in 50 prompts: prefix caching would flatter the run", len(seen))
	}
}

func TestBenchOpenLoop(t *testing.T) {
	_, target := serve(t, gatetest.Options{ITL: time.Millisecond})
	start := time.Now()
	res, err := Bench(context.Background(), nil, target, BenchSpec{RequestRate: 100, Requests: 40, InputTokens: 16, OutputTokens: 4, Warmup: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The schedule is rescaled so the last arrival is at n/rate = 0.4 s.
	d := time.Since(start)
	if d < 350*time.Millisecond {
		t.Errorf("40 requests at 100/s took %s, before the last arrival", d)
	}
	testload.Within(t, "40 requests at 100/s", d, 5*time.Second)
	if res.Completed != 40 || res.MaxConcurrency != 0 || res.RequestRate != 100 {
		t.Errorf("completed %d, max concurrency %d, rate %v", res.Completed, res.MaxConcurrency, res.RequestRate)
	}
	var buf bytes.Buffer
	res.Render(&buf)
	if !strings.Contains(buf.String(), "Request rate configured (RPS):           100.00") || strings.Contains(buf.String(), "Maximum request concurrency") {
		t.Errorf("table:\n%s", buf.String())
	}
}

func TestBenchDuration(t *testing.T) {
	_, target := serve(t, gatetest.Options{ITL: 2 * time.Millisecond})
	res, err := Bench(context.Background(), nil, target, BenchSpec{Concurrency: 2, Duration: 300 * time.Millisecond, InputTokens: 16, OutputTokens: 5}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed < 5 || res.Duration < 300*time.Millisecond {
		t.Errorf("completed %d in %s", res.Completed, res.Duration)
	}
	testload.Within(t, "a 300 ms bench", res.Duration, 2*time.Second)
}

func TestBenchFailures(t *testing.T) {
	tests := []struct {
		name  string
		opts  gatetest.Options
		check func(t *testing.T, r *BenchResult)
	}{
		{"in-stream errors", gatetest.Options{FailEvery: 5}, func(t *testing.T, r *BenchResult) {
			if r.Failed == 0 || r.Completed+r.Failed != 20 || !strings.Contains(r.Errors[0], "EngineCore") {
				t.Errorf("completed %d failed %d errors %q", r.Completed, r.Failed, r.Errors)
			}
		}},
		{"ignore_eos not honoured", gatetest.Options{IgnoreEOSBroken: true}, func(t *testing.T, r *BenchResult) {
			if r.OutputLenMismatch != 20 || !strings.Contains(strings.Join(r.Notes(), "\n"), "ignored ignore_eos") {
				t.Errorf("mismatch %d notes %q", r.OutputLenMismatch, r.Notes())
			}
		}},
		{"usage disagrees with /metrics", gatetest.Options{UsageSkew: 1}, func(t *testing.T, r *BenchResult) {
			if r.Metrics == nil || r.Metrics.OK || !strings.Contains(r.Metrics.Note, "over-reports") {
				t.Errorf("metrics check %+v", r.Metrics)
			}
		}},
		{"no /tokenize: approximate lengths", gatetest.Options{NoTokenize: true}, func(t *testing.T, r *BenchResult) {
			if r.InputTokensExact || r.Completed != 20 || !strings.Contains(strings.Join(r.Notes(), "\n"), "approximate") {
				t.Errorf("exact %v completed %d notes %q", r.InputTokensExact, r.Completed, r.Notes())
			}
		}},
		{"sglang without metrics: no cross-check", gatetest.Options{Engine: "sglang"}, func(t *testing.T, r *BenchResult) {
			if r.Metrics != nil || r.Completed != 20 {
				t.Errorf("metrics %+v", r.Metrics)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, target := serve(t, tt.opts)
			res, err := Bench(context.Background(), nil, target, BenchSpec{Concurrency: 4, Requests: 20, InputTokens: 32, OutputTokens: 8, Warmup: -1}, nil)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, res)
		})
	}
}

func TestBenchChatEndpoint(t *testing.T) {
	fake, target := serve(t, gatetest.Options{})
	res, err := Bench(context.Background(), nil, target, BenchSpec{Endpoint: EndpointChat, Concurrency: 2, Requests: 6, InputTokens: 200, OutputTokens: 8}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != 6 || res.InputTokensExact {
		t.Fatalf("completed %d exact %v: %v", res.Completed, res.InputTokensExact, res.Errors)
	}
	// About 200 tokens each (the fake's template adds 6).
	if per := res.TotalInputTokens / 6; per < 190 || per > 220 {
		t.Errorf("%d input tokens per request, want about 200", per)
	}
	if _, ok := fake.LastBody()["messages"]; !ok {
		t.Error("chat requests carry no messages")
	}
}

func TestBenchErrors(t *testing.T) {
	_, target := serve(t, gatetest.Options{})
	bad := target
	bad.Model = "nope"
	if _, err := Bench(context.Background(), nil, bad, BenchSpec{Requests: 2}, nil); err == nil || !strings.Contains(err.Error(), "warm-up") {
		t.Errorf("wrong model: %v", err)
	}
	if _, err := Bench(context.Background(), nil, target, BenchSpec{Endpoint: "embeddings"}, nil); err == nil {
		t.Error("bad endpoint accepted")
	}
	if _, err := Bench(context.Background(), nil, target, BenchSpec{RequestRate: math.Inf(1)}, nil); err == nil {
		t.Error("infinite rate accepted")
	}
	// No model given: the first served one is used.
	noModel := target
	noModel.Model = ""
	res, err := Bench(context.Background(), nil, noModel, BenchSpec{Requests: 2, OutputTokens: 2, InputTokens: 8}, nil)
	if err != nil || res.Model != "test-model" {
		t.Errorf("model discovery: %v %+v", err, res)
	}
}

func TestBenchCancel(t *testing.T) {
	_, target := serve(t, gatetest.Options{ITL: 50 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := Bench(ctx, nil, target, BenchSpec{Concurrency: 2, Requests: 100, OutputTokens: 100, Warmup: -1}, nil)
	if err == nil {
		t.Fatal("no error after cancel")
	}
	testload.Within(t, "the bench after its cancel", time.Since(start), 3*time.Second)
	if res == nil || res.Failed == 0 {
		t.Errorf("partial result: %+v", res)
	}
}

// fixedResult is a result with known figures, for output formats.
func fixedResult() *BenchResult {
	g := 3.5
	return &BenchResult{
		Date: time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC), BaseURL: "http://127.0.0.1:8000", Model: "qwen3-8b",
		Endpoint: EndpointCompletions, Spec: BenchSpec{InputTokens: 1024, OutputTokens: 128, Warmup: 1}.WithDefaults(),
		NumPrompts: 200, MaxConcurrency: 16, Duration: 12345 * time.Millisecond, Completed: 199, Failed: 1,
		TotalInputTokens: 199 * 1024, TotalOutputTokens: 199 * 128, RequestThroughput: 16.12, RequestGoodput: &g,
		OutputThroughput: 2063.5, TotalTokenThroughput: 18571.2, MaxOutputTokensPerS: 2304, MaxConcurrentRequests: 16,
		TTFT:             Stats{Mean: 120.5, Median: 101.25, Std: 30, P90: 180, P99: 250.75, N: 199},
		TPOT:             Stats{Mean: 7.1, Median: 7, Std: 0.5, P90: 7.8, P99: 8.9, N: 199},
		ITL:              Stats{Mean: 7.05, Median: 6.9, Std: 1.2, P90: 8, P99: 15.5, N: 199 * 127},
		E2EL:             Stats{Mean: 1020, Median: 1000, Std: 60, P90: 1100, P99: 1250, N: 199},
		InputTokensExact: true, Errors: []string{"error inside the stream: InternalServerError: EngineCore encountered an issue."},
		Metrics: &MetricsCheck{Counter: "vllm:generation_tokens_total", ServerTokens: 25472 + 40, ClientTokens: 25472 + 40, OK: true,
			Note: "not compared: 1 failed requests generated tokens the client could not count"},
	}
}

func TestBenchRenderGolden(t *testing.T) {
	var buf bytes.Buffer
	fixedResult().Render(&buf)
	golden(t, "bench_table.golden", buf.String())

	a, c := fixedResult(), fixedResult()
	c.OutputThroughput, c.TTFT.Median, c.BaseURL = 2500, 90, "http://127.0.0.1:30000"
	buf.Reset()
	RenderCompare(&buf, "vllm", "sglang", a, c)
	golden(t, "bench_compare.golden", buf.String())
}

func TestCheckThresholds(t *testing.T) {
	r := fixedResult()
	r.Failed = 0
	tests := []struct {
		name string
		b    *config.Bench
		want []string
	}{
		{"all met", &config.Bench{MinOutputTokensPerSecond: 2000, MinRequestsPerSecond: 16, MaxTTFTP99: 300 * time.Millisecond,
			MaxTPOTP99: 9 * time.Millisecond, MaxITLP99: 20 * time.Millisecond}, nil},
		{"throughput too low", &config.Bench{MinOutputTokensPerSecond: 2100}, []string{"min_output_tokens_per_second"}},
		{"requests too slow", &config.Bench{MinRequestsPerSecond: 20}, []string{"min_requests_per_second"}},
		{"latency too high", &config.Bench{MaxTTFTP99: 250 * time.Millisecond, MaxTPOTP99: 8 * time.Millisecond, MaxITLP99: 15 * time.Millisecond},
			[]string{"max_ttft_p99", "max_tpot_p99", "max_itl_p99"}},
		{"nil block: only failures count", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, v := range CheckThresholds(r, tt.b) {
				got = append(got, v.Threshold)
				if v.Message == "" || !strings.Contains(v.Message, v.Threshold) {
					t.Errorf("message %q does not name %s", v.Message, v.Threshold)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("violations %q, want %q", got, tt.want)
			}
		})
	}
	r.Failed = 2
	if v := CheckThresholds(r, &config.Bench{MaxFailedRequests: 1}); len(v) != 1 || v[0].Threshold != "max_failed_requests" {
		t.Errorf("failed requests: %+v", v)
	}
	if v := CheckThresholds(r, &config.Bench{MaxFailedRequests: 2}); len(v) != 0 {
		t.Errorf("2 failed allowed: %+v", v)
	}
	if v := CheckThresholds(&BenchResult{Failed: 3}, &config.Bench{MaxFailedRequests: 5}); len(v) != 1 || v[0].Threshold != "bench" {
		t.Errorf("nothing completed must fail: %+v", v)
	}
}

// TestBenchFidelity: against a server with a known TTFT and inter-token
// latency at concurrency 64, the medians bench reports must be close to the
// truth. The fake's timers fire up to a millisecond late (Go's poller sleeps
// in whole milliseconds), so its truth is the TTFT it really served, which
// it records; the inter-token latency is exact on average because every
// stream's tokens follow a fixed schedule. The 3 % acceptance check of
// issue 8 is TestSimFidelity, against the rehearsal engine, which corrects
// its timer slack; this fake does not, and a burst of 64 requests through
// one 2-core machine costs it 1-2 ms more, so it is held to 5 %.
func TestBenchFidelity(t *testing.T) {
	if testing.Short() {
		t.Skip("timing test")
	}
	const ttft, itl = 50 * time.Millisecond, 10 * time.Millisecond
	fake, target := serve(t, gatetest.Options{TTFT: ttft, ITL: itl})
	checkFidelity(t, target, itl, 0.05, 0.25, func() float64 {
		served := fake.ServedTTFTs()
		xs := make([]float64, len(served))
		for i, d := range served {
			xs[i] = ms(d)
		}
		return summarize(xs).Median
	})
}

// checkFidelity runs the fidelity load (concurrency 64, 64 warm-up and 192
// measured requests) and checks the TTFT and ITL medians against the truth
// (truthTTFT is called after each run, in ms) within tol. In this test the
// server, the kernel's loopback and the client share the machine: when
// other processes take the CPU, a burst of 64 streams waits for it whatever
// the client does. So each attempt also measures how much CPU other
// processes used meanwhile (/proc/stat minus our own rusage): a miss while
// they used more than busyShare of the machine does not count, and a run
// that misses only on a busy machine is skipped, saying so. Two misses on a
// quiet machine fail.
func checkFidelity(t *testing.T, target Target, itl time.Duration, tol, busyShare float64, truthTTFT func() float64) {
	t.Helper()
	quietMisses := 0
	var busy []string
	for attempt := 1; attempt <= 3; attempt++ {
		truthTTFT() // forget earlier runs
		probe := startCPUProbe()
		res, err := Bench(context.Background(), nil, target, BenchSpec{Concurrency: 64, Requests: 192, InputTokens: 64, OutputTokens: 24, Warmup: 64}, nil)
		others := probe.othersShare()
		if err != nil {
			t.Fatal(err)
		}
		if res.Failed > 0 {
			t.Fatalf("%d failed: %v", res.Failed, res.Errors)
		}
		truth := truthTTFT()
		dT := res.TTFT.Median/truth - 1
		dI := res.ITL.Median/ms(itl) - 1
		t.Logf("attempt %d: median TTFT %.3f ms vs %.3f ms served (%+.2f%%), median ITL %.3f ms (%+.2f%%), p99 ITL %.3f ms; other processes used %.0f%% of the CPUs",
			attempt, res.TTFT.Median, truth, 100*dT, res.ITL.Median, 100*dI, res.ITL.P99, 100*others)
		if math.Abs(dT) <= tol && math.Abs(dI) <= tol {
			return
		}
		if others < busyShare {
			quietMisses++
			if quietMisses == 2 {
				t.Fatalf("bench's TTFT or ITL median is more than %.0f %% off the truth while the machine was quiet", 100*tol)
			}
		} else {
			busy = append(busy, fmt.Sprintf("%.0f%%", 100*others))
		}
	}
	t.Skipf("other processes took %s of the CPUs during the misses: too busy a machine for this timing test; run it again on a quieter one", strings.Join(busy, ", "))
}

// cpuProbe measures the CPU time other processes use (Linux: /proc/stat
// minus this process's rusage). Elsewhere it reports 0: a quiet machine.
type cpuProbe struct {
	start         time.Time
	total0, self0 time.Duration
	ok            bool
}

func startCPUProbe() *cpuProbe {
	p := &cpuProbe{start: time.Now()}
	p.total0, p.ok = machineBusyTime()
	p.self0 = selfCPUTime()
	return p
}

func (p *cpuProbe) othersShare() float64 {
	total, ok := machineBusyTime()
	if !p.ok || !ok {
		return 0
	}
	others := (total - p.total0) - (selfCPUTime() - p.self0)
	return max(others.Seconds(), 0) / (time.Since(p.start).Seconds() * float64(runtime.NumCPU()))
}

// machineBusyTime sums the busy columns of /proc/stat's "cpu" line (user,
// nice, system, irq, softirq, steal) in clock ticks of 1/100 s.
func machineBusyTime() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, false
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, false
		}
		ticks += v
	}
	return time.Duration(ticks) * 10 * time.Millisecond, true
}

func selfCPUTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkBenchThroughput measures how many output chunks per second the
// load generator sustains against an in-process server that streams as fast
// as it can (server, HTTP and client share the machine's cores).
func BenchmarkBenchThroughput(b *testing.B) {
	ts := httptest.NewServer(gatetest.New(gatetest.Options{}))
	defer ts.Close()
	target := Target{BaseURL: ts.URL, Model: "test-model", Engine: kinds.VLLM}
	client := NewClient(64)
	chunks := 0
	var elapsed time.Duration
	for b.Loop() {
		start := time.Now()
		res, err := Bench(context.Background(), client, target, BenchSpec{Concurrency: 64, Requests: 256, InputTokens: 16, OutputTokens: 256, Warmup: -1, SkipMetrics: true}, nil)
		if err != nil || res.Failed > 0 {
			b.Fatal(err, res.Errors)
		}
		elapsed += time.Since(start)
		chunks += res.ITL.N + res.Completed
	}
	b.ReportMetric(float64(chunks)/elapsed.Seconds(), "chunks/s")
}

// TestRandomDataInPercentiles compares percentile with a direct sort-based
// definition on random sets (the definition, restated).
func TestRandomDataInPercentiles(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 100 {
		n := 1 + r.IntN(50)
		x := make([]float64, n)
		for i := range x {
			x[i] = r.Float64() * 100
		}
		slices.Sort(x)
		p := r.Float64() * 100
		h := float64(n-1) * p / 100
		lo, hi := int(math.Floor(h)), int(math.Ceil(h))
		want := x[lo] + (h-float64(lo))*(x[hi]-x[lo])
		if got := percentile(x, p); math.Abs(got-want) > 1e-9 {
			t.Fatalf("n %d p %v: %v want %v", n, p, got, want)
		}
	}
}
