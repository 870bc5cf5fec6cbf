// Package sim is the rehearsal engine: a stand-in for vLLM and SGLang that
// needs no GPU. It parses the real argv of an emulated engine version, writes
// that version's start-up log lines, sizes the KV cache with roofline's own
// memory model, and serves the OpenAI-compatible HTTP surface with a
// configurable time to first token and inter-token latency. See
// docs/rehearsal.md.
package rehearsal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/roofline/roofline/internal/engine/kinds"
)

// Engine kinds.
const (
	KindVLLM   = kinds.VLLM
	KindSGLang = kinds.SGLang
)

// ServeOptions configure the HTTP side of the rehearsal engine. Zero values
// get the defaults documented on each field.
type ServeOptions struct {
	Kind    string // KindVLLM (default) or KindSGLang
	Version string // emulated version; default "0.16.0" (vLLM) / "0.5.6.post2" (SGLang)

	ServedNames []string // model names /v1/models lists; default ["rehearsal"]
	ModelPath   string   // "root" in /v1/models; default the first served name
	MaxModelLen int      // context length; default 4096
	VocabSize   int      // toy tokenizer vocabulary; default 151936
	ModelType   string   // config.json model_type: picks the tool-call format

	TTFT time.Duration // time to first token after admission; default 50ms
	ITL  time.Duration // inter-token latency of a lone stream; default 10ms
	// Alpha is the batching slow-down: with r running sequences every stream's
	// inter-token latency (and TTFT) is multiplied by 1 + Alpha·(r−1)/MaxNumSeqs.
	// Negative means 0; default (0) keeps timing independent of load.
	Alpha      float64
	MaxNumSeqs int // sequences that run at once; more wait in a queue; default 256
	// PrefillTokensPerSecond adds prompt_tokens/rate to TTFT; 0 = TTFT fixed.
	PrefillTokensPerSecond float64
	// OutputLen is the answer's natural length in tokens (without ignore_eos
	// or min_tokens); default 32.
	OutputLen int

	ToolCallParser       string // --tool-call-parser; "" = none
	EnableAutoToolChoice bool   // vLLM --enable-auto-tool-choice
	// ToolFormat is the model family's tool-call text format (hermes,
	// llama3_json, mistral, deepseek_v3, qwen3_coder, pythonic); default from
	// ModelType, else hermes.
	ToolFormat      string
	ReasoningParser string // --reasoning-parser; "" = none
	EnableReasoning bool   // vLLM 0.8.5 --enable-reasoning
	Thinking        bool   // the model writes <think>...</think> before answering

	// Metrics serves /metrics. vLLM always mounts it; SGLang only with
	// --enable-metrics.
	Metrics bool
	// NoStats (vLLM --disable-log-stats) keeps /metrics but without the
	// engine's series: vLLM creates its stat loggers only with stats on.
	NoStats bool
	APIKeys []string // --api-key: /v1 routes need "Authorization: Bearer KEY"

	// Facts shown by /metrics, /server_info and /v1/models.
	KVTokens             int
	BlockSize            int
	KVCacheDtype         string
	GPUMemoryUtilization float64
	LoadTime             time.Duration
	V0                   bool           // vLLM 0.8.5 with VLLM_USE_V1=0: V0 metric names
	ServerArgs           map[string]any // SGLang /server_info fields

	// AccessLog, when set, gets one uvicorn-style line per request.
	AccessLog func(remote, method, path string, status int)
}

func (o *ServeOptions) fill() {
	if o.Kind == "" {
		o.Kind = KindVLLM
	}
	if o.Version == "" {
		o.Version = map[string]string{KindVLLM: "0.16.0", KindSGLang: "0.5.6.post2"}[o.Kind]
	}
	if len(o.ServedNames) == 0 {
		o.ServedNames = []string{"rehearsal"}
	}
	if o.ModelPath == "" {
		o.ModelPath = o.ServedNames[0]
	}
	if o.MaxModelLen <= 0 {
		o.MaxModelLen = 4096
	}
	if o.VocabSize <= 0 {
		o.VocabSize = 151936
	}
	if o.TTFT <= 0 {
		o.TTFT = 50 * time.Millisecond
	}
	if o.ITL <= 0 {
		o.ITL = 10 * time.Millisecond
	}
	o.Alpha = max(o.Alpha, 0)
	if o.MaxNumSeqs <= 0 {
		o.MaxNumSeqs = 256
	}
	if o.OutputLen <= 0 {
		o.OutputLen = 32
	}
	if o.ToolFormat == "" {
		o.ToolFormat = string(toolFormatForModel(o.ModelType))
	}
	if o.BlockSize <= 0 {
		o.BlockSize = 16
	}
	if o.KVCacheDtype == "" {
		o.KVCacheDtype = "auto"
	}
	if o.KVTokens <= 0 {
		o.KVTokens = o.MaxModelLen * o.MaxNumSeqs
	}
}

func (o *ServeOptions) servedName() string { return o.ServedNames[0] }

// needsEnableReasoning: vLLM before 0.9 applied the reasoning parser only with --enable-reasoning.
func (o *ServeOptions) needsEnableReasoning() bool {
	return o.Kind == KindVLLM && versionLess(o.Version, "0.9")
}

// nestedErrors: vLLM from 0.10 wraps errors as {"error": {...}}; older vLLM
// and SGLang answer the flat {"object": "error", ...}.
func (o *ServeOptions) nestedErrors() bool {
	return o.Kind == KindVLLM && !versionLess(o.Version, "0.10")
}

func (o *ServeOptions) numBlocks() int { return o.KVTokens / max(o.BlockSize, 1) }

// Stats are running totals for the engine's periodic log line.
type Stats struct {
	PromptTokens, GenerationTokens int64
	Running, Waiting               int
	KVUsage                        float64 // 0..1
}

// Stats returns the totals so far.
func (h *Handler) Stats() Stats {
	r, w := h.sched.counts()
	return Stats{PromptTokens: h.met.promptTokens.Load(), GenerationTokens: h.met.genTokens.Load(),
		Running: r, Waiting: w, KVUsage: h.kvUsage()}
}

// State is the health of the emulated engine.
type State int32

const (
	StateReady    State = iota // /health 200
	StateStarting              // SGLang warm-up: /health 503, the rest serves
	StateDead                  // the engine died: /health 503, requests fail, streams end with an error event
	StateStopping              // shutting down: /health 503
)

// Handler serves the OpenAI-compatible surface of the emulated engine.
type Handler struct {
	opts    ServeOptions
	tok     *Tokenizer
	sched   *scheduler
	met     *metricSet
	filler  []piece
	mux     *http.ServeMux
	state   atomic.Int32
	dead    context.Context
	kill    context.CancelFunc
	created int64
	http    *httpSeries // vLLM's http_* series; nil for SGLang
	// emitHook, when set (tests), sees every token's deadline and write time.
	emitHook func(req string, step int, deadline, wrote time.Time)
}

// NewHandler returns a ready handler. It is safe for concurrent use.
func NewHandler(opts ServeOptions) *Handler {
	opts.fill()
	h := &Handler{opts: opts, tok: NewTokenizer(opts.VocabSize), created: time.Now().Unix()}
	h.sched = newScheduler(opts.TTFT, opts.ITL, opts.Alpha, opts.MaxNumSeqs, opts.PrefillTokensPerSecond)
	for _, id := range h.tok.Encode(fillerText) {
		h.filler = append(h.filler, piece{id: id, kind: kContent, text: h.tok.Piece(id)})
	}
	h.dead, h.kill = context.WithCancel(context.Background())
	h.met = h.newMetrics()
	if opts.Kind == KindVLLM && opts.Metrics {
		h.http = newHTTPSeries()
	}
	h.routes()
	return h
}

// Options returns the options in effect (defaults filled in).
func (h *Handler) Options() ServeOptions { return h.opts }

// Tokenizer returns the handler's toy tokenizer.
func (h *Handler) Tokenizer() *Tokenizer { return h.tok }

// SetState changes the health. StateDead also ends every running stream with
// an error event, as vLLM does when its engine core dies.
func (h *Handler) SetState(s State) {
	h.state.Store(int32(s))
	if s == StateDead {
		h.kill()
	}
}

// State returns the current health.
func (h *Handler) State() State { return State(h.state.Load()) }

func (h *Handler) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /health", h.health)
	m.HandleFunc("GET /ping", h.health)
	m.HandleFunc("POST /ping", h.health)
	m.HandleFunc("GET /v1/models", h.models)
	m.HandleFunc("POST /v1/chat/completions", h.chat)
	m.HandleFunc("POST /v1/completions", h.completions)
	m.HandleFunc("POST /tokenize", h.tokenize)
	m.HandleFunc("POST /detokenize", h.detokenize)
	if h.opts.Kind == KindSGLang {
		m.HandleFunc("GET /health_generate", h.health)
		m.HandleFunc("GET /v1/models/{model...}", h.models)
		m.HandleFunc("GET /server_info", h.serverInfo)
		m.HandleFunc("GET /get_server_info", h.serverInfo)
		m.HandleFunc("GET /model_info", h.modelInfo)
		m.HandleFunc("GET /get_model_info", h.modelInfo)
		m.HandleFunc("POST /v1/tokenize", h.tokenize)
		m.HandleFunc("POST /v1/detokenize", h.detokenize)
	} else {
		if h.opts.servesResponses() {
			m.HandleFunc("POST /v1/responses", h.responses)
		}
		m.HandleFunc("GET /version", h.version)
		m.HandleFunc("GET /server_info", h.serverInfo)
	}
	if h.opts.Metrics {
		m.HandleFunc("GET /metrics", h.metrics)
	}
	h.mux = m
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	start := time.Now()
	_, pattern := h.mux.Handler(r)
	defer func() {
		if h.opts.AccessLog != nil {
			h.opts.AccessLog(r.RemoteAddr, r.Method, r.URL.Path, rec.status)
		}
		if h.http != nil {
			_, route, _ := strings.Cut(pattern, " ")
			h.http.observe(route, r.Method, rec.status, r.ContentLength, rec.bytes, time.Since(start))
		}
	}()
	if len(h.opts.APIKeys) > 0 && strings.HasPrefix(r.URL.Path, "/v1") && !h.authorized(r) {
		writeJSON(rec, http.StatusUnauthorized, map[string]string{"error": "Unauthorized"})
		return
	}
	if pattern == "" {
		// FastAPI's answers for an unknown path or a wrong method.
		status, detail := http.StatusNotFound, "Not Found"
		if h.pathKnown(r.URL.Path) {
			status, detail = http.StatusMethodNotAllowed, "Method Not Allowed"
		}
		writeJSON(rec, status, map[string]string{"detail": detail})
		return
	}
	h.mux.ServeHTTP(rec, r)
}

func (h *Handler) pathKnown(path string) bool {
	for _, m := range []string{"GET", "POST"} {
		r, _ := http.NewRequest(m, path, nil)
		if _, p := h.mux.Handler(r); p != "" {
			return true
		}
	}
	return false
}

func (h *Handler) authorized(r *http.Request) bool {
	got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	for _, k := range h.opts.APIKeys {
		if got == k {
			return true
		}
	}
	return false
}

type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	n, err := s.ResponseWriter.Write(b)
	s.bytes += int64(n)
	return n, err
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func writeJSON(w http.ResponseWriter, status int, v any) {
	raw, err := json.Marshal(v)
	if err != nil {
		status, raw = http.StatusInternalServerError, []byte(`{"detail":"Internal Server Error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(raw)
}

// errorBody is the engine's error object for one version.
func (h *Handler) errorBody(status int, typ, msg string) map[string]any {
	inner := map[string]any{"message": msg, "type": typ, "param": nil, "code": status}
	if h.opts.nestedErrors() {
		return map[string]any{"error": inner}
	}
	inner["object"] = "error"
	return inner
}

func (h *Handler) fail(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, h.errorBody(status, errorType(status), msg))
}

func errorType(status int) string {
	switch status {
	case http.StatusNotFound:
		return "NotFoundError"
	case http.StatusInternalServerError:
		return "InternalServerError"
	default:
		return "BadRequestError"
	}
}

func (h *Handler) health(w http.ResponseWriter, r *http.Request) {
	if h.State() == StateReady {
		w.WriteHeader(http.StatusOK)
		return
	}
	w.WriteHeader(http.StatusServiceUnavailable)
}

func (h *Handler) models(w http.ResponseWriter, r *http.Request) {
	var data []map[string]any
	for _, name := range h.opts.ServedNames {
		m := map[string]any{"id": name, "object": "model", "created": h.created,
			"owned_by": h.opts.Kind, "root": h.opts.ModelPath, "max_model_len": h.opts.MaxModelLen}
		if h.opts.Kind == KindVLLM {
			m["parent"] = nil
			m["permission"] = []map[string]any{{"id": "modelperm-" + randHex(16), "object": "model_permission",
				"created": h.created, "allow_create_engine": false, "allow_sampling": true,
				"allow_logprobs": true, "allow_search_indices": false, "allow_view": true,
				"allow_fine_tuning": false, "organization": "*", "group": nil, "is_blocking": false}}
		} else {
			m["root"] = name
		}
		data = append(data, m)
	}
	if want := r.PathValue("model"); want != "" {
		for _, m := range data {
			if m["id"] == want {
				writeJSON(w, http.StatusOK, m)
				return
			}
		}
		h.fail(w, http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist.", want))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

func (h *Handler) version(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"version": h.opts.Version})
}

func (h *Handler) serverInfo(w http.ResponseWriter, r *http.Request) {
	info := map[string]any{}
	for k, v := range h.opts.ServerArgs {
		info[k] = v
	}
	info["version"] = h.opts.Version
	if h.opts.Kind == KindSGLang {
		info["max_total_num_tokens"] = h.opts.KVTokens
		info["internal_states"] = []map[string]any{{"last_gen_throughput": 0.0}}
	}
	writeJSON(w, http.StatusOK, info)
}

func (h *Handler) modelInfo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"model_path": h.opts.ModelPath,
		"tokenizer_path": h.opts.ModelPath, "is_generation": true})
}

func (h *Handler) metrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	var b strings.Builder
	if h.opts.Kind == KindVLLM {
		renderProcess(&b, h.met.startTime)
	}
	if !h.opts.NoStats {
		b.WriteString(h.met.render())
	}
	if h.http != nil {
		h.http.render(&b)
	}
	_, _ = io.WriteString(w, b.String())
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (h *Handler) toolCallID() string {
	switch {
	case h.opts.Kind == KindSGLang:
		return "call_" + randHex(12)
	case versionLess(h.opts.Version, "0.10"):
		return "chatcmpl-tool-" + randHex(16)
	default:
		return "chatcmpl-tool-" + randHex(8)
	}
}

// versionLess compares dotted versions numerically ("0.8.5" < "0.10").
func versionLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(pa), len(pb)); i++ {
		var x, y int
		if i < len(pa) {
			fmt.Sscanf(pa[i], "%d", &x)
		}
		if i < len(pb) {
			fmt.Sscanf(pb[i], "%d", &y)
		}
		if x != y {
			return x < y
		}
	}
	return false
}
