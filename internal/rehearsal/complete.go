package rehearsal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

const maxBody = 64 << 20

// readBody decodes the request body into v, answering 400 itself when it
// cannot.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request, v any) bool {
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		h.fail(w, http.StatusBadRequest, err.Error())
		return false
	}
	if err := json.Unmarshal(raw, v); err != nil {
		h.fail(w, http.StatusBadRequest, fmt.Sprintf("invalid JSON body: %v", err))
		return false
	}
	return true
}

// checkModel: vLLM answers 404 for a model name it does not serve; SGLang
// serves whatever name the request carries.
func (h *Handler) checkModel(w http.ResponseWriter, model string) bool {
	if h.opts.Kind != KindVLLM || model == "" {
		return true
	}
	for _, n := range h.opts.ServedNames {
		if n == model {
			return true
		}
	}
	h.fail(w, http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist.", model))
	return false
}

// lengthError is the engine's 400 for a request that does not fit max_model_len.
func (h *Handler) lengthError(prompt, maxTokens int, explicit bool) string {
	L := h.opts.MaxModelLen
	switch {
	case h.opts.Kind == KindSGLang && prompt >= L:
		return fmt.Sprintf("The input (%d tokens) is longer than the model's context length (%d tokens).", prompt, L)
	case h.opts.Kind == KindSGLang:
		return fmt.Sprintf("Requested token count exceeds the model's maximum context length of %d tokens. "+
			"You requested a total of %d tokens: %d tokens from the input messages and %d tokens for the completion. "+
			"Please reduce the number of tokens in the input messages or the completion to fit within the limit.",
			L, prompt+maxTokens, prompt, maxTokens)
	case versionLess(h.opts.Version, "0.10") && (prompt >= L || !explicit):
		return fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens in the messages, "+
			"Please reduce the length of the messages.", L, prompt)
	case versionLess(h.opts.Version, "0.10"):
		return fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens "+
			"(%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
			L, prompt+maxTokens, prompt, maxTokens)
	case prompt >= L || !explicit:
		return fmt.Sprintf("This model's maximum context length is %d tokens. However, your request has %d input tokens. "+
			"Please reduce the length of the input messages.", L, prompt)
	default:
		return fmt.Sprintf("'max_tokens' or 'max_completion_tokens' is too large: %d. This model's maximum context length "+
			"is %d tokens and your request has %d input tokens (%d > %d - %d).", maxTokens, L, prompt, maxTokens, L, prompt)
	}
}

// maxSeqsPerRequest bounds n × prompts: each sequence is written on every step.
const maxSeqsPerRequest = 1024

// choices reads n and checks the number of sequences the request makes.
func (h *Handler) choices(w http.ResponseWriter, n *int, prompts int) (int, bool) {
	c := 1
	if n != nil {
		c = *n
	}
	if c < 1 {
		h.fail(w, http.StatusBadRequest, fmt.Sprintf("n must be at least 1, got %d.", c))
		return 0, false
	}
	if c*prompts > maxSeqsPerRequest {
		h.fail(w, http.StatusBadRequest, fmt.Sprintf("rehearsal: %d sequences in one request (n × prompts); the rehearsal engine takes at most %d", c*prompts, maxSeqsPerRequest))
		return 0, false
	}
	return c, true
}

// checkStreamOptions is vLLM's request validator: stream_options (a
// non-empty object: Python's truthiness) without stream=true is a 400.
// SGLang has no such check (protocol.py declares the field and nothing
// reads it without stream), so it answers normally.
func (h *Handler) checkStreamOptions(w http.ResponseWriter, stream bool, o *streamOptions) bool {
	if h.opts.Kind != KindVLLM || stream || o == nil || o.keys == 0 {
		return true
	}
	h.fail(w, http.StatusBadRequest, "Stream options can only be defined when `stream=True`.")
	return false
}

// checkMinTokens is vLLM's check of min_tokens against max_tokens.
func (h *Handler) checkMinTokens(w http.ResponseWriter, minTokens, maxTokens int) bool {
	switch {
	case minTokens < 0:
		h.fail(w, http.StatusBadRequest, fmt.Sprintf("min_tokens must be greater than or equal to 0, got %d.", minTokens))
		return false
	case minTokens > maxTokens:
		h.fail(w, http.StatusBadRequest, fmt.Sprintf("min_tokens must be less than or equal to max_tokens=%d, got %d.", maxTokens, minTokens))
		return false
	}
	return true
}

// resolveMaxTokens applies the default (the rest of the context) and checks the limits.
func (h *Handler) resolveMaxTokens(w http.ResponseWriter, prompt int, requested *int, def int) (int, bool) {
	if requested != nil && *requested < 1 {
		h.fail(w, http.StatusBadRequest, fmt.Sprintf("max_tokens must be at least 1, got %d.", *requested))
		return 0, false
	}
	if prompt >= h.opts.MaxModelLen {
		h.fail(w, http.StatusBadRequest, h.lengthError(prompt, 0, false))
		return 0, false
	}
	maxTokens := h.opts.MaxModelLen - prompt
	if def > 0 {
		maxTokens = min(def, maxTokens)
	}
	if requested != nil {
		maxTokens = *requested
		if prompt+maxTokens > h.opts.MaxModelLen {
			h.fail(w, http.StatusBadRequest, h.lengthError(prompt, maxTokens, true))
			return 0, false
		}
	}
	return maxTokens, true
}

func (h *Handler) chat(w http.ResponseWriter, r *http.Request) {
	arrival := time.Now()
	var req chatRequest
	if !h.serving(w) || !h.readBody(w, r, &req) || !h.checkModel(w, req.Model) {
		return
	}
	if len(req.Messages) == 0 {
		h.fail(w, http.StatusBadRequest, "messages: at least one message is required")
		return
	}
	if !h.checkStreamOptions(w, req.Stream, req.StreamOptions) {
		return
	}
	choice, err := parseToolChoice(req.ToolChoice, len(req.Tools) > 0)
	if err != nil {
		h.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	if choice.mode == "auto" && h.opts.Kind == KindVLLM && len(req.Tools) > 0 &&
		!(h.opts.EnableAutoToolChoice && h.opts.ToolCallParser != "") {
		h.fail(w, http.StatusBadRequest, `"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set`)
		return
	}
	if (choice.mode == "required" || choice.mode == "named") && len(req.Tools) == 0 {
		h.fail(w, http.StatusBadRequest, "When using `tool_choice`, `tools` must be set.")
		return
	}
	addGen := req.AddGenerationPrompt == nil || *req.AddGenerationPrompt
	thinkingOff := h.opts.Thinking && !h.thinks(req.ChatTemplateKwargs)
	prompt := h.tok.Count(renderChat(req.Messages, req.Tools, addGen, thinkingOff))
	requested := req.MaxCompletionTokens
	if requested == nil {
		requested = req.MaxTokens
	}
	maxTokens, ok := h.resolveMaxTokens(w, prompt, requested, 0)
	if !ok || !h.checkMinTokens(w, req.MinTokens, maxTokens) {
		return
	}
	s, err := h.chatScript(&req, choice)
	if err != nil {
		h.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	finish := h.shape(s, maxTokens, req.MinTokens, req.IgnoreEOS)
	n, ok := h.choices(w, req.N, 1)
	if !ok {
		return
	}
	g := &gen{h: h, id: "chatcmpl-" + randHex(16), created: time.Now().Unix(), model: h.modelName(req.Model),
		chat: true, prompts: []int{prompt}, n: n, s: s, finish: finish, call: s.call,
		maxTokens: maxTokens, failAfter: injectedStreamError(r), arrival: arrival}
	g.respond(w, r, req.Stream, req.StreamOptions)
}

func (h *Handler) modelName(req string) string {
	if req != "" {
		return req
	}
	return h.opts.servedName()
}

// serving answers 503/500 while the engine is not serving requests.
func (h *Handler) serving(w http.ResponseWriter) bool {
	switch h.State() {
	case StateDead:
		h.fail(w, http.StatusInternalServerError, engineDeadMessage)
		return false
	case StateStopping:
		h.fail(w, http.StatusServiceUnavailable, "The server is shutting down.")
		return false
	}
	return true
}

const engineDeadMessage = "EngineCore encountered an issue. See stack trace (above) for the root cause."

// injectedStreamError reads the X-Rehearsal-Fail header: "stream_error_after=N"
// ends the stream with an error event after N tokens (for gate tests).
func injectedStreamError(r *http.Request) int {
	v, ok := strings.CutPrefix(r.Header.Get("X-Rehearsal-Fail"), "stream_error_after=")
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// promptsOf reads /v1/completions' prompt: a string, a list of strings, a
// list of token ids, or a list of such lists.
func (h *Handler) promptsOf(raw json.RawMessage) ([]int, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []int{h.tok.Count(s)}, nil
	}
	var ids []int
	if json.Unmarshal(raw, &ids) == nil && len(ids) > 0 {
		return []int{len(ids)}, nil
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil && len(list) > 0 {
		out := make([]int, len(list))
		for i, p := range list {
			out[i] = h.tok.Count(p)
		}
		return out, nil
	}
	var lists [][]int
	if json.Unmarshal(raw, &lists) == nil && len(lists) > 0 {
		out := make([]int, len(lists))
		for i, p := range lists {
			out[i] = len(p)
		}
		return out, nil
	}
	return nil, errors.New("prompt must be a string, a list of strings, a list of token ids or a list of lists of token ids")
}

func (h *Handler) completions(w http.ResponseWriter, r *http.Request) {
	arrival := time.Now()
	var req completionRequest
	if !h.serving(w) || !h.readBody(w, r, &req) || !h.checkModel(w, req.Model) {
		return
	}
	if !h.checkStreamOptions(w, req.Stream, req.StreamOptions) {
		return
	}
	prompts, err := h.promptsOf(req.Prompt)
	if err != nil {
		h.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	maxTokens := 0
	for _, p := range prompts {
		// OpenAI's (and both engines') completions default is 16 tokens.
		m, ok := h.resolveMaxTokens(w, p, req.MaxTokens, 16)
		if !ok {
			return
		}
		maxTokens = m
	}
	if !h.checkMinTokens(w, req.MinTokens, maxTokens) {
		return
	}
	s := h.completionScript()
	finish := h.shape(s, maxTokens, req.MinTokens, req.IgnoreEOS)
	n, ok := h.choices(w, req.N, len(prompts))
	if !ok {
		return
	}
	g := &gen{h: h, id: "cmpl-" + randHex(16), created: time.Now().Unix(), model: h.modelName(req.Model),
		prompts: prompts, n: n, s: s, finish: finish, maxTokens: maxTokens, failAfter: injectedStreamError(r), arrival: arrival}
	g.respond(w, r, req.Stream, req.StreamOptions)
}

func (h *Handler) tokenize(w http.ResponseWriter, r *http.Request) {
	var req tokenizeRequest
	if !h.readBody(w, r, &req) {
		return
	}
	var text string
	switch {
	case len(req.Messages) > 0:
		addGen := req.AddGenerationPrompt == nil || *req.AddGenerationPrompt
		text = renderChat(req.Messages, req.Tools, addGen, false)
	case len(req.Prompt) > 0:
		_ = json.Unmarshal(req.Prompt, &text)
	default:
		_ = json.Unmarshal(req.Text, &text)
	}
	ids := h.tok.Encode(text)
	writeJSON(w, http.StatusOK, map[string]any{"count": len(ids), "max_model_len": h.opts.MaxModelLen,
		"tokens": ids, "token_strs": nil})
}

func (h *Handler) detokenize(w http.ResponseWriter, r *http.Request) {
	var req detokenizeRequest
	if !h.readBody(w, r, &req) {
		return
	}
	for _, id := range req.Tokens {
		if id < 0 || id >= h.tok.VocabSize() {
			h.fail(w, http.StatusBadRequest, fmt.Sprintf("Token id %d is out of vocabulary", id))
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"prompt": h.tok.Decode(req.Tokens)})
}

// gen is one request being generated.
type gen struct {
	h          *Handler
	id, model  string
	created    int64
	chat       bool
	prompts    []int // prompt tokens of each prompt
	n          int   // choices per prompt
	s          *script
	finish     string
	call       *plannedCall
	maxTokens  int
	usage      bool
	continuous bool
	failAfter  int       // tokens before an injected stream error; -1 none
	arrival    time.Time // when the request came in: TTFT counts from here

	buf []byte
}

// respond answers as an event stream or as one JSON body, as the request asked.
func (g *gen) respond(w http.ResponseWriter, r *http.Request, stream bool, opts *streamOptions) {
	if opts != nil {
		g.usage, g.continuous = opts.IncludeUsage, opts.ContinuousUsageStats
	}
	if stream {
		g.stream(w, r)
	} else {
		g.complete(w, r)
	}
}

func (g *gen) seqs() int { return len(g.prompts) * g.n }

// promptTotal is the prompt tokens the engine processes: every prompt once
// per sequence (n copies).
func (g *gen) promptTotal() int { return g.promptOnce() * g.n }

// promptOnce is usage.prompt_tokens: each prompt counted once whatever n is,
// as both engines report it.
func (g *gen) promptOnce() int {
	t := 0
	for _, p := range g.prompts {
		t += p
	}
	return t
}

// run paces the tokens: admission (maybe queued), the first token after the
// TTFT, then one token per interval, each at an absolute deadline. emit is
// called once per step; it returns false to stop. run reports whether every
// step ran and why not.
func (g *gen) run(ctx context.Context, emit func(step int) bool) (done bool, dead bool) {
	h, m := g.h, g.h.met
	arrival := g.arrival
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopDead := context.AfterFunc(h.dead, cancel)
	defer stopDead()
	seqs, queued, ok := h.sched.admit(ctx, g.seqs())
	if !ok {
		m.aborted.Add(1)
		return false, h.dead.Err() != nil
	}
	defer h.sched.release(seqs)
	admitted := time.Now()
	m.queue.observe(admitted.Sub(arrival).Seconds())
	// Parsing the request is not queueing: a request admitted at once gets
	// its first token TTFT after it arrived; a queued one TTFT after admission.
	base := admitted
	if !queued {
		base = arrival
	}
	m.paramsN.observe(float64(g.n))
	m.paramsMax.observe(float64(g.maxTokens))
	m.maxGenHist.observe(float64(g.maxTokens))
	prompt := g.promptTotal()
	m.promptTokens.Add(int64(prompt))
	m.promptHist.observe(float64(prompt))
	m.runningTokens.Add(int64(prompt))
	emitted := 0
	defer func() { m.runningTokens.Add(-int64(prompt + emitted*g.seqs())) }()

	var p pacer
	defer p.stop()
	deadline := base.Add(h.sched.firstTokenDelay(prompt / max(g.seqs(), 1)))
	var first, prev time.Time
	for step := range g.s.length() {
		if step > 0 {
			interval := h.sched.nextInterval()
			if late := time.Since(deadline); late > interval {
				// The host stalled us for more than a whole interval: start
				// the schedule again from now rather than pay the debt back
				// with a burst of tokens, as a stalled engine would.
				deadline = time.Now()
			}
			deadline = deadline.Add(interval)
		}
		if !p.until(ctx, deadline) {
			m.aborted.Add(1)
			return false, h.dead.Err() != nil
		}
		now := time.Now()
		if step == 0 {
			first = now
			m.ttft.observe(now.Sub(arrival).Seconds())
			m.prefill.observe(now.Sub(admitted).Seconds())
		} else {
			m.itl.observe(now.Sub(prev).Seconds())
		}
		prev = now
		m.genTokens.Add(int64(g.seqs()))
		m.runningTokens.Add(int64(g.seqs()))
		stepTokens := g.seqs()
		if step == 0 {
			stepTokens += prompt // the prefill step also processes the prompt
		}
		m.steps.add(now, g, stepTokens)
		emitted++
		if !emit(step) {
			m.aborted.Add(1)
			return false, false
		}
		if h.emitHook != nil {
			h.emitHook(g.id, step, deadline, time.Now())
		}
	}
	end := time.Now()
	m.e2e.observe(end.Sub(arrival).Seconds())
	m.inference.observe(end.Sub(admitted).Seconds())
	m.decode.observe(end.Sub(first).Seconds())
	if n := g.s.length(); n > 1 {
		m.tpot.observe(end.Sub(first).Seconds() / float64(n-1))
	}
	m.genHist.observe(float64(g.s.length()))
	m.requests.Add(1)
	reason := g.finish
	if reason == "tool_calls" {
		reason = "stop"
	}
	m.finishedCount(reason).Add(int64(g.seqs()))
	return true, false
}

func (g *gen) usageOf(completion int) usage {
	p := g.promptOnce()
	return usage{PromptTokens: p, CompletionTokens: completion, TotalTokens: p + completion}
}

func (g *gen) stream(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush() // both engines send the headers before the first token
	var writeErr error
	write := func(b []byte) bool {
		if writeErr == nil {
			_, writeErr = w.Write(b)
		}
		return writeErr == nil
	}
	injected := false
	done, dead := g.run(r.Context(), func(step int) bool {
		if g.failAfter >= 0 && step >= g.failAfter {
			injected = true
			write(g.streamError(g.buf[:0], http.StatusInternalServerError, "rehearsal: injected stream error (X-Rehearsal-Fail)"))
			return false
		}
		g.buf = g.buf[:0]
		for c := 0; c < g.seqs(); c++ {
			g.buf = g.appendStep(g.buf, c, step)
		}
		return write(g.buf) && rc.Flush() == nil
	})
	switch {
	case dead:
		// The engine died mid-stream: an error event, then [DONE], as vLLM's
		// create_streaming_error_response does.
		write(g.streamError(g.buf[:0], http.StatusInternalServerError, engineDeadMessage))
	case injected:
	case !done:
		return // the client went away
	case g.usage:
		b := g.chunkPrefix(g.buf[:0])
		b = append(b, `[],"usage":`...)
		b = appendUsage(b, g.usageOf(g.s.length()*g.seqs()))
		write(sseData(nil, append(b, '}')))
	}
	write(sseDone)
	_ = rc.Flush()
}

func (g *gen) streamError(b []byte, status int, msg string) []byte {
	raw, _ := json.Marshal(map[string]any{"error": g.h.errorBody(status, errorType(status), msg)})
	if g.h.opts.nestedErrors() {
		raw, _ = json.Marshal(g.h.errorBody(status, errorType(status), msg))
	}
	return sseData(b, raw)
}

// chunkPrefix writes `{"id":...,"model":...,"choices":` of a chunk.
func (g *gen) chunkPrefix(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, g.id)
	if g.chat {
		b = append(b, `,"object":"chat.completion.chunk","created":`...)
	} else {
		b = append(b, `,"object":"text_completion","created":`...)
	}
	b = strconv.AppendInt(b, g.created, 10)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, g.model)
	return append(b, `,"choices":`...)
}

// appendStep writes the SSE event(s) of one token of choice c, or nothing
// when a parser swallows the token (unless it is the last: the finish_reason
// must still be sent).
func (g *gen) appendStep(b []byte, c, step int) []byte {
	p := g.s.at(step)
	last := step == g.s.length()-1
	sglang := g.h.opts.Kind == KindSGLang
	var delta []byte
	if g.chat {
		delta = g.delta(p)
		if step == 0 {
			// The role comes with the first token, as both engines send it
			// once the first output exists.
			b = g.event(b, c, []byte(`{"role":"assistant","content":""}`), "", step)
		}
	} else if p.kind != kEOS || !sglang {
		delta = appendJSONString(nil, p.text)
	}
	finish := ""
	if last && !sglang {
		finish = g.finish
	}
	if delta != nil || finish != "" {
		if delta == nil {
			delta = []byte(`{}`)
		}
		b = g.event(b, c, delta, finish, step)
	}
	if last && sglang {
		empty := []byte(`{}`)
		if !g.chat {
			empty = []byte(`""`)
		}
		b = g.event(b, c, empty, g.finish, step)
	}
	return b
}

// delta is the chat delta object of one token, nil when nothing shows.
func (g *gen) delta(p piece) []byte {
	var d []byte
	switch p.kind {
	case kContent:
		d = append([]byte(`{"content":`), appendJSONString(nil, p.text)...)
	case kReasoning:
		d = []byte(`{`)
		if g.h.opts.Kind == KindVLLM && !versionLess(g.h.opts.Version, "0.10") {
			d = append(d, `"reasoning":`...)
			d = appendJSONString(d, p.text)
			d = append(d, ',')
		}
		d = append(d, `"reasoning_content":`...)
		d = appendJSONString(d, p.text)
	case kToolHead:
		d = append([]byte(`{"tool_calls":[{"index":0,"id":`), appendJSONString(nil, g.call.id)...)
		d = append(d, `,"type":"function","function":{"name":`...)
		d = appendJSONString(d, g.call.name)
		d = append(d, `,"arguments":`...)
		d = appendJSONString(d, p.text)
		d = append(d, `}}]`...)
	case kEOS:
		// vLLM: the EOS token's chunk carries the finish_reason. Its text is
		// empty: {"content": ""}, or {} once a parser has taken the output as
		// a tool call (vLLM substitutes an empty DeltaMessage). SGLang sends
		// nothing for it and a separate finish chunk.
		if g.h.opts.Kind == KindSGLang {
			return nil
		}
		if g.call != nil {
			return []byte(`{}`)
		}
		return []byte(`{"content":""}`)
	case kToolArgs:
		if p.text == "" {
			return nil
		}
		d = append([]byte(`{"tool_calls":[{"index":0,"function":{"arguments":`), appendJSONString(nil, p.text)...)
		d = append(d, `}}]`...)
	default:
		return nil
	}
	return append(d, '}')
}

func (g *gen) event(b []byte, c int, delta []byte, finish string, step int) []byte {
	body := g.chunkPrefix(nil)
	body = append(body, `[{"index":`...)
	body = strconv.AppendInt(body, int64(c), 10)
	if g.chat {
		body = append(body, `,"delta":`...)
	} else {
		body = append(body, `,"text":`...)
	}
	body = append(body, delta...)
	body = append(body, `,"logprobs":null,"finish_reason":`...)
	if finish == "" {
		body = append(body, `null`...)
	} else {
		body = appendJSONString(body, finish)
	}
	if g.h.opts.Kind == KindVLLM && (finish != "" || !g.chat) {
		body = append(body, `,"stop_reason":null`...)
	}
	if g.h.opts.Kind == KindSGLang && finish != "" {
		body = append(body, `,"matched_stop":null`...)
	}
	body = append(body, `}]`...)
	if g.continuous {
		body = append(body, `,"usage":`...)
		body = appendUsage(body, g.usageOf((step+1)*g.seqs()))
	}
	body = append(body, '}')
	return sseData(b, body)
}

// complete answers a non-streamed request once the last token's time has come.
func (g *gen) complete(w http.ResponseWriter, r *http.Request) {
	done, dead := g.run(r.Context(), func(int) bool { return true })
	if dead {
		g.h.fail(w, http.StatusInternalServerError, engineDeadMessage)
		return
	}
	if !done {
		return
	}
	callDone := g.call != nil && g.s.length() > g.call.last
	var content, reasoning strings.Builder
	for i := range g.s.length() {
		p := g.s.at(i)
		switch {
		case p.kind == kContent:
			content.WriteString(p.text)
		case p.kind == kReasoning:
			reasoning.WriteString(p.text)
		case g.call != nil && i >= g.call.first && !callDone:
			// An unfinished call does not parse: its text stays in content.
			content.WriteString(g.h.tok.Piece(p.id))
		}
	}
	choices := make([]map[string]any, 0, g.seqs())
	for c := 0; c < g.seqs(); c++ {
		ch := map[string]any{"index": c, "logprobs": nil, "finish_reason": g.finish}
		if g.h.opts.Kind == KindVLLM {
			ch["stop_reason"] = nil
		} else {
			ch["matched_stop"] = nil
		}
		if !g.chat {
			ch["text"] = content.String()
			choices = append(choices, ch)
			continue
		}
		msg := map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{}}
		if content.Len() > 0 || !callDone {
			msg["content"] = content.String()
		}
		if callDone {
			msg["tool_calls"] = []map[string]any{{"id": g.call.id, "type": "function",
				"function": map[string]any{"name": g.call.name, "arguments": g.call.args}}}
		}
		var rc any
		if reasoning.Len() > 0 {
			rc = reasoning.String()
		}
		msg["reasoning_content"] = rc
		if g.h.opts.Kind == KindVLLM && !versionLess(g.h.opts.Version, "0.10") {
			msg["reasoning"] = rc
		}
		ch["message"] = msg
		choices = append(choices, ch)
	}
	object := "text_completion"
	if g.chat {
		object = "chat.completion"
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": g.id, "object": object, "created": g.created,
		"model": g.model, "choices": choices, "usage": g.usageOf(g.s.length() * g.seqs())})
}
