package agent

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// logLines collects the agent's log.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, strings.TrimSpace(fmt.Sprintf(format, args...)))
}

func (l *logLines) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// TestServe: the endpoint listens, serves /healthz once the loop has
// ticked and /snapshot from Endpoint.Snapshot, and is shut down when ctx
// ends; Serve then returns without an error.
func TestServe(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	t.Setenv("WATCHDOG_USEC", "")
	w := newWorld("a")
	w.set(func() { w.now = time.Now() })
	a := testAgent(t, w)
	var log logLines
	a.Logf = log.logf
	ep := Endpoint{Listen: "127.0.0.1:0", Snapshot: func(ctx context.Context, w io.Writer) error {
		_, err := io.WriteString(w, `{"host":"h"}`)
		return err
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, ep, nil, "", a.Settings()) }()

	addr := regexp.MustCompile(`on http://(127\.0\.0\.1:\d+)`)
	var url string
	for deadline := time.Now().Add(10 * time.Second); url == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := addr.FindStringSubmatch(log.all()); m != nil {
			url = "http://" + m[1]
		}
	}
	if url == "" {
		cancel()
		t.Fatalf("no address logged:\n%s", log.all())
	}
	get := func(path string) (int, string) {
		resp, err := http.Get(url + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("/healthz")
	for deadline := time.Now().Add(10 * time.Second); code != 200 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		code, body = get("/healthz")
	}
	if code != 200 || !strings.Contains(body, "ok: 1 server(s)") {
		t.Errorf("/healthz: HTTP %d %q", code, body)
	}
	if code, body := get("/snapshot"); code != 200 || body != `{"host":"h"}` {
		t.Errorf("/snapshot: HTTP %d %q", code, body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return after ctx ended")
	}
	if code, _ := get("/healthz"); code != 0 {
		t.Errorf("the endpoint still answers (HTTP %d) after Serve returned", code)
	}
	if !strings.Contains(log.all(), "stopping: the servers keep running") {
		t.Errorf("log:\n%s", log.all())
	}
}

// TestServeCannotListen: an address in use is an error that says what
// to do, returned before the first tick.
func TestServeCannotListen(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	w := newWorld("a")
	a := testAgent(t, w)
	err = a.Serve(context.Background(), Endpoint{Listen: ln.Addr().String()}, nil, "", a.Settings())
	if err == nil || !strings.Contains(err.Error(), "cannot listen on "+ln.Addr().String()) || !strings.Contains(err.Error(), "pick another -listen") {
		t.Fatalf("Serve on a taken address = %v", err)
	}
	if a.Report() != nil {
		t.Error("the agent ticked although its endpoint could not listen")
	}
}

// TestServeOff: -listen off serves no endpoint and still runs the loop.
func TestServeOff(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	w := newWorld("a")
	a := testAgent(t, w)
	var log logLines
	a.Logf = log.logf
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, Endpoint{Listen: "off"}, nil, "", a.Settings()) }()
	for deadline := time.Now().Add(10 * time.Second); a.Report() == nil && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
	}
	cancel()
	if err := <-done; err != nil || a.Report() == nil || !strings.Contains(log.all(), "(no HTTP endpoint)") {
		t.Errorf("Serve = %v, report %v, log:\n%s", err, a.Report() != nil, log.all())
	}
}

func TestEndpointUnprotected(t *testing.T) {
	for _, tc := range []struct {
		ep         Endpoint
		open, fail bool
	}{
		{Endpoint{Listen: "off"}, false, false},
		{Endpoint{Listen: "127.0.0.1:9478"}, false, false},
		{Endpoint{Listen: "0.0.0.0:9478"}, true, false},
		{Endpoint{Listen: ":9478"}, true, false},
		{Endpoint{Listen: "0.0.0.0:9478", Token: "t"}, false, false},
		{Endpoint{Listen: "gpu-host:9478"}, false, true},
	} {
		open, err := tc.ep.Unprotected()
		if open != tc.open || (err != nil) != tc.fail {
			t.Errorf("%+v: Unprotected = %v, %v", tc.ep, open, err)
		}
	}
}

// TestCheckHost: roofline check reads what an agent did from the journal
// of the state directory; a directory without one has no history.
func TestCheckHost(t *testing.T) {
	w := newWorld("a")
	a := testAgent(t, w)
	tick(a)
	w.set(func() { w.alive["a"] = false })
	tick(a)
	ctx := context.Background()
	st, _ := w.Read()
	if rep := CheckHost(ctx, st, a.Dir, w, w); len(rep.Servers) != 1 || rep.Servers[0].Restarts != 1 || !rep.Servers[0].Up || rep.Time.IsZero() {
		t.Errorf("with the agent's journal: %+v", rep)
	}
	if rep := CheckHost(ctx, st, t.TempDir(), w, w); len(rep.Servers) != 1 || rep.Servers[0].Restarts != 0 {
		t.Errorf("without a journal: %+v", rep)
	}
}
