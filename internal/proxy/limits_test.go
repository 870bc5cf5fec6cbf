package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/testload"
)

// startProxy runs a proxy in front of backend with the given target line
// suffix (engine kind and version), key file and limits.
func startProxy(t *testing.T, backend *httptest.Server, shape string, keyFile string, l Limits) string {
	t.Helper()
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := WriteTarget(target, strings.TrimPrefix(backend.URL, "http://")+" "+shape); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	listen := freePort(t)
	p := New(target, filepath.Join(dir, "status.json")).WithKeyFile(keyFile).WithLimits(l)
	run(t, ctx, cancel, p, listen)
	waitUp(t, listen)
	return "http://" + listen
}

func echo() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, `{"read": %d}`, n)
	}))
}

// errorOf decodes the proxy's own error in either engine shape.
func errorOf(t *testing.T, b []byte) (nested bool, msg string, code int) {
	t.Helper()
	var v struct {
		Error *struct {
			Message string `json:"message"`
			Code    int    `json:"code"`
		} `json:"error"`
		Object  string `json:"object"`
		Message string `json:"message"`
		Code    int    `json:"code"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %s", b)
	}
	if v.Error != nil {
		return true, v.Error.Message, v.Error.Code
	}
	if v.Object != "error" {
		t.Fatalf("not an OpenAI error: %s", b)
	}
	return false, v.Message, v.Code
}

// TestOwnErrorsInTheEngineShape: the proxy's 413 and 502 come as JSON in
// the shape of the engine version behind it.
func TestOwnErrorsInTheEngineShape(t *testing.T) {
	b := echo()
	defer b.Close()
	for _, row := range []struct {
		shape  string
		nested bool
	}{{"vllm 0.16.0", true}, {"vllm 0.8.5", false}, {"sglang 0.5.6.post2", false}} {
		t.Run(row.shape, func(t *testing.T) {
			url := startProxy(t, b, row.shape, "", Limits{MaxBody: 1000})
			resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(strings.Repeat("x", 2000)))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			nested, msg, code := errorOf(t, body)
			if resp.StatusCode != 413 || code != 413 || nested != row.nested || !strings.Contains(msg, "roofline proxy") {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
		})
	}
	// A backend that is gone: 502 in the same shape.
	gone := echo()
	gone.Close()
	url := startProxy(t, gone, "vllm 0.16.0", "", Limits{})
	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if nested, _, code := errorOf(t, body); resp.StatusCode != 502 || code != 502 || !nested {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
}

// TestSlowBodyTimesOut: a client that sends headers and then trickles its
// body is answered 408 after the body timeout and its connection closed.
func TestSlowBodyTimesOut(t *testing.T) {
	b := echo()
	defer b.Close()
	url := startProxy(t, b, "vllm 0.16.0", "", Limits{BodyTimeout: 300 * time.Millisecond})
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
	start := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(time.Duration(testload.Slack) * 3 * time.Second))
	out, _ := io.ReadAll(c) // until the proxy closes the connection
	if !strings.HasPrefix(string(out), "HTTP/1.1 408") {
		t.Fatalf("want 408, got %q", out)
	}
	testload.Within(t, "the slow body's connection", time.Since(start), 3*time.Second)
}

// TestBufferedCap: request bodies held at once are capped across clients.
func TestBufferedCap(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 2)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
	}))
	defer slow.Close()
	defer close(release)
	url := startProxy(t, slow, "vllm 0.16.0", "", Limits{MaxBody: 1 << 20, MaxBuffered: 1 << 20})
	// The first request's body (600 KiB) is held while the backend waits:
	// the proxy forwards a request once it has read all of its body, so
	// when it reaches the backend the whole body is buffered.
	go func() {
		resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(strings.Repeat("x", 600<<10)))
		if err == nil {
			resp.Body.Close()
		}
	}()
	<-arrived
	// Refused at once; a request let through would wait for the backend
	// until the client gives up, which fails the test rather than hang it.
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Post(url+"/v1/completions", "application/json", strings.NewReader(strings.Repeat("y", 600<<10)))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(body), "too many request bodies") {
		t.Fatalf("want 503 over the buffer cap, got %d %s", resp.StatusCode, body)
	}
}

// TestKeyEnforced: with a key file, /v1 needs the key (401 JSON as vLLM
// and SGLang answer), /health does not; the key can change under it.
func TestKeyEnforced(t *testing.T) {
	b := echo()
	defer b.Close()
	keyFile := filepath.Join(t.TempDir(), "k.key")
	if err := WriteKeyFile(keyFile, "k1"); err != nil {
		t.Fatal(err)
	}
	url := startProxy(t, b, "sglang 0.5.6.post2", keyFile, Limits{})
	try := func(path, key string) int {
		req, _ := http.NewRequest(http.MethodGet, url+path, nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 401 && string(body) != `{"error":"Unauthorized"}` {
			t.Errorf("401 body %s", body)
		}
		return resp.StatusCode
	}
	if got := []int{try("/v1/models", ""), try("/v1/models", "nope"), try("/v1/models", "k1"), try("/health", "")}; fmt.Sprint(got) != "[401 401 200 200]" {
		t.Fatalf("statuses %v", got)
	}
	time.Sleep(20 * time.Millisecond)
	if err := WriteKeyFile(keyFile, "k2"); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(time.Second)
	_ = os.Chtimes(keyFile, now, now)
	// The proxy re-reads the key on its 100 ms tick: wait for the new key
	// to be taken rather than for a fixed time a loaded machine may overrun.
	for deadline := time.Now().Add(time.Minute); try("/v1/models", "k2") != 200 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if got := []int{try("/v1/models", "k1"), try("/v1/models", "k2")}; fmt.Sprint(got) != "[401 200]" {
		t.Fatalf("after a new key: %v", got)
	}
}

// TestLimitsChangeLive: new limits in the limits file apply to the running
// proxy within its reload tick; a change of the header or idle timeout
// starts a new generation of its server while a stream of the old one runs
// to its end and keep-alive clients go on without a failed request.
func TestLimitsChangeLive(t *testing.T) {
	streaming := make(chan struct{})
	release := make(chan struct{})
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/stream" {
			w.WriteHeader(200)
			fmt.Fprintf(w, "data: first\n\n")
			w.(http.Flusher).Flush()
			close(streaming)
			<-release
			fmt.Fprintf(w, "data: last\n\n")
			return
		}
		fmt.Fprintf(w, `{"read": %d}`, n)
	}))
	defer backend.Close()
	dir := t.TempDir()
	target, status, limits := filepath.Join(dir, "target"), filepath.Join(dir, "status.json"), filepath.Join(dir, "limits.json")
	if err := WriteTarget(target, strings.TrimPrefix(backend.URL, "http://")+" vllm 0.16.0"); err != nil {
		t.Fatal(err)
	}
	if err := WriteLimits(limits, Limits{MaxBody: 4096}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	listen := freePort(t)
	p := New(target, status).WithLimitsFile(limits)
	run(t, ctx, cancel, p, listen)
	waitUp(t, listen)
	url := "http://" + listen
	post := func(c *http.Client, path string, n int) int {
		t.Helper()
		resp, err := c.Post(url+path, "application/json", strings.NewReader(strings.Repeat("x", n)))
		if err != nil {
			t.Fatalf("POST %s (%d bytes): %v", path, n, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	waitLimits := func(l Limits) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			if st, err := ReadStatus(status); err == nil && st.Reports(l) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the proxy does not report %+v", l)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	client := &http.Client{}
	waitLimits(Limits{MaxBody: 4096})
	if code := post(client, "/v1/completions", 3000); code != 200 {
		t.Fatalf("3000 bytes under max_body 4096: %d", code)
	}

	// A stream on the first generation, then new timeouts and max_body.
	streamed := make(chan string, 1)
	go func() {
		resp, err := http.Post(url+"/stream", "application/json", strings.NewReader("{}"))
		if err != nil {
			streamed <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		streamed <- string(b)
	}()
	<-streaming
	next := Limits{MaxBody: 2048, IdleTimeout: 30 * time.Second, HeaderTimeout: 5 * time.Second}
	if err := WriteLimits(limits, next); err != nil {
		t.Fatal(err)
	}
	waitLimits(next)
	if p.gen.Load() == nil || len(p.old) != 1 {
		t.Fatalf("a new idle/header timeout should start one new generation: %d retired", len(p.old))
	}
	// The keep-alive client's connection belongs to the old generation: its
	// next request still succeeds (and closes the connection after it).
	if code := post(client, "/v1/completions", 3000); code != 413 {
		t.Fatalf("3000 bytes over the new max_body 2048: %d", code)
	}
	for i := 0; i < 5; i++ {
		if code := post(client, "/v1/completions", 1000); code != 200 {
			t.Fatalf("request %d after the change: %d", i, code)
		}
	}
	close(release)
	if got := <-streamed; !strings.Contains(got, "data: last") {
		t.Fatalf("the stream of the old generation was cut: %q", got)
	}

	// The file removed: back to the limits the proxy started with.
	if err := os.Remove(limits); err != nil {
		t.Fatal(err)
	}
	waitLimits(Limits{})
	if code := post(client, "/v1/completions", 3000); code != 200 {
		t.Fatalf("3000 bytes under the default max_body: %d", code)
	}
}
