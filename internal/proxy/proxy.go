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
	p.mu.RLock()
	target, rp := p.target, p.rp
	p.mu.RUnlock()
	if rp == nil {
		http.Error(w, "roofline proxy: no engine to forward to yet", http.StatusServiceUnavailable)
		return
	}
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
	c := p.counter(target)
	c.Add(1)
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

// Switch points the proxy at target and waits until the proxy forwards there
// and no request is in flight to any other backend (the old engine has
// drained), or until timeout.
func Switch(ctx context.Context, targetFile, statusFile, target string, timeout time.Duration) error {
	slog.Info("proxy: switching", "target", target, "drain_timeout", timeout)
	if err := WriteTarget(targetFile, target); err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		st, err := ReadStatus(statusFile)
		if err == nil && st.Target == target {
			drained := true
			for b, n := range st.InFlight {
				if b != target && n > 0 {
					drained = false
				}
			}
			if drained {
				return nil
			}
		}
		if time.Now().After(deadline) {
			if err == nil && st.Target == target {
				return fmt.Errorf("requests to the old engine did not finish within %s", timeout)
			}
			return fmt.Errorf("the proxy did not switch to %s within %s", target, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
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
