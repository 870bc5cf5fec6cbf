package proxy

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// childEnv makes the test binary run a proxy (for the RSS benchmark, which
// measures the proxy as its own process, as apply runs it).
const childEnv = "ROOFLINE_PROXY_BENCH_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		// spec: LISTEN TARGETFILE STATUSFILE
		f := strings.Fields(spec)
		if err := New(f[1], f[2]).Run(context.Background(), f[0]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// sseBackend streams chunks of an SSE completion, each stamped with the
// time it was written, one every interval; the first at once.
func sseBackend(chunks int, interval time.Duration) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		for i := 0; i < chunks; i++ {
			if i > 0 {
				time.Sleep(interval)
			}
			fmt.Fprintf(w, "data: {\"t\":%d,\"choices\":[{\"delta\":{\"content\":\"tok\"}}]}\n\n", time.Now().UnixNano())
			f.Flush()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
		f.Flush()
	}))
}

// streamOnce sends one streaming request and returns the time to the first
// chunk and each chunk's delay from the backend's write to its arrival.
func streamOnce(c *http.Client, url string) (ttft time.Duration, delays []time.Duration, err error) {
	start := time.Now()
	resp, err := c.Post(url+"/v1/completions", "application/json", strings.NewReader(`{"model":"m","prompt":"hi","stream":true}`))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, `data: {"t":`)
		if !ok {
			continue
		}
		now := time.Now()
		if ttft == 0 {
			ttft = now.Sub(start)
		}
		ns, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
		delays = append(delays, now.Sub(time.Unix(0, ns)))
	}
	return ttft, delays, sc.Err()
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// round runs n streams at once against url and returns their TTFTs and
// chunk delays.
func round(b *testing.B, c *http.Client, url string, n int) (ttfts, delays []time.Duration) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t, d, err := streamOnce(c, url)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				b.Error(err)
				return
			}
			ttfts = append(ttfts, t)
			delays = append(delays, d...)
		}()
	}
	wg.Wait()
	return ttfts, delays
}

// BenchmarkProxyLatency streams through the proxy and straight to the
// engine, alternately, at 1 and 256 concurrent streams (32 chunks, 2 ms
// apart, as a fast engine's tokens), and reports the medians of both and
// what the proxy adds: time to first token, and per chunk the delay from
// the engine's write to the client's read.
func BenchmarkProxyLatency(b *testing.B) {
	for _, streams := range []int{1, 256} {
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) {
			be := sseBackend(32, 2*time.Millisecond)
			defer be.Close()
			dir := b.TempDir()
			target := filepath.Join(dir, "target")
			if err := WriteTarget(target, strings.TrimPrefix(be.URL, "http://")+" vllm 0.16.0"); err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ln, _ := net.Listen("tcp", "127.0.0.1:0")
			listen := ln.Addr().String()
			ln.Close()
			run(b, ctx, cancel, New(target, filepath.Join(dir, "status.json")), listen)
			for i := 0; i < 100; i++ {
				if c, err := net.Dial("tcp", listen); err == nil {
					c.Close()
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			tr := &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, DisableCompression: true}
			c := &http.Client{Transport: tr}
			defer tr.CloseIdleConnections()
			// Warm the connection pools of both paths.
			round(b, c, be.URL, streams)
			round(b, c, "http://"+listen, streams)
			var dT, dC, pT, pC []time.Duration
			b.ResetTimer()
			// Enough rounds per iteration for a median of 64 streams.
			reps := max(1, 64/streams)
			for i := 0; i < b.N; i++ {
				for r := 0; r < reps; r++ {
					t, d := round(b, c, be.URL, streams)
					dT, dC = append(dT, t...), append(dC, d...)
					t, d = round(b, c, "http://"+listen, streams)
					pT, pC = append(pT, t...), append(pC, d...)
				}
			}
			b.StopTimer()
			us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
			b.ReportMetric(us(median(dT)), "direct-ttft-µs")
			b.ReportMetric(us(median(pT)), "proxy-ttft-µs")
			b.ReportMetric(us(median(pT)-median(dT)), "added-ttft-µs")
			b.ReportMetric(us(median(dC)), "direct-chunk-µs")
			b.ReportMetric(us(median(pC)), "proxy-chunk-µs")
			b.ReportMetric(us(median(pC)-median(dC)), "added-chunk-µs")
		})
	}
}

// BenchmarkProxyIdleConnsRSS runs the proxy as its own process, opens 1000
// keep-alive client connections that each made one request and then sit
// idle, and reports the proxy's resident memory (VmRSS) and what each idle
// connection costs.
func BenchmarkProxyIdleConnsRSS(b *testing.B) {
	const conns = 1000
	be := sseBackend(2, time.Millisecond)
	defer be.Close()
	dir := b.TempDir()
	target := filepath.Join(dir, "target")
	if err := WriteTarget(target, strings.TrimPrefix(be.URL, "http://")+" vllm 0.16.0"); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		listen := ln.Addr().String()
		ln.Close()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+listen+" "+target+" "+filepath.Join(dir, "status.json"))
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		up := false
		for j := 0; j < 200 && !up; j++ {
			if c, err := net.Dial("tcp", listen); err == nil {
				c.Close()
				up = true
			} else {
				time.Sleep(10 * time.Millisecond)
			}
		}
		if !up {
			b.Fatal("the proxy did not come up")
		}
		time.Sleep(200 * time.Millisecond)
		base := rss(b, cmd.Process.Pid)
		var open []net.Conn
		req := "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
		for j := 0; j < conns; j++ {
			c, err := net.Dial("tcp", listen)
			if err != nil {
				b.Fatal(err)
			}
			fmt.Fprint(c, req)
			// Read the response to its end (the chunked terminator).
			br := bufio.NewReader(c)
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					b.Fatal(err)
				}
				if line == "0\r\n" {
					_, _ = br.ReadString('\n')
					break
				}
			}
			open = append(open, c)
		}
		time.Sleep(500 * time.Millisecond)
		idle := rss(b, cmd.Process.Pid)
		b.ReportMetric(float64(idle)/(1<<20), "rss-MiB")
		b.ReportMetric(float64(idle-base)/conns/1024, "KiB/idle-conn")
		for _, c := range open {
			c.Close()
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
}

// rss reads a process's resident set size in bytes.
func rss(b *testing.B, pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	b.Fatal("no VmRSS")
	return 0
}
