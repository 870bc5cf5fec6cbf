package proxy

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/rehearsal"
)

// TestSimThroughProxy streams POSTed chat completions from the rehearsal
// engine through the proxy on keep-alive connections: none may be cut.
func TestSimThroughProxy(t *testing.T) {
	h := rehearsal.NewHandler(rehearsal.ServeOptions{TTFT: time.Millisecond, ITL: time.Millisecond})
	b := httptest.NewServer(h)
	defer b.Close()
	hammer(t, b.URL)
}

func hammer(t *testing.T, backendURL string) {
	b := struct{ URL string }{backendURL}
	dir := t.TempDir()
	target, status := filepath.Join(dir, "target"), filepath.Join(dir, "status.json")
	WriteTarget(target, strings.TrimPrefix(b.URL, "http://"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	listen := freePort(t)
	run(t, ctx, cancel, New(target, status), listen)
	waitUp(t, listen)
	var mu sync.Mutex
	bad := 0
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				resp, err := http.Post("http://"+listen+"/v1/chat/completions", "application/json", strings.NewReader(`{"model": "rehearsal", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 8, "stream": true}`))
				if err != nil {
					mu.Lock()
					bad++
					mu.Unlock()
					continue
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || !strings.Contains(string(body), "[DONE]") {
					mu.Lock()
					bad++
					mu.Unlock()
					t.Log(err, string(body))
				}
			}
		}()
	}
	wg.Wait()
	if bad > 0 {
		t.Fatalf("%d bad", bad)
	}
}
