// Package gate holds the checks a server must pass before roofline promotes
// it: Health (more than /health), Smoke (tool calls through the parser, and
// reasoning) and Bench (a load generator reporting vllm bench serve's
// metrics), plus the SSE reader they share. It talks plain HTTP to any
// OpenAI-compatible server and knows the vLLM and SGLang specifics
// (gates.md).
package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/engine/kinds"
)

// Target is the server a gate talks to.
type Target struct {
	BaseURL string `json:"base_url"` // "http://127.0.0.1:8000", no /v1
	Model   string `json:"model"`    // the served model name
	Engine  string `json:"engine"`   // an engine kind (engine/kinds), or "" for any OpenAI-compatible server
	// APIKey, when set, goes with every request as "Authorization: Bearer
	// KEY" (vLLM's and SGLang's --api-key, roofline's proxy). Never printed.
	APIKey string `json:"-"`
}

// authorize adds the target's API key to req.
func (t Target) authorize(req *http.Request) {
	if t.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+t.APIKey)
	}
}

// AuthError is a 401 from the server: it wants an API key that roofline did
// not send, or rejected the one it sent.
type AuthError struct {
	URL    string
	HadKey bool
}

func (e *AuthError) Error() string {
	if e.HadKey {
		return fmt.Sprintf("%s answered 401 Unauthorized: it rejected the API key (check api_key / api_key_file, or -api-key-file)", e.URL)
	}
	return fmt.Sprintf("%s answered 401 Unauthorized: the server requires an API key and none was given (set api_key or api_key_file on the server, or pass -api-key-file)", e.URL)
}

// authError returns an *AuthError for a 401, else nil.
func (t Target) authError(status int, path string) error {
	if status != http.StatusUnauthorized {
		return nil
	}
	return &AuthError{URL: t.url(path), HadKey: t.APIKey != ""}
}

// url joins the base URL and path.
func (t Target) url(path string) string { return strings.TrimRight(t.BaseURL, "/") + path }

// Validate checks the base URL.
func (t Target) Validate() error {
	u, err := url.Parse(t.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("server URL %q is not an http(s) URL; give it as http://HOST:PORT", t.BaseURL)
	}
	if t.Engine != "" && kindOf(t.Engine) == nil {
		return fmt.Errorf("engine %q is not %s", t.Engine, kinds.Or(false))
	}
	return nil
}

// kindOf is the engine kind of a target; nil for "" (any OpenAI-compatible
// server) or a kind roofline does not run.
func kindOf(name string) *engine.Kind { return engine.Lookup(name) }

// metricPrefixes lists the kinds' series prefixes: "vllm: or sglang:".
func metricPrefixes() string {
	var out []string
	for _, k := range engine.Kinds() {
		out = append(out, k.MetricPrefix)
	}
	return strings.Join(out, " or ")
}

// NewClient returns an HTTP client tuned for gating and load: keep-alive
// connections for up to conns streams at once (Go's default keeps only 2 idle
// per host, which makes a benchmark open a new connection per request), no
// HTTP/2 (the engines speak HTTP/1.1), no compression and no overall timeout
// (streams run long; callers use contexts).
func NewClient(conns int) *http.Client {
	conns = max(conns, 4)
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
		WriteBufferSize:     16 << 10,
		ReadBufferSize:      64 << 10,
	}
	var protos http.Protocols
	protos.SetHTTP1(true)
	tr.Protocols = &protos
	return &http.Client{Transport: tr}
}

// getJSON GETs path and decodes a JSON answer into v (when v is not nil).
// It returns the status and the body.
func getJSON(ctx context.Context, c *http.Client, t Target, path string, v any) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.url(path), nil)
	if err != nil {
		return 0, nil, err
	}
	t.authorize(req)
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, explainDial(err)
	}
	defer resp.Body.Close()
	if err := t.authError(resp.StatusCode, path); err != nil {
		return resp.StatusCode, nil, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return resp.StatusCode, body, fmt.Errorf("reading %s: %w", path, err)
	}
	if v != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, v); err != nil {
			return resp.StatusCode, body, fmt.Errorf("%s did not return JSON: %w", path, err)
		}
	}
	return resp.StatusCode, body, nil
}

// postJSON POSTs body as JSON and returns the response (the caller closes
// it) or an error with the server's error message for a non-2xx status.
func postJSON(ctx context.Context, c *http.Client, t Target, path string, body any) (*http.Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url(path), bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	t.authorize(req)
	resp, err := c.Do(req)
	if err != nil {
		return nil, explainDial(err)
	}
	if err := t.authError(resp.StatusCode, path); err != nil {
		resp.Body.Close()
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if e := ParseAPIError(resp.StatusCode, data); e != nil {
			return nil, e
		}
		return nil, &APIError{Status: resp.StatusCode, Message: snippet(data)}
	}
	return resp, nil
}

// snippet shortens a body for a message.
func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// explainDial turns a refused connection into a sentence; the cause stays
// reachable through errors.Is.
func explainDial(err error) error {
	if errors.Is(err, syscall.ECONNREFUSED) {
		addr := ""
		var ue *url.Error
		if errors.As(err, &ue) {
			if u, perr := url.Parse(ue.URL); perr == nil {
				addr = " by " + u.Host
			}
		}
		return &dialError{msg: "connection refused" + addr + ": nothing listens there (the server is not running, still loading, or on another port)", err: err}
	}
	return err
}

type dialError struct {
	msg string
	err error
}

func (e *dialError) Error() string { return e.msg }
func (e *dialError) Unwrap() error { return e.err }

// isRefused reports a refused connection (vLLM while it loads).
func isRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

// closeBody reads what is left of a response (after [DONE], the chunked
// encoding's last chunk) before closing it: Go's transport reuses a
// keep-alive connection only for a body read to its end, and a benchmark
// that reconnects for every request measures TCP set-up as latency.
func closeBody(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 256<<10))
	body.Close()
}
