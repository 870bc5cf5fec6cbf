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
	"crypto/subtle"
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
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/fsx"
)

// Limits bound what one client, and all of them together, can cost the
// proxy. Zero fields take the defaults (DefaultLimits).
type Limits struct {
	// MaxBody is the largest request body forwarded (413 above it).
	MaxBody int64
	// MaxBuffered caps the request bodies held in memory at once, all
	// requests together (503 beyond it): bodies are read whole before they
	// are forwarded (see ServeHTTP).
	MaxBuffered int64
	// MaxConns caps open client connections; more wait in the listen queue.
	MaxConns int
	// HeaderTimeout bounds reading a request's headers, BodyTimeout its body
	// (408 after it), IdleTimeout a keep-alive connection between requests.
	HeaderTimeout, BodyTimeout, IdleTimeout time.Duration
}

// DefaultLimits are the limits when none are given.
var DefaultLimits = Limits{
	MaxBody:       64 << 20,
	MaxBuffered:   256 << 20,
	MaxConns:      4096,
	HeaderTimeout: 10 * time.Second,
	BodyTimeout:   60 * time.Second,
	IdleTimeout:   120 * time.Second,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.MaxBody > 0 {
		d.MaxBody = l.MaxBody
	}
	if l.MaxBuffered > 0 {
		d.MaxBuffered = l.MaxBuffered
	}
	if l.MaxConns > 0 {
		d.MaxConns = l.MaxConns
	}
	if l.HeaderTimeout > 0 {
		d.HeaderTimeout = l.HeaderTimeout
	}
	if l.BodyTimeout > 0 {
		d.BodyTimeout = l.BodyTimeout
	}
	if l.IdleTimeout > 0 {
		d.IdleTimeout = l.IdleTimeout
	}
	return d
}

// Status is what the proxy writes to its status file.
type Status struct {
	Target   string           `json:"target"`
	InFlight map[string]int64 `json:"in_flight"`
	PID      int              `json:"pid"`
	Updated  time.Time        `json:"updated"`
	// Limits are the limits in force (the limits file's, over the started
	// ones).
	Limits *LimitsStatus `json:"limits,omitempty"`
}

// LimitsStatus is Limits as the status file writes them.
type LimitsStatus = limitsFile

// Proxy forwards to the target named in a file.
type Proxy struct {
	targetFile string
	statusFile string
	// keyFile, when it exists, holds the API key clients must send: the
	// proxy enforces it (SGLang takes a key only on its command line).
	keyFile string
	// limitsFile, when it exists, holds limits that replace the started
	// ones (re-read when it changes): a changed limit needs no restart.
	limitsFile string
	base       Limits // the limits the proxy was started with
	lim        atomic.Pointer[Limits]
	limMod     time.Time
	// conns counts open client connections against the current MaxConns;
	// gen is the http.Server new connections go to (generation.go).
	conns connLimit
	gen   atomic.Pointer[generation]
	genMu sync.Mutex
	old   []*generation // retired generations, for shutdown
	ln    net.Listener  // set by Run before any generation serves
	errc  chan error

	mu       sync.RWMutex
	target   string
	shape    errorShape
	rp       *httputil.ReverseProxy
	modTime  time.Time
	key      string
	keyMod   time.Time
	inflight sync.Map // backend -> *atomic.Int64
	dirty    atomic.Bool
	buffered atomic.Int64
}

// New returns a proxy reading its target from targetFile: "HOST:PORT",
// optionally followed by the engine kind and version ("127.0.0.1:20001 vllm
// 0.16.0"), which pick the shape of the proxy's own error answers.
func New(targetFile, statusFile string) *Proxy {
	p := &Proxy{targetFile: targetFile, statusFile: statusFile, base: DefaultLimits}
	p.lim.Store(&p.base)
	return p
}

// limits are the limits in force now.
func (p *Proxy) limits() Limits { return *p.lim.Load() }

// WithKeyFile makes the proxy enforce the API key in path (re-read when it
// changes; no enforcement while the file does not exist).
func (p *Proxy) WithKeyFile(path string) *Proxy { p.keyFile = path; return p }

// WithLimits sets the limits; zero fields keep the defaults.
func (p *Proxy) WithLimits(l Limits) *Proxy {
	p.base = l.withDefaults()
	p.lim.Store(&p.base)
	return p
}

// WithLimitsFile makes the proxy take its limits from path when it exists
// (WriteLimits), over those it was started with; re-read when it changes.
func (p *Proxy) WithLimitsFile(path string) *Proxy { p.limitsFile = path; return p }

// transport is tuned for many concurrent streams to one backend.
var transport = &http.Transport{
	Proxy:               nil,
	DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	MaxIdleConns:        1024,
	MaxIdleConnsPerHost: 1024,
	IdleConnTimeout:     90 * time.Second,
}

// errorShape is how the engine behind the proxy writes an error, so that a
// client sees the proxy's own errors the way it sees the engine's.
type errorShape struct {
	kind    string // an engine kind, or "" for none known
	version string
}

// nested: vLLM 0.10 and later wrap the error: {"error": {...}}.
func (e errorShape) nested() bool {
	k := engine.Lookup(e.kind)
	return k != nil && k.NestedErrors(e.version)
}

// body is an OpenAI-style error in the engine's shape.
func (e errorShape) body(status int, msg string) []byte {
	typ := map[int]string{
		http.StatusBadRequest: "BadRequestError", http.StatusUnauthorized: "Unauthorized",
		http.StatusRequestTimeout: "RequestTimeout", http.StatusRequestEntityTooLarge: "BadRequestError",
		http.StatusBadGateway: "BadGateway", http.StatusServiceUnavailable: "ServiceUnavailable",
	}[status]
	inner := map[string]any{"message": msg, "type": typ, "param": nil, "code": status}
	var v any = inner
	if e.nested() {
		v = map[string]any{"error": inner}
	} else {
		inner["object"] = "error"
	}
	b, _ := json.Marshal(v)
	return b
}

// fail writes one of the proxy's own errors.
func (p *Proxy) fail(w http.ResponseWriter, shape errorShape, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(shape.body(status, "roofline proxy: "+msg))
}

// parseTarget reads a target file's line: "HOST:PORT [KIND [VERSION]]".
func parseTarget(line string) (target string, shape errorShape, err error) {
	f := strings.Fields(line)
	if len(f) == 0 {
		return "", shape, errors.New("empty target")
	}
	if _, _, err := net.SplitHostPort(f[0]); err != nil {
		return "", shape, fmt.Errorf("%q is not host:port", f[0])
	}
	if len(f) > 1 {
		shape.kind = f[1]
	}
	if len(f) > 2 {
		shape.version = f[2]
	}
	return f[0], shape, nil
}

// reload reads the target file, and the key file, if they changed.
func (p *Proxy) reload() error {
	p.reloadKey()
	p.reloadLimits()
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
	target, shape, err := parseTarget(string(b))
	if err != nil {
		return fmt.Errorf("target file %s: %w", p.targetFile, err)
	}
	u := &url.URL{Scheme: "http", Host: target}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = transport
	rp.FlushInterval = -1 // stream SSE tokens as they come
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		p.fail(w, shape, http.StatusBadGateway, "the engine at "+target+" is unreachable: "+err.Error())
	}
	p.mu.Lock()
	p.target, p.shape, p.rp, p.modTime = target, shape, rp, info.ModTime()
	p.mu.Unlock()
	p.dirty.Store(true)
	return nil
}

// reloadKey re-reads the key file when it changed; a missing file means no
// key is enforced.
func (p *Proxy) reloadKey() {
	if p.keyFile == "" {
		return
	}
	info, err := os.Stat(p.keyFile)
	if err != nil {
		p.mu.Lock()
		p.key, p.keyMod = "", time.Time{}
		p.mu.Unlock()
		return
	}
	p.mu.RLock()
	same := info.ModTime().Equal(p.keyMod) && p.key != ""
	p.mu.RUnlock()
	if same {
		return
	}
	b, err := fsx.ReadFile(p.keyFile, 4096)
	if err != nil {
		return
	}
	p.mu.Lock()
	p.key, p.keyMod = strings.TrimSpace(string(b)), info.ModTime()
	p.mu.Unlock()
}

func (p *Proxy) counter(backend string) *atomic.Int64 {
	v, _ := p.inflight.LoadOrStore(backend, new(atomic.Int64))
	return v.(*atomic.Int64)
}

// keyExempt: the paths an engine with --api-key answers without a key
// (health checks and metrics scrapes).
func keyExempt(r *http.Request) bool {
	return r.Method == http.MethodOptions || r.URL.Path == "/health" || r.URL.Path == "/health_generate" || r.URL.Path == "/metrics" || r.URL.Path == "/ping"
}

// ServeHTTP forwards one request to the current target.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p.stale(r) {
		// The connection's timeouts changed (generation.go): it closes
		// after this response, and the client opens a new one.
		w.Header().Set("Connection", "close")
	}
	p.mu.RLock()
	shape, key := p.shape, p.key
	p.mu.RUnlock()
	if key != "" && !keyExempt(r) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(key)) != 1 {
			// vLLM's and SGLang's answer to a missing or wrong key.
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"Unauthorized"}`))
			return
		}
	}
	// Read the request body before forwarding. Streaming it straight through
	// races with net/http's server, which discards an unread request body
	// when the response starts on a keep-alive connection: the transport's
	// body write then fails and it closes the engine connection mid-stream.
	// Requests are small JSON; the limits keep a bad client from costing
	// memory or a connection for long.
	if r.Body != nil && r.ContentLength != 0 {
		lim := p.limits()
		if r.ContentLength > lim.MaxBody {
			p.fail(w, shape, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body of %d bytes is over the limit of %d", r.ContentLength, lim.MaxBody))
			return
		}
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(lim.BodyTimeout))
		data, reserved, status, msg := p.readBody(r, lim)
		defer p.buffered.Add(-reserved)
		if status == 0 {
			// A refused body keeps its deadline: net/http's clean-up read of
			// the rest must not wait on a client that stalls.
			_ = rc.SetReadDeadline(time.Time{})
		}
		if status != 0 {
			if status == http.StatusRequestTimeout || status == http.StatusRequestEntityTooLarge {
				w.Header().Set("Connection", "close")
			}
			p.fail(w, shape, status, msg)
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
		p.fail(w, shape, http.StatusServiceUnavailable, "no engine to forward to yet")
		return
	}
	p.dirty.Store(true)
	defer func() {
		c.Add(-1)
		p.dirty.Store(true)
	}()
	rp.ServeHTTP(w, r)
}

// readBody reads r's body within the limits. The bytes it holds count
// against MaxBuffered (the caller gives them back); status is non-zero
// with a message when the body is refused.
func (p *Proxy) readBody(r *http.Request, lim Limits) (data []byte, reserved int64, status int, msg string) {
	size := int64(32 << 10)
	if r.ContentLength > 0 {
		size = r.ContentLength
	}
	reserve := func(n int64) bool {
		if p.buffered.Add(n) > lim.MaxBuffered {
			p.buffered.Add(-n)
			return false
		}
		reserved += n
		return true
	}
	busy := "too many request bodies in flight; retry shortly"
	if !reserve(size) {
		return nil, reserved, http.StatusServiceUnavailable, busy
	}
	data = make([]byte, 0, size)
	limit := int64(size)
	for {
		if int64(len(data)) == limit {
			if r.ContentLength > 0 || limit >= lim.MaxBody+1 {
				// net/http stops a body at its Content-Length.
				break
			}
			grow := min(limit, lim.MaxBody+1-limit)
			if !reserve(grow) {
				return data, reserved, http.StatusServiceUnavailable, busy
			}
			limit += grow
			data = slices.Grow(data, int(grow))
		}
		n, err := r.Body.Read(data[len(data):limit])
		data = data[:len(data)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return data, reserved, http.StatusRequestTimeout, fmt.Sprintf("the request body did not arrive within %s", lim.BodyTimeout)
			}
			return data, reserved, http.StatusBadRequest, "reading the request: " + err.Error()
		}
	}
	if int64(len(data)) > lim.MaxBody {
		return data, reserved, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over the limit of %d bytes", lim.MaxBody)
	}
	return data, reserved, 0, ""
}

// Snapshot returns the current status.
func (p *Proxy) Snapshot() Status {
	p.mu.RLock()
	l := p.limits()
	st := Status{Target: p.target, InFlight: map[string]int64{}, PID: os.Getpid(), Updated: time.Now().UTC(), Limits: l.file()}
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
	p.conns.setMax(p.limits().MaxConns)
	errc := make(chan error, 1)
	p.ln, p.errc = ln, errc
	first := p.newGeneration(p.limits())
	p.gen.Store(first)
	go p.serve(ln, first, errc)
	// Run returns only after the ticker has stopped: a status write racing
	// the return would leave a file behind in a directory the caller is
	// about to remove.
	tickCtx, stopTick := context.WithCancel(ctx)
	ticked := make(chan struct{})
	defer func() { stopTick(); <-ticked }()
	go func() {
		defer close(ticked)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-tickCtx.Done():
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
	select {
	case <-ctx.Done():
		_ = ln.Close()
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		p.shutdown(sctx) // lets in-flight streams finish
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
	addr, _, _ := parseTarget(target)
	return Drain(ctx, statusFile, addr, limit, nil)
}

// Point rewrites the target file with line ("HOST:PORT [KIND [VERSION]]")
// and waits until the proxy reports that it forwards there (it re-reads the
// file every 100 ms), or until timeout.
// After Point returns nil no new request goes to any other backend.
func Point(ctx context.Context, targetFile, statusFile, line string, timeout time.Duration) error {
	slog.Info("proxy: switching", "target", line)
	if err := WriteTarget(targetFile, line); err != nil {
		return err
	}
	target, _, err := parseTarget(line)
	if err != nil {
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
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "", errors.New("empty target file")
	}
	return f[0], nil
}

// WriteKeyFile writes the API key the proxy enforces (0600).
func WriteKeyFile(path, key string) error {
	return fsx.WriteFile(path, []byte(key+"\n"), 0o600)
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
