package rehearsal

import (
	"encoding/json"
	"fmt"
	"strings"
)

// What the rehearsal "model" writes. A request becomes a script: the token
// ids the model would generate, each tagged with what the server's parsers
// make of it (content, reasoning, a tool-call fragment, or nothing the client
// sees). Streaming and non-streaming answers are both rendered from it, so
// they always agree.

type tokKind uint8

const (
	kContent   tokKind = iota // delta.content / choices[].text
	kReasoning                // delta.reasoning_content (and delta.reasoning in vLLM 0.16)
	kHidden                   // eaten by a parser: counted, not shown
	kToolHead                 // completes the tool name: the id/name delta
	kToolArgs                 // a fragment of the arguments
	kEOS                      // the end-of-sequence token: counted, shows nothing
)

type piece struct {
	id   int
	kind tokKind
	text string
}

type script struct {
	toks    []piece
	natural string // finish_reason when the script runs to its end
	call    *plannedCall
	// pad filler tokens follow toks (ignore_eos, min_tokens); they are made
	// on the fly so that a long answer costs no memory per token.
	pad    int
	filler []piece
	// eos: the answer ends with the end-of-sequence token, as one the model
	// stops by itself does. Both engines count it in completion_tokens and
	// send the finish_reason with it, in a chunk of its own.
	eos bool
}

// length is the number of tokens the answer has.
func (s *script) length() int {
	n := len(s.toks) + s.pad
	if s.eos {
		n++
	}
	return n
}

// eosID is the end-of-sequence token's id (Qwen's <|im_end|>; any id works:
// the toy tokenizer never produces it from text).
const eosID = 151645

// at returns token i of the answer.
func (s *script) at(i int) piece {
	if i < len(s.toks) {
		return s.toks[i]
	}
	if s.eos && i == s.length()-1 {
		return piece{id: eosID, kind: kEOS}
	}
	return s.filler[(i-len(s.toks))%len(s.filler)]
}

type plannedCall struct {
	id, name, args string
	// first and last index of the call's tokens in toks; a truncated call
	// is not parsed (the text stays in content) in a non-streamed answer.
	first, last int
	raw         string
}

// fillerText is what the model "says": cycled token by token.
const fillerText = " the sim is up and it is ok to go on as we do so"

// thinkText is what a reasoning model "thinks" before answering.
const thinkText = " ok the user asks for this so we say that"

// toolChoice is the parsed tool_choice field.
type toolChoice struct {
	mode  string // "auto", "none", "required", "named"
	named string
}

func parseToolChoice(raw json.RawMessage, haveTools bool) (toolChoice, error) {
	if len(raw) == 0 || string(raw) == "null" {
		if haveTools {
			return toolChoice{mode: "auto"}, nil
		}
		return toolChoice{mode: "none"}, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "auto", "none", "required":
			return toolChoice{mode: s}, nil
		}
		return toolChoice{}, fmt.Errorf("tool_choice must be 'auto', 'none', 'required' or a named function, got %q", s)
	}
	var named struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &named); err != nil || named.Function.Name == "" {
		return toolChoice{}, fmt.Errorf("tool_choice: expected a string or {\"type\": \"function\", \"function\": {\"name\": ...}}")
	}
	return toolChoice{mode: "named", named: named.Function.Name}, nil
}

// thinks reports whether the model writes <think>...</think> for this request.
func (h *Handler) thinks(kwargs map[string]any) bool {
	if !h.opts.Thinking {
		return false
	}
	if v, ok := kwargs["enable_thinking"].(bool); ok {
		return v
	}
	if v, ok := kwargs["thinking"].(bool); ok {
		return v
	}
	return true
}

// reasoningSeparated reports whether the server's reasoning parser moves the
// thinking out of content.
func (h *Handler) reasoningSeparated(req *chatRequest) bool {
	o := h.opts
	if o.ReasoningParser == "" || !readsThink(o.Kind, o.ReasoningParser) {
		return false
	}
	if o.Kind == KindVLLM && o.needsEnableReasoning() && !o.EnableReasoning {
		return false
	}
	if o.Kind == KindSGLang && req.SeparateReasoning != nil && !*req.SeparateReasoning {
		return false
	}
	return true
}

// thinkParsers are the reasoning parsers that read <think>...</think>.
var thinkParsers = map[string][]string{
	KindVLLM: {"deepseek_r1", "qwen3", "glm45", "ernie45", "hunyuan_a13b", "minimax_m2",
		"holo2", "olmo3", "seed_oss", "step3", "step3p5", "kimi_k2", "deepseek_v3"},
	KindSGLang: {"deepseek-r1", "qwen3", "qwen3-thinking", "glm45", "kimi", "kimi_k2",
		"step3", "deepseek-v3", "minimax", "minimax-append-think"},
}

func readsThink(kind, parser string) bool {
	for _, p := range thinkParsers[kind] {
		if p == parser {
			return true
		}
	}
	return false
}

func (s *script) add(t *Tokenizer, text string, kind tokKind) {
	for _, id := range t.Encode(text) {
		s.toks = append(s.toks, piece{id: id, kind: kind, text: t.Piece(id)})
	}
}

func (s *script) addThinking(h *Handler, separated bool) {
	if !separated {
		s.add(h.tok, "<think>\n"+thinkText+"\n</think>\n\n", kContent)
		return
	}
	s.add(h.tok, "<think>", kHidden)
	s.add(h.tok, "\n"+thinkText+"\n", kReasoning)
	s.add(h.tok, "</think>", kHidden)
	s.add(h.tok, "\n\n", kContent)
}

// chatScript plans the answer to a chat request (already validated).
func (h *Handler) chatScript(req *chatRequest, choice toolChoice) (*script, error) {
	s := &script{natural: "stop", filler: h.filler}
	if h.thinks(req.ChatTemplateKwargs) {
		s.addThinking(h, h.reasoningSeparated(req))
	}
	last := req.Messages[len(req.Messages)-1]
	user := lastUserText(req.Messages)
	switch {
	case last.Role == "tool":
		s.add(h.tok, " The tool returned: "+last.text(), kContent)
	case len(req.Tools) > 0 && choice.mode != "none":
		t, err := pickTool(req.Tools, user, choice.named)
		if err != nil {
			return nil, err
		}
		args := generateArgs(t.Function.Parameters, user)
		raw := renderToolCall(toolFormat(h.opts.ToolFormat), t.Function.Name, args)
		// "required" and named choices are decoded against the schema by the
		// engine's structured-output backend, so they parse with any parser;
		// "auto" relies on the --tool-call-parser reading the model's format.
		structured := choice.mode == "required" || choice.mode == "named" ||
			(h.opts.ToolCallParser != "" && parserReads(h.opts.Kind, h.opts.ToolCallParser, toolFormat(h.opts.ToolFormat)))
		if !structured {
			s.add(h.tok, raw, kContent)
			break
		}
		s.addCall(h, t.Function.Name, args.pyJSON(), raw)
		s.natural = "tool_calls"
		if choice.mode == "named" && h.opts.Kind == KindVLLM {
			s.natural = "stop" // vLLM finishes named-function calls with "stop"
		}
	default:
		s.pad = h.opts.OutputLen
	}
	return s, nil
}

// addCall appends the call's raw text tokens, tagged so that the name comes
// in one delta and the arguments in fragments spread over the later tokens.
func (s *script) addCall(h *Handler, name, args, raw string) {
	ids := h.tok.Encode(raw)
	first := len(s.toks)
	head := 0
	if i := strings.Index(raw, name); i >= 0 {
		end, off := i+len(name), 0
		for j, id := range ids {
			off += len(h.tok.Piece(id))
			if off >= end {
				head = j
				break
			}
		}
	}
	frags := splitEven(args, len(ids)-head-1)
	for j, id := range ids {
		p := piece{id: id, kind: kHidden, text: h.tok.Piece(id)}
		switch {
		case j == head:
			p.kind = kToolHead
			if len(frags) == 0 {
				p.text = args
			} else {
				p.text = ""
			}
		case j > head:
			p.kind = kToolArgs
			p.text = frags[j-head-1]
		}
		s.toks = append(s.toks, p)
	}
	s.call = &plannedCall{id: h.toolCallID(), name: name, args: args, first: first, last: len(s.toks) - 1, raw: raw}
}

// splitEven cuts s into n pieces of nearly equal length (on rune boundaries);
// some are empty when s is shorter than n.
func splitEven(s string, n int) []string {
	if n <= 0 {
		return nil
	}
	r := []rune(s)
	out := make([]string, n)
	for i := 0; i < n; i++ {
		out[i] = string(r[i*len(r)/n : (i+1)*len(r)/n])
	}
	return out
}

func lastUserText(msgs []chatMessage) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			return msgs[i].text()
		}
	}
	return ""
}

// completionScript plans a /v1/completions answer: plain text.
func (h *Handler) completionScript() *script {
	return &script{natural: "stop", pad: h.opts.OutputLen, filler: h.filler}
}

// shape cuts or pads the script to the request's length controls and
// returns the finish reason (s.length() is then the token count):
//   - ignore_eos: exactly max_tokens ("length");
//   - otherwise the natural text, raised to min_tokens, then the EOS token
//     ("stop"), unless max_tokens comes first ("length", no EOS).
//
// A tool call that was completed keeps finish_reason "tool_calls", as vLLM
// reports whenever its parser found calls.
func (h *Handler) shape(s *script, maxTokens, minTokens int, ignoreEOS bool) string {
	text, finish := s.length(), s.natural
	eos := true
	switch {
	case ignoreEOS:
		text, finish, eos = maxTokens, "length", false
	case minTokens > text:
		// EOS is suppressed until min_tokens tokens exist; then the model stops.
		text, finish = minTokens, "stop"
	}
	if eos && text+1 > maxTokens {
		text, finish, eos = maxTokens, "length", false
	}
	if text > maxTokens {
		text, finish = maxTokens, "length"
	}
	s.filler = h.filler
	if text > len(s.toks) {
		s.pad = text - len(s.toks)
	} else {
		s.toks, s.pad = s.toks[:text], 0
	}
	s.eos = eos
	if s.call != nil && s.natural == "tool_calls" && text > s.call.last {
		finish = "tool_calls"
	}
	return finish
}

// renderChat is the prompt the rehearsal chat template produces (ChatML, as
// Qwen models use): it decides usage.prompt_tokens for chat requests.
func renderChat(msgs []chatMessage, tools []tool, addGenerationPrompt, thinkingOff bool) string {
	var b strings.Builder
	sysDone := false
	if len(tools) > 0 {
		b.WriteString("<|im_start|>system\n")
		if len(msgs) > 0 && msgs[0].Role == "system" {
			b.WriteString(msgs[0].text())
			b.WriteString("\n\n")
			sysDone = true
		}
		b.WriteString("# Tools\n\nYou may call one or more functions to assist with the user query.\n<tools>\n")
		for _, t := range tools {
			raw, _ := json.Marshal(t)
			b.Write(raw)
			b.WriteByte('\n')
		}
		b.WriteString("</tools><|im_end|>\n")
	}
	for i, m := range msgs {
		if i == 0 && sysDone {
			continue
		}
		switch m.Role {
		case "tool":
			b.WriteString("<|im_start|>user\n<tool_response>\n" + m.text() + "\n</tool_response><|im_end|>\n")
		default:
			b.WriteString("<|im_start|>" + m.Role + "\n" + m.text())
			for _, c := range m.ToolCalls {
				b.WriteString("\n<tool_call>\n{\"name\": " + pyQuote(c.Function.Name) + ", \"arguments\": " + c.Function.Arguments + "}\n</tool_call>")
			}
			b.WriteString("<|im_end|>\n")
		}
	}
	if addGenerationPrompt {
		b.WriteString("<|im_start|>assistant\n")
		if thinkingOff {
			b.WriteString("<think>\n\n</think>\n\n")
		}
	}
	return b.String()
}
