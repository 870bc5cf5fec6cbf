package proxy

import (
	"context"
	"fmt"
	"github.com/roofline/roofline/internal/testnet"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// backend streams a few chunks slowly, naming itself.
func backend(name string) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := w.(http.Flusher)
		for i := 0; i < 5; i++ {
			fmt.Fprintf(w, "data: %s %d\n\n", name, i)
			f.Flush()
			time.Sleep(10 * time.Millisecond)
		}
	}))
}

func freePort(t *testing.T) string { return testnet.FreeAddr(t) }

// run runs p until ctx ends; the test's cleanup cancels it and waits for it to return, so
// that its last status write is done before t.TempDir is removed.
func run(tb testing.TB, ctx context.Context, cancel context.CancelFunc, p *Proxy, listen string) {
	done := make(chan struct{})
	go func() { _ = p.Run(ctx, listen); close(done) }()
	tb.Cleanup(func() { cancel(); <-done })
}

// TestSwitchWithoutFailedRequests sends requests throughout a switch from
// one backend to another: none fails, and the old one drains.
func TestSwitchWithoutFailedRequests(t *testing.T) {
	a, b := backend("A"), backend("B")
	defer a.Close()
	dir := t.TempDir()
	target, status := filepath.Join(dir, "target"), filepath.Join(dir, "status.json")
	if err := WriteTarget(target, strings.TrimPrefix(a.URL, "http://")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	listen := freePort(t)
	p := New(target, status)
	run(t, ctx, cancel, p, listen)
	waitUp(t, listen)

	var failed, ok atomic.Int64
	var sawB atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := http.Get("http://" + listen + "/v1/x")
				if err != nil {
					failed.Add(1)
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || !strings.Contains(string(body), " 4") {
					failed.Add(1)
					continue
				}
				if strings.Contains(string(body), "data: B") {
					sawB.Store(true)
				}
				ok.Add(1)
			}
		}()
	}
	time.Sleep(150 * time.Millisecond)
	if left, err := Switch(ctx, target, status, strings.TrimPrefix(b.URL, "http://"), 10*time.Second); err != nil || left != 0 {
		t.Fatalf("switch: %d requests left in flight, %v", left, err)
	}
	a.Close() // the old engine stops after the drain
	time.Sleep(150 * time.Millisecond)
	// Requests go on until one reached the new backend (within 150 ms on a
	// quiet machine; a loaded one may complete none in that time).
	for deadline := time.Now().Add(time.Minute); !sawB.Load() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	b.Close()
	if failed.Load() != 0 || ok.Load() == 0 || !sawB.Load() {
		t.Fatalf("failed %d, ok %d, reached new backend %v", failed.Load(), ok.Load(), sawB.Load())
	}
}

func TestBadTarget(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := WriteTarget(target, "not a host"); err != nil {
		t.Fatal(err)
	}
	if err := New(target, "").Run(context.Background(), "127.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "host:port") {
		t.Fatalf("want a clear error, got %v", err)
	}
}

func waitUp(t *testing.T, addr string) {
	for i := 0; i < 100; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("proxy did not start")
}

// TestDrainLimitCountsWhatIsLeft: a stream that outlasts the drain limit
// does not fail the switch; Drain says how many requests were still in
// flight to the old backend.
func TestDrainLimitCountsWhatIsLeft(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		started <- struct{}{}
		<-release
	}))
	defer slow.Close()
	defer close(release)
	b := backend("B")
	defer b.Close()
	dir := t.TempDir()
	target, status := filepath.Join(dir, "target"), filepath.Join(dir, "status.json")
	if err := WriteTarget(target, strings.TrimPrefix(slow.URL, "http://")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	listen := freePort(t)
	run(t, ctx, cancel, New(target, status), listen)
	waitUp(t, listen)
	go func() {
		resp, err := http.Get("http://" + listen + "/v1/completions")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	<-started
	start := time.Now()
	left, err := Switch(ctx, target, status, strings.TrimPrefix(b.URL, "http://"), 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if left != 1 {
		t.Fatalf("want 1 request left in flight at the drain limit, got %d", left)
	}
	if el := time.Since(start); el < 300*time.Millisecond {
		t.Fatalf("the drain ended after %s, before its limit", el)
	}
}
