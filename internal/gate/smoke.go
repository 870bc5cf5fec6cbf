package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"
)

// SmokeOptions tune Smoke.
type SmokeOptions struct {
	// Reasoning expects a reasoning parser: the reasoning must come back in
	// reasoning or reasoning_content, apart from the answer.
	Reasoning bool
	// StepTimeout bounds each step (default 2 minutes).
	StepTimeout time.Duration
	// MaxTokens is the budget of each answer (default 512, or 2048 with
	// Reasoning, since thinking spends tokens before the call).
	MaxTokens int
}

// SmokeResult is the outcome of Smoke, one Check per step.
type SmokeResult struct {
	Target Target  `json:"target"`
	OK     bool    `json:"ok"`
	Steps  []Check `json:"steps"`
}

// Failed returns the steps that failed.
func (r *SmokeResult) Failed() []Check { return failed(r.Steps) }

// The tools offered: vLLM's own tool tests use these two
// (tests/tool_use/utils.py), so a model's parser is exercised on a choice.
var smokeTools = []map[string]any{
	{"type": "function", "function": map[string]any{
		"name":        "get_current_weather",
		"description": "Get the current weather in a given location",
		"parameters": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"city":  map[string]any{"type": "string", "description": "The city to find the weather for, e.g. 'San Francisco'"},
				"state": map[string]any{"type": "string", "description": "The two-letter abbreviation for the state that the city is in, e.g. 'CA' for California"},
				"unit":  map[string]any{"type": "string", "description": "The unit to fetch the temperature in", "enum": []any{"celsius", "fahrenheit"}},
			},
			"required": []any{"city", "state", "unit"},
		},
	}},
	{"type": "function", "function": map[string]any{
		"name":        "web_search",
		"description": "Search the internet and get a summary of the top 10 webpages.",
		"parameters": map[string]any{
			"type":       "object",
			"properties": map[string]any{"search_term": map[string]any{"type": "string", "description": "The term to search for"}},
			"required":   []any{"search_term"},
		},
	}},
}

const (
	smokeSystem   = "You are a helpful assistant with tool calling capabilities. When you receive a tool call response, use the output to format an answer to the original user question."
	smokeQuestion = "What is the weather in Dallas, Texas in Fahrenheit?"
	toolResult    = `{"temperature": 98, "unit": "fahrenheit", "conditions": "sunny"}`
)

// toolSchema returns the parameters schema of the offered tool name.
func toolSchema(name string) (map[string]any, bool) {
	for _, t := range smokeTools {
		f := t["function"].(map[string]any)
		if f["name"] == name {
			return f["parameters"].(map[string]any), true
		}
	}
	return nil, false
}

// toolMarkup matches the tool-call formats of the common model families
// when they reach content unparsed (gates.md §3.4).
var toolMarkup = regexp.MustCompile(`<tool_call>|</tool_call>|\[TOOL_CALLS\]|<\|python_tag\|>|<function=|<\|tool_call_begin\|>|<\|tool_calls_section_begin\|>|<｜tool▁calls▁begin｜>|<｜tool▁call▁begin｜>|<tool_calls>|\{\s*"name"\s*:\s*"[^"]*"\s*,\s*"(?:arguments|parameters)"\s*:`)

// parserHint says what makes tool calls come back parsed, per engine.
func parserHint(engine string) string {
	if k := kindOf(engine); k != nil {
		return k.ToolParserHint
	}
	return "the server's tool-call parser is missing or does not match the model's tool-call format, or its chat template does not render tools"
}

// Smoke runs the tool-call smoke test with tool_choice "auto" (not
// "required": vLLM serves required and named calls through structured
// decoding, which passes even with a wrong parser) and, with opts.Reasoning,
// the reasoning check. The result is always returned; the error is non-nil
// exactly when a step failed.
func Smoke(ctx context.Context, client *http.Client, t Target, opts SmokeOptions) (*SmokeResult, error) {
	res := &SmokeResult{Target: t}
	if err := t.Validate(); err != nil {
		res.Steps = append(res.Steps, Check{Name: "target", Detail: err.Error()})
		return res, err
	}
	if t.Model == "" {
		err := errors.New("no model name: give the served model name")
		res.Steps = append(res.Steps, Check{Name: "target", Detail: err.Error()})
		return res, err
	}
	if client == nil {
		client = NewClient(4)
	}
	if opts.StepTimeout <= 0 {
		opts.StepTimeout = 2 * time.Minute
	}
	if opts.MaxTokens <= 0 {
		opts.MaxTokens = 512
		if opts.Reasoning {
			opts.MaxTokens = 2048
		}
	}
	s := &smoke{client: client, t: t, opts: opts}
	step := func(name string, f func(ctx context.Context) (string, error)) {
		res.Steps = append(res.Steps, runCheck(ctx, name, opts.StepTimeout, f))
	}
	step("tool call", s.toolCall)
	step("tool call, streamed", s.toolCallStream)
	if s.call == nil {
		res.Steps = append(res.Steps, Check{Name: "tool result round trip", Skipped: true, Detail: "not run: no tool call came back to answer"})
	} else {
		step("tool result round trip", s.roundTrip)
	}
	if opts.Reasoning {
		step("reasoning", s.reasoning)
	}
	res.OK = len(res.Failed()) == 0
	return res, gateError("smoke test", res.Steps)
}

type smoke struct {
	client *http.Client
	t      Target
	opts   SmokeOptions
	// call is the first valid tool call seen (for the round trip); args
	// are its decoded arguments (for comparing the streamed ones).
	call *toolCall
	args any
	// plainOK is true when the non-streamed call was parsed.
	plainOK bool
}

type toolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type chatResponse struct {
	Choices []struct {
		Message struct {
			Content          *string    `json:"content"`
			Reasoning        *string    `json:"reasoning"`
			ReasoningContent *string    `json:"reasoning_content"`
			ToolCalls        []toolCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

func (s *smoke) body(messages []map[string]any, stream bool) map[string]any {
	b := map[string]any{
		"model":       s.t.Model,
		"messages":    messages,
		"tools":       smokeTools,
		"tool_choice": "auto",
		"temperature": 0,
		"max_tokens":  s.opts.MaxTokens,
	}
	if stream {
		b["stream"] = true
		b["stream_options"] = map[string]any{"include_usage": true}
	}
	return b
}

func (s *smoke) question() []map[string]any {
	return []map[string]any{{"role": "system", "content": smokeSystem}, {"role": "user", "content": smokeQuestion}}
}

// explainHTTP adds the likely cause to an HTTP error of a tool request.
func (s *smoke) explainHTTP(err error) error {
	var ae *APIError
	if !errors.As(err, &ae) {
		return err
	}
	msg := strings.ToLower(ae.Message)
	switch {
	case strings.Contains(msg, "enable-auto-tool-choice") || strings.Contains(msg, "tool-call-parser"):
		return fmt.Errorf("%v: the server runs without tool calling; set tool_call_parser in the server block (roofline then passes --enable-auto-tool-choice --tool-call-parser)", err)
	case strings.Contains(msg, "template"):
		return fmt.Errorf("%v: the chat template cannot render this conversation; set chat_template to a template with tool support (vLLM ships examples/tool_chat_template_*.jinja)", err)
	}
	return err
}

func (s *smoke) post(ctx context.Context, body map[string]any) (*chatResponse, error) {
	resp, err := postJSON(ctx, s.client, s.t, "/v1/chat/completions", body)
	if err != nil {
		return nil, s.explainHTTP(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	var r chatResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("the answer is not a chat completion: %v: %s", err, snippet(data))
	}
	if len(r.Choices) == 0 {
		return nil, fmt.Errorf("the answer has no choices: %s", snippet(data))
	}
	return &r, nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// noCallError explains an answer without tool calls.
func (s *smoke) noCallError(content, reasoning, finish string) error {
	switch {
	case toolMarkup.MatchString(content):
		return fmt.Errorf("the tool call came back as plain text in content (finish_reason %q): %s. %s", finish, quoteShort(content), parserHint(s.t.Engine))
	case toolMarkup.MatchString(reasoning):
		return fmt.Errorf("the tool call is inside the reasoning, where tool parsers do not look: %s. Check the reasoning_parser and the chat template's thinking settings", quoteShort(reasoning))
	case finish == "length":
		return fmt.Errorf("no tool call: the answer ran out of its %d-token budget (content %s)", s.opts.MaxTokens, quoteShort(content))
	}
	return fmt.Errorf("the model answered without calling the tool (finish_reason %q, content %s): the chat template may drop the tools, or the model does not call tools on its own", finish, quoteShort(content))
}

func quoteShort(s string) string {
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return fmt.Sprintf("%q", s)
}

// checkCall checks one call's shape and arguments; it returns the decoded
// arguments.
func checkCall(id, typ, name, args string) (any, error) {
	schema, ok := toolSchema(name)
	switch {
	case !ok:
		return nil, fmt.Errorf("the call names %q, which is not an offered tool", name)
	case typ != "function":
		return nil, fmt.Errorf("the call's type is %q, not \"function\"", typ)
	case id == "":
		return nil, errors.New("the call has no id (a tool result cannot refer to it)")
	}
	v, err := decodeJSON(args)
	if err != nil {
		return nil, fmt.Errorf("the arguments of %s are not JSON (%v): %s", name, err, quoteShort(args))
	}
	if _, isObj := v.(map[string]any); !isObj {
		return nil, fmt.Errorf("the arguments of %s are not a JSON object: %s", name, quoteShort(args))
	}
	if probs := validateSchema(schema, v); len(probs) > 0 {
		return nil, fmt.Errorf("the arguments of %s do not match the tool's schema: %s (arguments %s)", name, strings.Join(probs, "; "), args)
	}
	return v, nil
}

func (s *smoke) toolCall(ctx context.Context) (string, error) {
	r, err := s.post(ctx, s.body(s.question(), false))
	if err != nil {
		return "", err
	}
	ch := r.Choices[0]
	m := ch.Message
	content := deref(m.Content)
	if len(m.ToolCalls) == 0 {
		return "", s.noCallError(content, deref(m.Reasoning)+deref(m.ReasoningContent), ch.FinishReason)
	}
	if ch.FinishReason != "tool_calls" {
		return "", fmt.Errorf("tool calls came back but finish_reason is %q, not \"tool_calls\" (a known engine bug, vllm PR #47931): clients that go by finish_reason miss the call", ch.FinishReason)
	}
	var descr []string
	for i, tc := range m.ToolCalls {
		var args string
		if json.Unmarshal(tc.Function.Arguments, &args) != nil {
			return "", fmt.Errorf("call %d: arguments must be a JSON string holding an object, got %s", i, quoteShort(string(tc.Function.Arguments)))
		}
		v, err := checkCall(tc.ID, tc.Type, tc.Function.Name, args)
		if err != nil {
			return "", fmt.Errorf("call %d: %w", i, err)
		}
		if s.call == nil {
			c := tc
			s.call, s.args = &c, v
		}
		descr = append(descr, fmt.Sprintf("%s(%s)", tc.Function.Name, compact(v)))
	}
	if toolMarkup.MatchString(content) {
		return "", fmt.Errorf("the calls were parsed but content still holds tool markup: %s. %s", quoteShort(content), parserHint(s.t.Engine))
	}
	s.plainOK = true
	return fmt.Sprintf("%s, finish_reason tool_calls", strings.Join(descr, ", ")), nil
}

func (s *smoke) toolCallStream(ctx context.Context) (string, error) {
	st, _, err := streamRequest(ctx, s.client, s.t, "/v1/chat/completions", s.body(s.question(), true))
	if err != nil {
		return "", s.explainHTTP(err)
	}
	if len(st.ToolCalls) == 0 {
		err := s.noCallError(st.Content, st.Reasoning+st.ReasoningContent, strings.Join(st.FinishReasons, ","))
		if s.plainOK && toolMarkup.MatchString(st.Content) {
			return "", fmt.Errorf("streamed, the tool call comes back as text although the same request without streaming is parsed: the engine's streaming tool parser fails for this model (vllm PR #32506); try another engine version or parser. %s", quoteShort(st.Content))
		}
		return "", err
	}
	switch {
	case len(st.FinishReasons) != 1:
		return "", fmt.Errorf("the stream sent %d finish_reason values %q; exactly one is expected", len(st.FinishReasons), st.FinishReasons)
	case st.FinishReasons[0] != "tool_calls":
		return "", fmt.Errorf("tool calls were streamed but finish_reason is %q, not \"tool_calls\" (a known engine bug, vllm PR #47931)", st.FinishReasons[0])
	case st.BadIndex > 0:
		return "", fmt.Errorf("%d chunks carry a choice index other than 0", st.BadIndex)
	}
	var descr []string
	for _, tc := range st.ToolCalls {
		if tc.IDChunks > 1 {
			return "", fmt.Errorf("call %d: its id was streamed %d times; once is expected", tc.Index, tc.IDChunks)
		}
		v, err := checkCall(tc.ID, tc.Type, tc.Name, tc.Arguments)
		if err != nil {
			return "", fmt.Errorf("call %d, reassembled from the stream: %w", tc.Index, err)
		}
		if tc.Index == st.ToolCalls[0].Index && s.call != nil && s.call.Function.Name == tc.Name && !jsonEqual(v, s.args) {
			return "", fmt.Errorf("the streamed arguments %s differ from the non-streamed ones %s", compact(v), compact(s.args))
		}
		if s.call == nil {
			raw, _ := json.Marshal(tc.Arguments)
			s.call = &toolCall{ID: tc.ID, Type: tc.Type}
			s.call.Function.Name, s.call.Function.Arguments = tc.Name, raw
			s.args = v
		}
		descr = append(descr, fmt.Sprintf("%s(%s)", tc.Name, compact(v)))
	}
	if toolMarkup.MatchString(st.Content) {
		return "", fmt.Errorf("the calls were parsed but streamed content still holds tool markup: %s", quoteShort(st.Content))
	}
	if st.Usage == nil {
		return "", errors.New("no usage chunk although stream_options.include_usage was set")
	}
	return fmt.Sprintf("%s reassembled from %d chunks, finish_reason tool_calls, usage chunk and [DONE]", strings.Join(descr, ", "), st.Chunks), nil
}

func (s *smoke) roundTrip(ctx context.Context) (string, error) {
	var args string
	_ = json.Unmarshal(s.call.Function.Arguments, &args)
	msgs := append(s.question(),
		map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{
			"id": s.call.ID, "type": "function",
			"function": map[string]any{"name": s.call.Function.Name, "arguments": args},
		}}},
		map[string]any{"role": "tool", "tool_call_id": s.call.ID, "content": toolResult},
	)
	r, err := s.post(ctx, s.body(msgs, false))
	if err != nil {
		return "", err
	}
	ch := r.Choices[0]
	content := deref(ch.Message.Content)
	switch {
	case len(ch.Message.ToolCalls) > 0:
		return "", fmt.Errorf("given the tool's result, the model called a tool again (%s) instead of answering", ch.Message.ToolCalls[0].Function.Name)
	case ch.FinishReason == "tool_calls":
		return "", errors.New("given the tool's result, finish_reason is \"tool_calls\" but no call came back")
	case strings.TrimSpace(content) == "":
		return "", fmt.Errorf("given the tool's result, the answer is empty (finish_reason %q)", ch.FinishReason)
	case toolMarkup.MatchString(content):
		return "", fmt.Errorf("given the tool's result, the answer holds tool markup: %s. %s", quoteShort(content), parserHint(s.t.Engine))
	}
	note := ""
	if !strings.Contains(content, "98") {
		note = " (it does not quote the tool's 98 degrees)"
	}
	return fmt.Sprintf("answered %s%s", quoteShort(content), note), nil
}

func (s *smoke) reasoning(ctx context.Context) (string, error) {
	body := map[string]any{
		"model":          s.t.Model,
		"messages":       []map[string]any{{"role": "user", "content": "What is 1+3?"}},
		"max_tokens":     s.opts.MaxTokens,
		"stream":         true,
		"stream_options": map[string]any{"include_usage": true},
	}
	st, _, err := streamRequest(ctx, s.client, s.t, "/v1/chat/completions", body)
	if err != nil {
		return "", s.explainHTTP(err)
	}
	field, reasoning := "reasoning", st.Reasoning
	if reasoning == "" {
		field, reasoning = "reasoning_content", st.ReasoningContent
	}
	finish := strings.Join(st.FinishReasons, ",")
	switch {
	case strings.Contains(st.Content, "<think>") || strings.Contains(st.Content, "</think>"):
		return "", fmt.Errorf("the reasoning came back inside content (%s): the reasoning parser is missing or does not match the model; set reasoning_parser in the server block", quoteShort(st.Content))
	case reasoning == "" && st.Content == "" && finish == "length":
		return "", fmt.Errorf("inconclusive: the answer ran out of its %d-token budget before any reasoning or answer", s.opts.MaxTokens)
	case reasoning == "":
		return "", fmt.Errorf("no reasoning came back in reasoning or reasoning_content (answer %s): the reasoning parser is missing, or thinking is off in the chat template (enable_thinking)", quoteShort(st.Content))
	case strings.TrimSpace(st.Content) == "" && finish == "length":
		return "", fmt.Errorf("inconclusive: the reasoning used the whole %d-token budget before the answer; raise the budget", s.opts.MaxTokens)
	case strings.TrimSpace(st.Content) == "":
		return "", fmt.Errorf("the reasoning came back but no answer after it (finish_reason %q)", finish)
	case st.FirstContentChunk < st.FirstReasoningChunk:
		return "", errors.New("content was streamed before the reasoning; a reasoning parser streams the reasoning first")
	}
	return fmt.Sprintf("%d characters of reasoning in %s, then the answer %s", len(reasoning), field, quoteShort(st.Content)), nil
}
