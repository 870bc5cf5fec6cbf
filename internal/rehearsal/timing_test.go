package rehearsal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/testload"
)

// timingRun streams `streams` chat requests of `tokens` tokens at once
// against an in-process server and returns what the server emitted (per
// request: write times) and what the client saw (per request: arrival
// times of token chunks).
type timingRun struct {
	server   map[string][]time.Time
	lateness []time.Duration
	client   [][]time.Time
}

func runStreams(tb testing.TB, streams, tokens int, itl time.Duration) *timingRun {
	h := NewHandler(ServeOptions{ServedNames: []string{"m"}, TTFT: 20 * time.Millisecond, ITL: itl, MaxNumSeqs: streams})
	run := &timingRun{server: map[string][]time.Time{}, client: make([][]time.Time, streams)}
	var mu sync.Mutex
	h.emitHook = func(req string, step int, deadline, wrote time.Time) {
		mu.Lock()
		run.server[req] = append(run.server[req], wrote)
		run.lateness = append(run.lateness, wrote.Sub(deadline))
		mu.Unlock()
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: streams, DisableCompression: true}}
	body, _ := json.Marshal(chatBody("time me", map[string]any{"stream": true, "max_tokens": tokens, "ignore_eos": true}))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < streams; i++ {
		wg.Go(func() {
			<-start
			resp, err := client.Post(srv.URL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
			if err != nil {
				tb.Error(err)
				return
			}
			defer resp.Body.Close()
			r := bufio.NewReader(resp.Body)
			var times []time.Time
			for {
				line, err := r.ReadSlice('\n')
				if err != nil {
					break
				}
				// A token chunk carries a delta with content (the role chunk shares its write).
				if bytes.Contains(line, []byte(`"delta":{"content"`)) {
					times = append(times, time.Now())
				}
			}
			run.client[i] = times
		})
	}
	close(start)
	wg.Wait()
	return run
}

func median(d []float64) float64 {
	if len(d) == 0 {
		return 0
	}
	s := append([]float64(nil), d...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// gaps returns the per-chunk gaps (ms) and each stream's TPOT (ms).
func gaps(series [][]time.Time) (itl, tpot []float64) {
	for _, ts := range series {
		for i := 1; i < len(ts); i++ {
			itl = append(itl, float64(ts[i].Sub(ts[i-1]))/1e6)
		}
		if len(ts) > 1 {
			tpot = append(tpot, float64(ts[len(ts)-1].Sub(ts[0]))/1e6/float64(len(ts)-1))
		}
	}
	return itl, tpot
}

// At 256 concurrent streams and 10 ms inter-token latency the engine keeps
// its own timing within 2 %: tokens are written against absolute deadlines,
// so a late wake-up does not delay the rest of a stream. The machine is
// shared, so a run may be disturbed: it takes one good run in three.
func TestTimingAt256Streams(t *testing.T) {
	const streams, tokens, itl = 256, 60, 10 * time.Millisecond
	want := float64(itl) / 1e6
	var misses []string
	for attempt := 1; attempt <= 3; attempt++ {
		run := runStreams(t, streams, tokens, itl)
		if len(run.server) != streams {
			t.Fatalf("%d streams served, want %d", len(run.server), streams)
		}
		var series [][]time.Time
		for _, ts := range run.server {
			if len(ts) != tokens {
				t.Fatalf("a stream got %d tokens, want %d", len(ts), tokens)
			}
			series = append(series, ts)
		}
		itls, tpots := gaps(series)
		cItl, cTpot := gaps(run.client)
		got := map[string]float64{"server median inter-token gap": median(itls), "server median TPOT": median(tpots)}
		t.Logf("attempt %d: server median ITL %.3f ms, TPOT %.3f ms; client median ITL %.3f ms, TPOT %.3f ms",
			attempt, median(itls), median(tpots), median(cItl), median(cTpot))
		var bad []string
		for name, v := range got {
			if dev := (v - want) / want; dev > 0.02 || dev < -0.02 {
				bad = append(bad, fmt.Sprintf("%s %.3f ms (%+.1f%%)", name, v, 100*dev))
			}
		}
		// The client shares the two cores; its view only has to be sane.
		if dev := (median(cTpot) - want) / want; dev > 0.10 || dev < -0.10 {
			bad = append(bad, fmt.Sprintf("client median TPOT %.3f ms (%+.1f%%)", median(cTpot), 100*dev))
		}
		if len(bad) == 0 {
			return
		}
		if busy, load := testload.Busy(); busy {
			// A miss while other processes hold the cores says nothing about
			// the engine's timers; only misses on a machine with room count.
			t.Logf("attempt %d missed while the load average was %.1f on %d cores: not counted", attempt, load, runtime.NumCPU())
			continue
		}
		misses = append(misses, strings.Join(bad, ", "))
	}
	if len(misses) == 0 {
		t.Skipf("every attempt ran on a busy machine (load average above %d cores); run it on a quiet machine", runtime.NumCPU())
	}
	t.Errorf("timing off by more than 2 %% of %.0f ms in every attempt: %s", want, strings.Join(misses, "; "))
}

// The batching model slows every stream down as the batch fills.
func TestBatchingSlowdown(t *testing.T) {
	s := newScheduler(10*time.Millisecond, 10*time.Millisecond, 1.0, 4, 0)
	ctx := t.Context()
	if d := s.nextInterval(); d != 10*time.Millisecond {
		t.Errorf("idle interval %v", d)
	}
	for i := 0; i < 4; i++ {
		s.admit(ctx, 1)
	}
	if d := s.nextInterval(); d != 17500*time.Microsecond {
		t.Errorf("full batch interval %v, want 10ms × (1 + 1·3/4)", d)
	}
	// A fifth sequence waits for a slot.
	admitted := make(chan struct{})
	go func() {
		s.admit(ctx, 1)
		close(admitted)
	}()
	time.Sleep(20 * time.Millisecond)
	if r, w := s.counts(); r != 4 || w != 1 {
		t.Errorf("running %d waiting %d, want 4 and 1", r, w)
	}
	s.release(1)
	select {
	case <-admitted:
	case <-time.After(time.Second):
		t.Fatal("the queued sequence was not admitted")
	}
}

func BenchmarkStreams256(b *testing.B) {
	for b.Loop() {
		run := runStreams(b, 256, 60, 10*time.Millisecond)
		var series [][]time.Time
		for _, ts := range run.server {
			series = append(series, ts)
		}
		itls, _ := gaps(series)
		cItl, _ := gaps(run.client)
		late := make([]float64, len(run.lateness))
		for i, l := range run.lateness {
			late[i] = float64(l) / 1e3
		}
		sort.Float64s(late)
		b.ReportMetric(median(itls), "server-itl-ms")
		b.ReportMetric(median(cItl), "client-itl-ms")
		b.ReportMetric(late[len(late)*99/100], "p99-late-µs")
	}
}
