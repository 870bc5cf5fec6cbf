// Package proxy is roofline's front proxy: it listens on a server's public
// port and forwards to the engine instance that currently serves it, so that
// a create-before-destroy rollout can start the new engine on another port,
// gate it, switch over and drain the old one without a failed request.
//
// The proxy is a process of its own (roofline proxy ...), started and
// tracked by apply like an engine; roofline itself does not stay running.
// Apply switches it by rewriting the target file; the proxy reports what it
// forwards to, and how many requests are still in flight per backend, in the
// status file.
package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roofline/roofline/internal/fsx"
)

// maxRequestBody bounds a forwarded request body.
const maxRequestBody = 64 << 20

// Status is what the proxy writes to its status file.
type Status struct {
	Target   string           `json:"target"`
	InFlight map[string]int64 `json:"in_flight"`
	PID      int              `json:"pid"`
	Updated  time.Time        `json:"updated"`
}

// Proxy forwards to the target named in a file.
type Proxy struct {
	targetFile string
	statusFile string

	mu       sync.RWMutex
	target   string
	rp       *httputil.ReverseProxy
	modTime  time.Time
	inflight sync.Map // backend -> *atomic.Int64
	dirty    atomic.Bool
}

// New returns a proxy reading its target (host:port) from targetFile.
func New(targetFile, statusFile string) *Proxy {
	return &Proxy{targetFile: targetFile, statusFile: statusFile}
}

// transport is tuned for many concurrent streams to one backend.
var transport = &http.Transport{
	Proxy:               nil,
	DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	MaxIdleConns:        1024,
	MaxIdleConnsPerHost: 1024,
	IdleConnTimeout:     90 * time.Second,
}

// reload reads the target file if it changed.
func (p *Proxy) reload() error {
	info, err := os.Stat(p.targetFile)
	if err != nil {
		return err
	}
	p.mu.RLock()
	same := info.ModTime().Equal(p.modTime) && p.target != ""
	p.mu.RUnlock()
	if same {
		return nil
	}
	b, err := os.ReadFile(p.targetFile)
	if err != nil {
		return err
	}
	target := strings.TrimSpace(string(b))
	if _, _, err := net.SplitHostPort(target); err != nil {
		return fmt.Errorf("target file %s: %q is not host:port", p.targetFile, target)
	}
	u := &url.URL{Scheme: "http", Host: target}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = transport
	rp.FlushInterval = -1 // stream SSE tokens as they come
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprintf(w, `{"object":"error","message":%q,"type":"BadGateway","code":502}`, "roofline proxy: engine at "+target+" is unreachable: "+err.Error())
	}
	p.mu.Lock()
	p.target, p.rp, p.modTime = target, rp, info.ModTime()
	p.mu.Unlock()
	p.dirty.Store(true)
	return nil
}

func (p *Proxy) counter(backend string) *atomic.Int64 {
	v, _ := p.inflight.LoadOrStore(backend, new(atomic.Int64))
	return v.(*atomic.Int64)
}

// ServeHTTP forwards one request to the current target.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Read the request body before forwarding. Streaming it straight through
	// races with net/http's server, which discards an unread request body
	// when the response starts on a keep-alive connection: the transport's
	// body write then fails and it closes the engine connection mid-stream.
	// Requests are small JSON; a bound keeps a bad client from costing memory.
	if r.Body != nil && r.ContentLength != 0 {
		data, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1))
		if err != nil {
			http.Error(w, "roofline proxy: reading the request: "+err.Error(), http.StatusBadRequest)
			return
		}
		if len(data) > maxRequestBody {
			http.Error(w, "roofline proxy: request body over 64 MiB", http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(data))
		r.ContentLength = int64(len(data))
	}
	// The request is counted against its backend under the lock that a
	// switch takes: once the status shows the new target, every request
	// still bound for the old backend is in its count, so a drain that sees
	// 0 there can stop it.
	p.mu.RLock()
	target, rp := p.target, p.rp
	var c *atomic.Int64
	if rp != nil {
		c = p.counter(target)
		c.Add(1)
	}
	p.mu.RUnlock()
	if rp == nil {
		http.Error(w, "roofline proxy: no engine to forward to yet", http.StatusServiceUnavailable)
		return
	}
	p.dirty.Store(true)
	defer func() {
		c.Add(-1)
		p.dirty.Store(true)
	}()
	rp.ServeHTTP(w, r)
}

// Snapshot returns the current status.
func (p *Proxy) Snapshot() Status {
	p.mu.RLock()
	st := Status{Target: p.target, InFlight: map[string]int64{}, PID: os.Getpid(), Updated: time.Now().UTC()}
	p.mu.RUnlock()
	p.inflight.Range(func(k, v any) bool {
		st.InFlight[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return st
}

func (p *Proxy) writeStatus() error {
	b, _ := json.Marshal(p.Snapshot())
	return fsx.WriteFile(p.statusFile, b, 0o600)
}

// Run serves on listen until ctx ends. It re-reads the target file every
// 100 ms (and writes the status file when anything changed), so a switch
// takes effect within that.
func (p *Proxy) Run(ctx context.Context, listen string) error {
	if err := p.reload(); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				_ = p.reload()
				if p.dirty.Swap(false) && p.statusFile != "" {
					_ = p.writeStatus()
				}
			}
		}
	}()
	if p.statusFile != "" {
		_ = p.writeStatus()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx) // lets in-flight streams finish
		return nil
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}

// ReadStatus reads a proxy's status file.
func ReadStatus(path string) (*Status, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var st Status
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// Switch points the proxy at target and then drains: Point, then Drain
// with the given limit. It returns how many requests to other backends were
// still in flight when the limit was reached (0 when they all finished).
func Switch(ctx context.Context, targetFile, statusFile, target string, limit time.Duration) (int64, error) {
	if err := Point(ctx, targetFile, statusFile, target, 10*time.Second); err != nil {
		return 0, err
	}
	return Drain(ctx, statusFile, target, limit, nil)
}

// Point rewrites the target file and waits until the proxy reports that it
// forwards there (it re-reads the file every 100 ms), or until timeout.
// After Point returns nil no new request goes to any other backend.
func Point(ctx context.Context, targetFile, statusFile, target string, timeout time.Duration) error {
	slog.Info("proxy: switching", "target", target)
	if err := WriteTarget(targetFile, target); err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		st, err := ReadStatus(statusFile)
		if err == nil && st.Target == target {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the proxy did not switch to %s within %s", target, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// InFlightElsewhere is how many requests the proxy still forwards to
// backends other than target.
func (st *Status) InFlightElsewhere(target string) int64 {
	var n int64
	for b, c := range st.InFlight {
		if b != target && c > 0 {
			n += c
		}
	}
	return n
}

// Drain waits until no request is in flight to a backend other than target,
// up to limit. Reaching the limit is not an error: it returns how many
// requests were still in flight then (the caller stops the old backend, which
// cuts them). progress, when set, is called about once a second with the
// count and the time spent. An error is returned only when ctx ends or the
// status file cannot be read.
func Drain(ctx context.Context, statusFile, target string, limit time.Duration, progress func(inFlight int64, elapsed time.Duration)) (int64, error) {
	start := time.Now()
	var lastReport time.Time
	for {
		st, err := ReadStatus(statusFile)
		if err != nil {
			return 0, fmt.Errorf("reading the proxy status: %w", err)
		}
		n := st.InFlightElsewhere(target)
		if n == 0 {
			return 0, nil
		}
		el := time.Since(start)
		if el >= limit {
			return n, nil
		}
		if progress != nil && time.Since(lastReport) >= 5*time.Second {
			lastReport = time.Now()
			progress(n, el)
		}
		select {
		case <-ctx.Done():
			return n, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ReadTarget returns the backend (host:port) the target file names: where
// the proxy forwards, or will within 100 ms.
func ReadTarget(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// WriteTarget atomically replaces the target file.
func WriteTarget(path, target string) error {
	if err := fsx.WriteFile(path, []byte(target+"\n"), 0o600); err != nil {
		return err
	}
	// On a file system with coarse timestamps the new file can carry the
	// old one's mtime; bump it so the proxy's change check sees it.
	now := time.Now()
	_ = os.Chtimes(path, now, now)
	return nil
}
