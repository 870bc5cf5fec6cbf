package gate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/roofline/roofline/internal/engine"
)

// Check is the outcome of one step of a gate.
type Check struct {
	Name      string  `json:"name"`
	OK        bool    `json:"ok"`
	Skipped   bool    `json:"skipped,omitempty"`
	Detail    string  `json:"detail"`
	ElapsedMS float64 `json:"elapsed_ms"`
}

// HealthResult is the outcome of Health.
type HealthResult struct {
	Target  Target  `json:"target"`
	OK      bool    `json:"ok"`
	Version string  `json:"version,omitempty"` // the engine's own report (/version, /server_info)
	Engine  string  `json:"engine,omitempty"`  // Target.Engine, or detected from /metrics
	Checks  []Check `json:"checks"`
}

// Failed returns the checks that failed.
func (r *HealthResult) Failed() []Check { return failed(r.Checks) }

func failed(cs []Check) []Check {
	var out []Check
	for _, c := range cs {
		if !c.OK && !c.Skipped {
			out = append(out, c)
		}
	}
	return out
}

// gateError summarises failed checks as one error.
func gateError(what string, cs []Check) error {
	f := failed(cs)
	if len(f) == 0 {
		return nil
	}
	names := make([]string, len(f))
	for i, c := range f {
		names[i] = c.Name
	}
	return fmt.Errorf("%s failed (%s): %s", what, strings.Join(names, ", "), f[0].Detail)
}

// Per-check time limits. A first request on a freshly loaded engine may
// capture CUDA graphs or compile kernels, hence the longer generation limit.
const (
	probeTimeout      = 10 * time.Second
	generationTimeout = 2 * time.Minute
)

// Health checks a server beyond /health, whose vLLM version only reads an
// error flag (a wedged GPU loop and a wrong parser both pass it):
// /health answers 200; /v1/models lists the served name; one tiny streamed
// chat completion comes back with a usage chunk and [DONE]; /metrics parses
// and has the engine's series. The result is always returned; the error is
// non-nil exactly when a check failed, and names it.
func Health(ctx context.Context, client *http.Client, t Target) (*HealthResult, error) {
	res := &HealthResult{Target: t, Engine: t.Engine}
	if err := t.Validate(); err != nil {
		res.Checks = append(res.Checks, Check{Name: "target", Detail: err.Error()})
		return res, err
	}
	if client == nil {
		client = NewClient(4)
	}
	run := func(name string, limit time.Duration, f func(ctx context.Context) (string, error)) {
		res.Checks = append(res.Checks, runCheck(ctx, name, limit, f))
	}
	skipRest := func(reason string, names ...string) {
		for _, n := range names {
			res.Checks = append(res.Checks, Check{Name: n, Skipped: true, Detail: reason})
		}
	}

	var unreachable bool
	run("/health", probeTimeout, func(ctx context.Context) (string, error) {
		status, body, err := getJSON(ctx, client, t, "/health", nil)
		switch {
		case err != nil:
			unreachable = isRefused(err) || errors.Is(err, context.DeadlineExceeded)
			return "", err
		case status == http.StatusServiceUnavailable:
			return "", fmt.Errorf("HTTP 503: the server is still starting, shutting down, or its engine died%s", bodyNote(body))
		case status != http.StatusOK:
			return "", fmt.Errorf("HTTP %d%s", status, bodyNote(body))
		}
		return "HTTP 200", nil
	})
	if unreachable {
		skipRest("not run: the server does not answer", "/v1/models", "generation", "/metrics")
		return res, gateError("health", res.Checks)
	}
	res.Version = serverVersion(ctx, client, t)

	model := t.Model
	wrongName := false
	run("/v1/models", probeTimeout, func(ctx context.Context) (string, error) {
		ids, err := listModels(ctx, client, t)
		if err != nil {
			return "", err
		}
		if model == "" {
			if len(ids) == 0 {
				return "", errors.New("the server lists no model")
			}
			model = ids[0]
			return fmt.Sprintf("serves %q (no model name given: took the first)", model), nil
		}
		for _, id := range ids {
			if id == model {
				return fmt.Sprintf("serves %q", model), nil
			}
		}
		wrongName = true
		return "", fmt.Errorf("the server does not serve %q; it serves %q. Clients address the model by its served name: check served_name in the model block (--served-model-name)", model, ids)
	})
	res.Target.Model = model

	if wrongName {
		skipRest("not run: the server does not serve that model name", "generation")
	} else {
		run("generation", generationTimeout, func(ctx context.Context) (string, error) {
			return tinyGeneration(ctx, client, Target{BaseURL: t.BaseURL, Model: model, Engine: t.Engine, APIKey: t.APIKey})
		})
	}

	run("/metrics", probeTimeout, func(ctx context.Context) (string, error) {
		detail, engine, err := checkMetrics(ctx, client, t)
		if engine != "" {
			res.Engine = engine
		}
		return detail, err
	})
	res.OK = len(res.Failed()) == 0
	return res, gateError("health", res.Checks)
}

// runCheck runs one step under its time limit and records the outcome; a
// step cut by its limit says so.
func runCheck(ctx context.Context, name string, limit time.Duration, f func(ctx context.Context) (string, error)) Check {
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	start := time.Now()
	detail, err := f(cctx)
	c := Check{Name: name, OK: err == nil, Detail: detail, ElapsedMS: ms(time.Since(start))}
	if err != nil {
		c.Detail = err.Error()
		if errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			c.Detail = fmt.Sprintf("no complete answer within %s: %v", limit, err)
		}
	}
	return c
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func bodyNote(b []byte) string {
	if s := snippet(b); s != "" {
		return ": " + s
	}
	return ""
}

// listModels returns the ids of /v1/models.
func listModels(ctx context.Context, c *http.Client, t Target) ([]string, error) {
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	status, body, err := getJSON(ctx, c, t, "/v1/models", &list)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("/v1/models answered HTTP %d%s", status, bodyNote(body))
	}
	ids := make([]string, 0, len(list.Data))
	for _, d := range list.Data {
		ids = append(ids, d.ID)
	}
	return ids, nil
}

// serverVersion asks the engine for its version: vLLM has /version, SGLang
// /server_info (older: /get_server_info). Empty when none answers.
func serverVersion(ctx context.Context, c *http.Client, t Target) string {
	var v struct {
		Version string `json:"version"`
	}
	var paths []string
	if k := kindOf(t.Engine); k != nil {
		paths = k.VersionPaths
	} else {
		for _, k := range engine.Kinds() {
			paths = append(paths, k.VersionPaths...)
		}
	}
	for _, path := range paths {
		cctx, cancel := context.WithTimeout(ctx, probeTimeout)
		status, _, err := getJSON(cctx, c, t, path, &v)
		cancel()
		if err == nil && status == http.StatusOK && v.Version != "" {
			return v.Version
		}
	}
	return ""
}

// tinyGeneration streams one 8-token chat completion and checks the
// stream's shape: output, the usage chunk, [DONE].
func tinyGeneration(ctx context.Context, c *http.Client, t Target) (string, error) {
	body := map[string]any{
		"model":          t.Model,
		"messages":       []map[string]string{{"role": "user", "content": "Say OK."}},
		"max_tokens":     8,
		"temperature":    0,
		"stream":         true,
		"stream_options": map[string]any{"include_usage": true},
	}
	start := time.Now()
	st, ttft, err := streamRequest(ctx, c, t, "/v1/chat/completions", body)
	note := ""
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusBadRequest && strings.Contains(strings.ToLower(ae.Message), "chat template") {
		// A base model has no chat template; the completions endpoint still
		// proves the generation path.
		delete(body, "messages")
		body["prompt"] = "The capital of France is"
		note = " (on /v1/completions: the model has no chat template, so chat requests fail; set chat_template if clients use chat)"
		start = time.Now()
		st, ttft, err = streamRequest(ctx, c, t, "/v1/completions", body)
	}
	if err != nil {
		return "", err
	}
	switch {
	case st.TokenChunks == 0:
		return "", errors.New("the stream carried no output token")
	case st.Usage == nil:
		return "", errors.New("no usage chunk although stream_options.include_usage was set")
	case st.Usage.CompletionTokens <= 0:
		return "", fmt.Errorf("the usage chunk reports %d completion tokens", st.Usage.CompletionTokens)
	}
	return fmt.Sprintf("%d tokens in %.0f ms (first after %.0f ms), usage chunk and [DONE]%s",
		st.Usage.CompletionTokens, ms(time.Since(start)), ms(ttft), note), nil
}

// streamRequest POSTs a streaming request and reads the whole stream. ttft is
// the time to the first chunk with output.
func streamRequest(ctx context.Context, c *http.Client, t Target, path string, body any) (*Stream, time.Duration, error) {
	start := time.Now()
	resp, err := postJSON(ctx, c, t, path, body)
	if err != nil {
		return nil, 0, err
	}
	defer closeBody(resp.Body)
	var ttft time.Duration
	st, err := ReadStream(resp.Body, func(ch *Chunk) {
		if ttft == 0 {
			for i := range ch.Choices {
				if ch.Choices[i].HasToken() {
					ttft = time.Since(start)
				}
			}
		}
	})
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w (after %s)", ctx.Err(), time.Since(start).Round(time.Millisecond))
	}
	return st, ttft, err
}

// checkMetrics fetches /metrics and checks the engine's series. engine is
// the detected engine when the target did not say.
func checkMetrics(ctx context.Context, c *http.Client, t Target) (detail, kind string, err error) {
	m, status, err := scrapeMetrics(ctx, c, t)
	if status == http.StatusNotFound {
		if k := kindOf(t.Engine); k != nil {
			return "", "", errors.New(k.NoMetrics)
		}
		return "not served (optional for a server of unknown engine)", "", nil
	}
	if err != nil {
		return "", "", err
	}
	kind = t.Engine
	if kind == "" {
		kind = m.detectEngine()
		if kind == "" {
			return fmt.Sprintf("parses (%d families; no %s series, so no engine check)", len(m.Families), metricPrefixes()), "", nil
		}
	}
	k := engine.Lookup(kind)
	if k == nil { // Validate refuses a target of such a kind
		return fmt.Sprintf("parses (%d families; engine %q has no known series)", len(m.Families), kind), "", nil
	}
	prefix := k.MetricPrefix
	if len(m.Prefixed(prefix)) == 0 {
		if k.NoSeries != "" {
			return "", kind, errors.New(k.NoSeries)
		}
		return "", kind, fmt.Errorf("/metrics has no %s* series", prefix)
	}
	if miss := m.missing(k); len(miss) > 0 {
		return "", kind, fmt.Errorf("/metrics lacks %s", strings.Join(miss, ", "))
	}
	return fmt.Sprintf("parses; %d %s* families including the expected ones", len(m.Prefixed(prefix)), prefix), kind, nil
}

// ErrExited is wrapped by WaitReady when the server process died.
var ErrExited = errors.New("the server process exited before it became ready")

// WaitReady polls /health until it answers 200, the timeout passes, ctx ends
// or exited reports that the process died. Connection refused is the normal
// answer of a loading vLLM (it binds its port but listens only when ready),
// 503 that of a starting SGLang. Polls start at 100 ms and slow to 2 s.
// onPoll, when not nil, sees each poll's outcome. exited, when not nil, is
// asked before each poll: dead true ends the wait (err, when not nil, is why
// it died); err alone is a failure to check and ends it too.
func WaitReady(ctx context.Context, t Target, timeout time.Duration, onPoll func(elapsed time.Duration, status string), exited func() (bool, error)) error {
	if err := t.Validate(); err != nil {
		return err
	}
	client := NewClient(2)
	defer client.CloseIdleConnections()
	start := time.Now()
	deadline := start.Add(timeout)
	interval := 100 * time.Millisecond
	last := "no answer yet"
	for {
		if exited != nil {
			dead, err := exited()
			switch {
			case dead && err != nil:
				return fmt.Errorf("%w: %v", ErrExited, err)
			case dead:
				return ErrExited
			case err != nil:
				return fmt.Errorf("checking the server process: %w", err)
			}
		}
		status, ready := pollHealth(ctx, client, t)
		last = status
		slog.Log(ctx, slog.LevelDebug-4, "health poll", "url", t.BaseURL, "status", status, "ready", ready, "elapsed", time.Since(start))
		if onPoll != nil {
			onPoll(time.Since(start), status)
		}
		if ready {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("the server was not ready within %s (last poll: %s); it may still be loading: raise gate.health_timeout, or read its log", timeout, last)
		}
		wait := min(interval, time.Until(deadline))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		interval = min(interval*3/2, 2*time.Second)
	}
}

// pollHealth asks /health once and describes the answer.
func pollHealth(ctx context.Context, c *http.Client, t Target) (string, bool) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	status, _, err := getJSON(cctx, c, t, "/health", nil)
	switch {
	case err != nil && isRefused(err):
		return "connection refused (loading)", false
	case err != nil && errors.Is(cctx.Err(), context.DeadlineExceeded):
		return "no answer within 5s", false
	case err != nil:
		return err.Error(), false
	case status == http.StatusOK:
		return "ready", true
	case status == http.StatusServiceUnavailable:
		return "HTTP 503 (starting)", false
	}
	return fmt.Sprintf("HTTP %d", status), false
}

// Serves runs the health gate once against t (the models, a tiny streamed
// generation, /metrics), within 30 s, as apply does before it promotes a
// server: nil when every check passed, else the failed checks.
func Serves(ctx context.Context, t Target) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	client := NewClient(2)
	defer client.CloseIdleConnections()
	h, err := Health(ctx, client, t)
	if err != nil {
		return err
	}
	if h != nil && !h.OK {
		return errors.New(ChecksText(h.Failed()))
	}
	return nil
}
