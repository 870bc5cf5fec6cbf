// Package gatetest is a small in-process OpenAI-compatible server in the
// wire shapes vLLM and SGLang use (gates.md §4), for testing the gates
// without the rehearsal engine: fixed time to first token and inter-token
// latency, tool calls with or without a parser, reasoning fields, /metrics
// with either engine's names, and failure switches.
package gatetest

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roofline/roofline/internal/engine/kinds"
)

// Options configure a Server. The zero value is a vLLM server named
// "test-model" that answers at once.
type Options struct {
	Engine string // kinds.VLLM (default) or kinds.SGLang
	Model  string // served name; default "test-model"

	TTFT time.Duration // from request arrival to the first token
	ITL  time.Duration // between tokens

	// ToolParser makes tool calls come back as tool_calls; without it they
	// come back as <tool_call> text in content, as a server without the
	// right --tool-call-parser does.
	ToolParser bool
	// NoAutoToolChoice answers tool_choice "auto" with vLLM's HTTP 400 for a
	// server started without --enable-auto-tool-choice.
	NoAutoToolChoice bool
	// StreamToolsAsText breaks only the streaming tool parser (vllm PR #32506).
	StreamToolsAsText bool
	// BadArguments sends tool arguments that miss a required property.
	BadArguments bool
	// FinishStop sends finish_reason "stop" with tool calls (vllm PR #47931).
	FinishStop bool

	// ReasoningField is "reasoning" (vLLM), "reasoning_content" (SGLang),
	// "inline" (<think> left in content: no reasoning parser) or "".
	ReasoningField string

	// Metrics serves /metrics (always on for vLLM unless NoMetrics; SGLang
	// needs it, like --enable-metrics). LegacyMetricNames uses vLLM 0.8's names.
	Metrics           bool
	NoMetrics         bool
	LegacyMetricNames bool
	// UsageSkew is added to every reported completion_tokens (a server whose
	// usage disagrees with its own counters).
	UsageSkew int

	// FailEvery makes every Nth completion request fail inside its stream.
	FailEvery int
	// IgnoreEOSBroken stops at half of max_tokens despite ignore_eos.
	IgnoreEOSBroken bool
	// NoTokenize answers /tokenize with 404 (an OpenAI-compatible server
	// that is neither engine).
	NoTokenize bool
}

// behaviour is how the fake differs per engine kind.
type behaviour struct {
	versionPath, version                   string // the path that answers {"version": ...}
	nestedErrors                           bool   // {"error": {...}} (vLLM) rather than a flat object
	metricsOptIn                           bool   // /metrics only with Options.Metrics (SGLang's --enable-metrics)
	autoToolChoiceFlag                     bool   // tool_choice "auto" needs --enable-auto-tool-choice
	prefix, running, waiting, usage, label string
}

// behaviours is keyed by engine kind: selected, never compared.
var behaviours = map[string]behaviour{
	kinds.VLLM: {versionPath: "/version", version: "0.16.0", nestedErrors: true, autoToolChoiceFlag: true,
		prefix: "vllm:", running: "num_requests_running", waiting: "num_requests_waiting", usage: "kv_cache_usage_perc", label: `,engine="0"`},
	kinds.SGLang: {versionPath: "/server_info", version: "0.5.6.post2", metricsOptIn: true,
		prefix: "sglang:", running: "num_running_reqs", waiting: "num_queue_reqs", usage: "token_usage"},
}

// Server is the fake engine. Use it as an http.Handler.
type Server struct {
	o      Options
	b      behaviour
	mux    *http.ServeMux
	health atomic.Int32

	requests   atomic.Int64
	promptToks atomic.Int64
	genToks    atomic.Int64
	running    atomic.Int64
	callID     atomic.Int64

	mu       sync.Mutex
	lastBody []byte
	ttfts    []time.Duration
}

// New returns a fake server.
func New(o Options) *Server {
	if o.Engine == "" {
		o.Engine = kinds.VLLM
	}
	if o.Model == "" {
		o.Model = "test-model"
	}
	s := &Server{o: o, b: behaviours[o.Engine], mux: http.NewServeMux()}
	s.health.Store(200)
	s.mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(int(s.health.Load()))
	})
	s.mux.HandleFunc("GET /v1/models", s.models)
	if s.b.versionPath != "" {
		s.mux.HandleFunc("GET "+s.b.versionPath, func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 200, map[string]any{"version": s.b.version})
		})
	}
	s.mux.HandleFunc("GET /metrics", s.metrics)
	s.mux.HandleFunc("POST /tokenize", s.tokenize)
	s.mux.HandleFunc("POST /detokenize", s.detokenize)
	s.mux.HandleFunc("POST /v1/chat/completions", s.complete)
	s.mux.HandleFunc("POST /v1/completions", s.complete)
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// SetHealth sets the status /health answers (503 while "starting").
func (s *Server) SetHealth(code int) { s.health.Store(int32(code)) }

// GenerationTokens is the server's own count of generated tokens (what its
// generation_tokens_total counter says).
func (s *Server) GenerationTokens() int64 { return s.genToks.Load() }

// Requests counts completion requests.
func (s *Server) Requests() int64 { return s.requests.Load() }

// recordTTFT keeps the time to first token the fake really served (its
// sleeps overshoot by up to a millisecond).
func (s *Server) recordTTFT(d time.Duration) {
	s.mu.Lock()
	s.ttfts = append(s.ttfts, d)
	s.mu.Unlock()
}

// ServedTTFTs returns, and forgets, the times to first token of the
// streams served so far, measured by the fake from request arrival to the
// flush of the first token: the truth a client's measurement is held to.
func (s *Server) ServedTTFTs() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.ttfts
	s.ttfts = nil
	return out
}

// LastBody is the decoded body of the last completion request.
func (s *Server) LastBody() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var m map[string]any
	_ = json.Unmarshal(s.lastBody, &m)
	return m
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) errorBody(code int, typ, msg string) any {
	if !s.b.nestedErrors {
		return map[string]any{"object": "error", "message": msg, "type": typ, "param": nil, "code": code}
	}
	return map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}}
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, 200, map[string]any{"object": "list", "data": []any{
		map[string]any{"id": s.o.Model, "object": "model", "owned_by": s.o.Engine, "root": "/models/" + s.o.Model, "max_model_len": 32768},
	}})
}

// Tokens are words; an id is a hash of the word, and detokenizing id N gives
// the word "tN", which tokenizes back to one token.
func tokenIDs(text string) []int {
	var ids []int
	for _, w := range strings.Fields(text) {
		h := fnv.New32a()
		_, _ = h.Write([]byte(w))
		ids = append(ids, 100+int(h.Sum32()%30000))
	}
	return ids
}

func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	if s.o.NoTokenize {
		http.NotFound(w, r)
		return
	}
	var req struct {
		Prompt string `json:"prompt"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, 400, s.errorBody(400, "BadRequestError", err.Error()))
		return
	}
	ids := tokenIDs(req.Prompt)
	writeJSON(w, 200, map[string]any{"tokens": ids, "count": len(ids), "max_model_len": 32768})
}

func (s *Server) detokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Tokens []int `json:"tokens"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, 400, s.errorBody(400, "BadRequestError", err.Error()))
		return
	}
	words := make([]string, len(req.Tokens))
	for i, id := range req.Tokens {
		words[i] = fmt.Sprintf("t%d", id)
	}
	writeJSON(w, 200, map[string]any{"prompt": strings.Join(words, " ")})
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	if s.o.NoMetrics || (s.b.metricsOptIn && !s.o.Metrics) {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	p, running, waiting, usage, label := s.b.prefix, s.b.running, s.b.waiting, s.b.usage, `model_name="`+s.o.Model+`"`+s.b.label
	if s.o.LegacyMetricNames {
		usage = "gpu_cache_usage_perc"
	}
	fmt.Fprintf(w, "# HELP python_gc_objects_collected_total Objects collected during gc\n# TYPE python_gc_objects_collected_total counter\npython_gc_objects_collected_total{generation=\"0\"} 1234.0\n")
	fmt.Fprintf(w, "# HELP %s%s Number of requests running.\n# TYPE %[1]s%[2]s gauge\n%[1]s%[2]s{%s} %d.0\n", p, running, label, s.running.Load())
	fmt.Fprintf(w, "# HELP %s%s Number of requests waiting.\n# TYPE %[1]s%[2]s gauge\n%[1]s%[2]s{%s} 0.0\n", p, waiting, label)
	fmt.Fprintf(w, "# HELP %s%s KV cache usage.\n# TYPE %[1]s%[2]s gauge\n%[1]s%[2]s{%s} 0.01\n", p, usage, label)
	fmt.Fprintf(w, "# HELP %sprompt_tokens_total Prompt tokens.\n# TYPE %[1]sprompt_tokens_total counter\n%[1]sprompt_tokens_total{%s} %d.0\n", p, label, s.promptToks.Load())
	fmt.Fprintf(w, "# HELP %sgeneration_tokens_total Generation tokens.\n# TYPE %[1]sgeneration_tokens_total counter\n%[1]sgeneration_tokens_total{%s} %d.0\n", p, label, s.genToks.Load())
	fmt.Fprintf(w, "# HELP %stime_to_first_token_seconds TTFT.\n# TYPE %[1]stime_to_first_token_seconds histogram\n", p)
	n := s.requests.Load()
	for _, le := range []string{"0.1", "1.0", "+Inf"} {
		fmt.Fprintf(w, "%stime_to_first_token_seconds_bucket{%s,le=\"%s\"} %d.0\n", p, label, le, n)
	}
	fmt.Fprintf(w, "%stime_to_first_token_seconds_sum{%s} %f\n%[1]stime_to_first_token_seconds_count{%[2]s} %[4]d.0\n", p, label, float64(n)*s.o.TTFT.Seconds(), n)
}

// request is the part of a completion request the fake reads.
type request struct {
	Model         string          `json:"model"`
	Messages      []message       `json:"messages"`
	Prompt        json.RawMessage `json:"prompt"`
	Stream        bool            `json:"stream"`
	MaxTokens     int             `json:"max_tokens"`
	MaxCompletion int             `json:"max_completion_tokens"`
	IgnoreEOS     bool            `json:"ignore_eos"`
	StreamOptions struct {
		IncludeUsage    bool `json:"include_usage"`
		ContinuousUsage bool `json:"continuous_usage_stats"`
	} `json:"stream_options"`
	Tools      []tool          `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
}

type message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  json.RawMessage `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

type tool struct {
	Function struct {
		Name       string         `json:"name"`
		Parameters map[string]any `json:"parameters"`
	} `json:"function"`
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request) {
	t0 := time.Now()
	n := s.requests.Add(1)
	s.running.Add(1)
	defer s.running.Add(-1)
	body, err := io.ReadAll(r.Body)
	var req request
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		writeJSON(w, 400, s.errorBody(400, "BadRequestError", "invalid JSON: "+err.Error()))
		return
	}
	s.mu.Lock()
	s.lastBody = body // decoded only when a test asks: the fake's CPU is the benchmark's noise
	s.mu.Unlock()
	if req.Model != s.o.Model {
		writeJSON(w, 404, s.errorBody(404, "NotFoundError", fmt.Sprintf("The model `%s` does not exist.", req.Model)))
		return
	}
	chat := strings.HasSuffix(r.URL.Path, "/chat/completions")
	choice := strings.Trim(string(req.ToolChoice), `"`)
	useTools := chat && len(req.Tools) > 0 && choice != "none"
	if useTools && (choice == "" || choice == "auto") && s.o.NoAutoToolChoice && s.b.autoToolChoiceFlag {
		writeJSON(w, 400, s.errorBody(400, "BadRequestError", `"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set`))
		return
	}

	prompt := s.promptTokens(&req, chat)
	maxTok := req.MaxTokens
	if req.MaxCompletion > 0 {
		maxTok = req.MaxCompletion
	}
	if maxTok <= 0 {
		maxTok = 16
	}
	ans := s.answer(&req, useTools, maxTok)
	s.promptToks.Add(int64(prompt))
	s.genToks.Add(int64(ans.tokens))
	usage := map[string]any{"prompt_tokens": prompt, "completion_tokens": ans.tokens + s.o.UsageSkew, "total_tokens": prompt + ans.tokens + s.o.UsageSkew}

	if !req.Stream {
		if !sleepUntil(r.Context(), t0.Add(s.o.TTFT+time.Duration(max(ans.tokens-1, 0))*s.o.ITL)) {
			return
		}
		msg := map[string]any{"role": "assistant", "content": ans.content}
		if ans.content == "" {
			msg["content"] = nil
		}
		if ans.reasoning != "" {
			msg[s.o.ReasoningField] = ans.reasoning
		}
		if len(ans.calls) > 0 {
			msg["tool_calls"] = ans.calls
		}
		ch := map[string]any{"index": 0, "message": msg, "finish_reason": ans.finish}
		obj := "chat.completion"
		if !chat {
			ch = map[string]any{"index": 0, "text": ans.content, "finish_reason": ans.finish}
			obj = "text_completion"
		}
		writeJSON(w, 200, map[string]any{"id": fmt.Sprintf("cmpl-%d", n), "object": obj, "model": s.o.Model, "choices": []any{ch}, "usage": usage})
		return
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	fl, _ := w.(http.Flusher)
	obj := "chat.completion.chunk"
	if !chat {
		obj = "text_completion"
	}
	// Chunks are built with appends: at 64 streams and 10 ms per token the
	// fake's own CPU would otherwise show up in the latencies it serves.
	head := fmt.Sprintf(`data: {"id":"cmpl-%d","object":"%s","created":1760000000,"model":%q,"choices":[`, n, obj, s.o.Model)
	var buf []byte
	appendUsage := func(b []byte, p, c int) []byte {
		b = append(b, `{"prompt_tokens":`...)
		b = strconv.AppendInt(b, int64(p), 10)
		b = append(b, `,"completion_tokens":`...)
		b = strconv.AppendInt(b, int64(c), 10)
		b = append(b, `,"total_tokens":`...)
		b = strconv.AppendInt(b, int64(p+c), 10)
		return append(b, '}')
	}
	// send appends one chunk; completion < 0 means "usage":null.
	send := func(choices string, completion int) {
		buf = append(buf, head...)
		buf = append(buf, choices...)
		buf = append(buf, `],"usage":`...)
		if completion < 0 {
			buf = append(buf, "null"...)
		} else {
			buf = appendUsage(buf, prompt, completion)
		}
		buf = append(buf, "}\n\n"...)
	}
	cum := func(k int) int {
		if !req.StreamOptions.ContinuousUsage {
			return -1
		}
		return k
	}
	flush := func() {
		_, _ = w.Write(buf)
		buf = buf[:0]
		if fl != nil {
			fl.Flush()
		}
	}
	pieces := ans.streamPieces(chat, s.o.ReasoningField)
	for k, p := range pieces {
		if !sleepUntil(r.Context(), t0.Add(s.o.TTFT+time.Duration(k)*s.o.ITL)) {
			return
		}
		if k == 0 && chat {
			send(`{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}`, cum(0))
		}
		if s.o.FailEvery > 0 && n%int64(s.o.FailEvery) == 0 && k == len(pieces)/2 {
			eb, _ := json.Marshal(s.errorBody(500, "InternalServerError", "EngineCore encountered an issue."))
			buf = append(buf, "data: "...)
			buf = append(buf, eb...)
			buf = append(buf, "\n\ndata: [DONE]\n\n"...)
			flush()
			return
		}
		fin := "null"
		if k == len(pieces)-1 {
			fin = `"` + ans.finish + `"`
		}
		send(`{"index":0,`+p+`,"logprobs":null,"finish_reason":`+fin+`}`, cum(min(k+1, ans.tokens)))
		flush()
		if k == 0 {
			s.recordTTFT(time.Since(t0))
		}
	}
	if req.StreamOptions.IncludeUsage {
		send("", ans.tokens+s.o.UsageSkew)
	}
	buf = append(buf, "data: [DONE]\n\n"...)
	flush()
}

// sleepUntil waits for t; false when the client went away first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (s *Server) promptTokens(req *request, chat bool) int {
	if !chat {
		if p := strings.TrimSpace(string(req.Prompt)); strings.HasPrefix(p, "[") {
			if strings.Trim(p, "[] \n") == "" {
				return 0
			}
			return strings.Count(p, ",") + 1 // token ids
		}
		var text string
		_ = json.Unmarshal(req.Prompt, &text)
		return len(tokenIDs(text))
	}
	n := 0
	for _, m := range req.Messages {
		var text string
		_ = json.Unmarshal(m.Content, &text)
		n += 4 + len(tokenIDs(text)) // role markers of the template
	}
	return n + 2
}

type answer struct {
	content, reasoning string
	calls              []map[string]any
	finish             string
	tokens             int
	textCalls          bool // tool calls as text in streamed content
}

var digits = regexp.MustCompile(`\d+`)

func (s *Server) answer(req *request, useTools bool, maxTok int) answer {
	last := message{}
	if len(req.Messages) > 0 {
		last = req.Messages[len(req.Messages)-1]
	}
	var a answer
	switch {
	case useTools && last.Role == "tool":
		var text string
		_ = json.Unmarshal(last.Content, &text)
		a.content = "It is " + strings.Join(digits.FindAllString(text, 1), "") + " degrees in Dallas right now."
		a.finish = "stop"
	case useTools:
		args := argsFor(req.Tools[0].Function.Parameters, s.o.BadArguments)
		call := map[string]any{"id": fmt.Sprintf("chatcmpl-tool-%08d", s.callID.Add(1)), "type": "function",
			"function": map[string]any{"name": req.Tools[0].Function.Name, "arguments": args}}
		if s.o.ToolParser {
			a.calls = []map[string]any{call}
			a.finish = "tool_calls"
			if s.o.FinishStop {
				a.finish = "stop"
			}
			a.textCalls = s.o.StreamToolsAsText
		} else {
			a.content = fmt.Sprintf("<tool_call>\n{\"name\": %q, \"arguments\": %s}\n</tool_call>", req.Tools[0].Function.Name, args)
			a.finish = "stop"
		}
	default:
		n := maxTok
		if !req.IgnoreEOS {
			n = min(maxTok, 8)
		} else if s.o.IgnoreEOSBroken {
			n = max(maxTok/2, 1)
		}
		words := make([]string, n)
		for i := range words {
			words[i] = " tok"
		}
		a.content = strings.Join(words, "")
		a.tokens = n
		a.finish = "length"
		if n < maxTok {
			a.finish = "stop"
		}
	}
	if s.o.ReasoningField != "" && len(req.Tools) == 0 && len(req.Messages) > 0 && !req.IgnoreEOS {
		a.reasoning = "The user asks a simple sum. 1 + 3 is 4."
		a.content = "1 + 3 = 4."
		a.finish = "stop"
		if s.o.ReasoningField == "inline" {
			a.content = "<think>" + a.reasoning + "</think>\n\n" + a.content
			a.reasoning = ""
		}
	}
	if a.tokens == 0 {
		a.tokens = max(len(strings.Fields(a.content+" "+a.reasoning)), 1)
		for _, c := range a.calls {
			a.tokens += len(c["function"].(map[string]any)["arguments"].(string)) / 4
		}
	}
	return a
}

// streamPieces splits an answer into one delta per token interval.
func (a answer) streamPieces(chat bool, reasoningField string) []string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	var out []string
	if !chat {
		for _, w := range splitWords(a.content) {
			out = append(out, `"text":`+q(w))
		}
		return out
	}
	if a.reasoning != "" {
		for _, w := range splitWords(a.reasoning) {
			out = append(out, fmt.Sprintf(`"delta":{%s:%s}`, q(reasoningField), q(w)))
		}
	}
	for _, w := range splitWords(a.content) {
		out = append(out, `"delta":{"content":`+q(w)+`}`)
	}
	for i, c := range a.calls {
		f := c["function"].(map[string]any)
		args := f["arguments"].(string)
		if a.textCalls {
			out = append(out, `"delta":{"content":`+q(fmt.Sprintf("<tool_call>\n{\"name\": %q, \"arguments\": %s}\n</tool_call>", f["name"], args))+`}`)
			continue
		}
		out = append(out, fmt.Sprintf(`"delta":{"tool_calls":[{"id":%s,"type":"function","index":%d,"function":{"name":%s}}]}`, q(c["id"].(string)), i, q(f["name"].(string))))
		third := len(args) / 3
		for _, piece := range []string{args[:third], args[third : 2*third], args[2*third:]} {
			out = append(out, fmt.Sprintf(`"delta":{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]}`, i, q(piece)))
		}
	}
	if len(out) == 0 {
		out = append(out, `"delta":{"content":""}`)
	}
	return out
}

// splitWords splits s into pieces that keep their leading spaces.
func splitWords(s string) []string {
	var out []string
	start := 0
	for i := 1; i < len(s); i++ {
		if s[i] == ' ' && s[i-1] != ' ' {
			out = append(out, s[start:i])
			start = i
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// argsFor builds arguments that satisfy a tool's schema (or miss a required
// property when bad is set).
func argsFor(schema map[string]any, bad bool) string {
	props, _ := schema["properties"].(map[string]any)
	req, _ := schema["required"].([]any)
	out := map[string]any{}
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p, _ := props[name].(map[string]any)
		switch {
		case p["enum"] != nil:
			out[name] = p["enum"].([]any)[len(p["enum"].([]any))-1]
		case p["type"] == "string":
			out[name] = map[string]string{"city": "Dallas", "state": "TX"}[name]
			if out[name] == "" {
				out[name] = "x"
			}
		case p["type"] == "integer", p["type"] == "number":
			out[name] = 1
		case p["type"] == "boolean":
			out[name] = true
		default:
			out[name] = "x"
		}
	}
	if bad && len(req) > 0 {
		delete(out, req[0].(string))
	}
	b, _ := json.Marshal(out)
	return string(b)
}
