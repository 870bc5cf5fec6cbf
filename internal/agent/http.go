package agent

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves /metrics, /snapshot and /healthz. With a token, every
// path but /healthz needs "Authorization: Bearer TOKEN".
type Handler struct {
	Gatherer prometheus.Gatherer
	// Snapshot writes the /snapshot document, served as JSON (its error
	// as a 500); nil serves the agent's report.
	Snapshot func(ctx context.Context, w io.Writer) error
	Report   func() *Report
	Token    string
	// Stale says how old the last tick may be before /healthz fails (the
	// loop is stuck); nil never fails.
	Stale func() time.Duration
	Now   func() time.Time
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if r.URL.Path != "/healthz" && h.Token != "" && !h.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="roofline agent"`)
		http.Error(w, "unauthorized: send Authorization: Bearer <token>", http.StatusUnauthorized)
		return
	}
	switch r.URL.Path {
	case "/metrics":
		promhttp.HandlerFor(h.Gatherer, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}).ServeHTTP(w, r)
	case "/snapshot":
		if h.Snapshot != nil {
			h.snapshot(w, r)
			return
		}
		writeJSON(w, h.Report())
	case "/healthz":
		h.healthz(w)
	default:
		http.NotFound(w, r)
	}
}

func (h *Handler) authorized(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(h.Token)) == 1
}

// snapshot serves the document whole or, when it cannot be made, an error.
func (h *Handler) snapshot(w http.ResponseWriter, r *http.Request) {
	var buf bytes.Buffer
	if err := h.Snapshot(r.Context(), &buf); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(buf.Bytes())
}

// healthz is the agent's own health: its loop ticks.
func (h *Handler) healthz(w http.ResponseWriter) {
	rep := h.Report()
	now := time.Now()
	if h.Now != nil {
		now = h.Now()
	}
	switch {
	case rep == nil:
		http.Error(w, "starting: no observation yet", http.StatusServiceUnavailable)
	case h.Stale != nil && now.Sub(rep.Time) > h.Stale():
		http.Error(w, fmt.Sprintf("stuck: the last observation is %s old", now.Sub(rep.Time).Round(time.Second)), http.StatusServiceUnavailable)
	default:
		fmt.Fprintf(w, "ok: %d server(s), %d drifted\n", len(rep.Servers), rep.Drift)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// IsLoopback reports whether addr (host:port) binds only the loopback
// interface; anything else needs a token.
func IsLoopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("listen address %q: %w", addr, err)
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	if ip == nil {
		if host == "" {
			return false, nil // every interface
		}
		return false, errors.New("listen address " + addr + ": give an IP address, not a host name")
	}
	return ip.IsLoopback(), nil
}
