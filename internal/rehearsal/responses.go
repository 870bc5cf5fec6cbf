package rehearsal

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// The Responses API (POST /v1/responses), which vLLM serves from 0.10: text
// in, one assistant message out, streamed as typed events ("event: <type>"
// then "data: {...}", with a sequence_number, no [DONE]). Tools, reasoning
// items, background mode and stored responses are not emulated: a request
// with tools gets vLLM's tool-less answer (the text of the message).

type responsesRequest struct {
	Model           string          `json:"model"`
	Input           json.RawMessage `json:"input"`
	Instructions    string          `json:"instructions"`
	MaxOutputTokens *int            `json:"max_output_tokens"`
	Stream          bool            `json:"stream"`
	Temperature     *float64        `json:"temperature"`
	TopP            *float64        `json:"top_p"`
}

// servesResponses: vLLM from 0.10 mounts /v1/responses.
func (o *ServeOptions) servesResponses() bool {
	return o.Kind == KindVLLM && !versionLess(o.Version, "0.10")
}

// messages turns input (a string or a list of messages whose content is a
// string or input_text parts) into chat messages.
func (r *responsesRequest) messages() ([]chatMessage, bool) {
	var msgs []chatMessage
	if r.Instructions != "" {
		raw, _ := json.Marshal(r.Instructions)
		msgs = append(msgs, chatMessage{Role: "system", Content: raw})
	}
	var s string
	if json.Unmarshal(r.Input, &s) == nil {
		raw, _ := json.Marshal(s)
		return append(msgs, chatMessage{Role: "user", Content: raw}), true
	}
	var items []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(r.Input, &items) != nil || len(items) == 0 {
		return nil, false
	}
	for _, it := range items {
		var parts []struct {
			Type, Text string
		}
		content := it.Content
		if json.Unmarshal(it.Content, &parts) == nil {
			var b strings.Builder
			for _, p := range parts {
				if p.Type == "input_text" || p.Type == "output_text" || p.Type == "text" {
					b.WriteString(p.Text)
				}
			}
			content, _ = json.Marshal(b.String())
		}
		msgs = append(msgs, chatMessage{Role: it.Role, Content: content})
	}
	return msgs, true
}

func (h *Handler) responses(w http.ResponseWriter, r *http.Request) {
	arrival := time.Now()
	var req responsesRequest
	if !h.serving(w) || !h.readBody(w, r, &req) || !h.checkModel(w, req.Model) {
		return
	}
	msgs, ok := req.messages()
	if !ok {
		h.fail(w, http.StatusBadRequest, "input must be a string or a list of messages")
		return
	}
	creq := chatRequest{Model: req.Model, Messages: msgs}
	prompt := h.tok.Count(renderChat(msgs, nil, true, false))
	maxTokens, ok := h.resolveMaxTokens(w, prompt, req.MaxOutputTokens, 0)
	if !ok {
		return
	}
	s, err := h.chatScript(&creq, toolChoice{mode: "none"})
	if err != nil {
		h.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	finish := h.shape(s, maxTokens, 0, false)
	g := &gen{h: h, id: "resp_" + randHex(16), created: time.Now().Unix(), model: h.modelName(req.Model),
		chat: true, prompts: []int{prompt}, n: 1, s: s, finish: finish, maxTokens: maxTokens,
		failAfter: injectedStreamError(r), arrival: arrival}
	rs := &respStream{g: g, msgID: "msg_" + randHex(16), req: &req}
	if req.Stream {
		rs.stream(w, r)
		return
	}
	done, dead := g.run(r.Context(), func(int) bool { return true })
	switch {
	case dead:
		h.fail(w, http.StatusInternalServerError, engineDeadMessage)
	case done:
		writeJSON(w, http.StatusOK, rs.response("completed", rs.text(g.s.length())))
	}
}

type respStream struct {
	g     *gen
	msgID string
	req   *responsesRequest
	seq   int
}

// text is the visible answer of the first n tokens.
func (rs *respStream) text(n int) string {
	var b strings.Builder
	for i := range n {
		if p := rs.g.s.at(i); p.kind == kContent {
			b.WriteString(p.text)
		}
	}
	return b.String()
}

func (rs *respStream) message(text, status string) map[string]any {
	content := []any{}
	if status == "completed" || text != "" {
		content = []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}, "logprobs": nil}}
	}
	return map[string]any{"id": rs.msgID, "type": "message", "role": "assistant", "status": status, "content": content}
}

// response is the Response object; status "in_progress" has no output yet.
func (rs *respStream) response(status, text string) map[string]any {
	g := rs.g
	out := []any{}
	var usage any
	var incomplete any
	if status != "in_progress" {
		if g.finish == "length" {
			status, incomplete = "incomplete", map[string]any{"reason": "max_output_tokens"}
		}
		out = append(out, rs.message(text, "completed"))
		n := g.s.length()
		usage = map[string]any{"input_tokens": g.promptOnce(), "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": n, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": g.promptOnce() + n}
	}
	var instructions any
	if rs.req.Instructions != "" {
		instructions = rs.req.Instructions
	}
	temp, topP := 1.0, 1.0
	if rs.req.Temperature != nil {
		temp = *rs.req.Temperature
	}
	if rs.req.TopP != nil {
		topP = *rs.req.TopP
	}
	return map[string]any{"id": g.id, "object": "response", "created_at": g.created, "model": g.model,
		"status": status, "incomplete_details": incomplete, "instructions": instructions, "metadata": nil,
		"output": out, "parallel_tool_calls": true, "temperature": temp, "top_p": topP, "tool_choice": "auto",
		"tools": []any{}, "background": false, "max_output_tokens": g.maxTokens, "max_tool_calls": nil,
		"previous_response_id": nil, "prompt": nil, "reasoning": nil, "service_tier": "auto", "text": nil,
		"top_logprobs": nil, "truncation": "disabled", "usage": usage, "user": nil}
}

func (rs *respStream) event(typ string, fields map[string]any) []byte {
	fields["type"] = typ
	fields["sequence_number"] = rs.seq
	rs.seq++
	raw, _ := json.Marshal(fields)
	b := append([]byte("event: "+typ+"\n"), "data: "...)
	b = append(b, raw...)
	return append(b, '\n', '\n')
}

func (rs *respStream) stream(w http.ResponseWriter, r *http.Request) {
	g := rs.g
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	var writeErr error
	write := func(b []byte) bool {
		if writeErr == nil {
			_, writeErr = w.Write(b)
		}
		return writeErr == nil
	}
	part := func(text string) map[string]any {
		return map[string]any{"type": "output_text", "text": text, "annotations": []any{}, "logprobs": []any{}}
	}
	loc := func(m map[string]any) map[string]any {
		m["item_id"], m["output_index"], m["content_index"] = rs.msgID, 0, 0
		return m
	}
	write(rs.event("response.created", map[string]any{"response": rs.response("in_progress", "")}))
	write(rs.event("response.in_progress", map[string]any{"response": rs.response("in_progress", "")}))
	_ = rc.Flush()
	started := false
	var text strings.Builder
	done, dead := g.run(r.Context(), func(step int) bool {
		if g.failAfter >= 0 && step >= g.failAfter {
			write(g.streamError(nil, http.StatusInternalServerError, "rehearsal: injected stream error (X-Rehearsal-Fail)"))
			return false
		}
		if !started {
			started = true
			write(rs.event("response.output_item.added", map[string]any{"output_index": 0, "item": rs.message("", "in_progress")}))
			write(rs.event("response.content_part.added", loc(map[string]any{"part": part("")})))
		}
		if p := g.s.at(step); p.kind == kContent {
			text.WriteString(p.text)
			write(rs.event("response.output_text.delta", loc(map[string]any{"delta": p.text, "logprobs": []any{}})))
		}
		return writeErr == nil && rc.Flush() == nil
	})
	switch {
	case dead:
		write(g.streamError(nil, http.StatusInternalServerError, engineDeadMessage))
	case done:
		t := text.String()
		write(rs.event("response.output_text.done", loc(map[string]any{"text": t, "logprobs": []any{}})))
		write(rs.event("response.content_part.done", loc(map[string]any{"part": part(t)})))
		write(rs.event("response.output_item.done", map[string]any{"output_index": 0, "item": rs.message(t, "completed")}))
		write(rs.event("response.completed", map[string]any{"response": rs.response("completed", t)}))
	}
	_ = rc.Flush()
}
