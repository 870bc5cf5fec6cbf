package rehearsal

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

var weatherTool = map[string]any{"type": "function", "function": map[string]any{
	"name": "get_current_weather", "description": "Get the current weather in a given location",
	"parameters": map[string]any{"type": "object", "properties": map[string]any{
		"city":  map[string]any{"type": "string", "description": "The city"},
		"state": map[string]any{"type": "string", "description": "Two-letter state code"},
		"unit":  map[string]any{"type": "string", "enum": []string{"celsius", "fahrenheit"}},
		"days":  map[string]any{"type": "integer", "minimum": 1, "maximum": 7},
		"note":  map[string]any{"type": "string"},
	}, "required": []string{"city", "state", "unit", "days"}},
}}

const weatherQuestion = "What is the weather in Dallas, Texas in fahrenheit?"

// checkWeatherArgs validates arguments against weatherTool's schema.
func checkWeatherArgs(t *testing.T, args string) {
	t.Helper()
	var a map[string]any
	if err := json.Unmarshal([]byte(args), &a); err != nil {
		t.Fatalf("arguments are not a JSON object: %q", args)
	}
	for _, k := range []string{"city", "state", "unit", "days"} {
		if _, ok := a[k]; !ok {
			t.Errorf("required %q missing in %s", k, args)
		}
	}
	if _, extra := a["note"]; extra {
		t.Errorf("optional property generated: %s", args)
	}
	if u := a["unit"]; u != "fahrenheit" {
		t.Errorf("unit %v: want the enum value the prompt mentions", u)
	}
	if d, ok := a["days"].(float64); !ok || d != float64(int(d)) || d < 1 || d > 7 {
		t.Errorf("days %v: want an integer in [1, 7]", a["days"])
	}
	if c, ok := a["city"].(string); !ok || c == "" {
		t.Errorf("city %v", a["city"])
	}
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
	Usage usage `json:"usage"`
}

func TestToolCalls(t *testing.T) {
	req := func(stream bool, choice any) map[string]any {
		b := chatBody(weatherQuestion, map[string]any{"tools": []any{weatherTool}, "max_tokens": 500, "stream": stream})
		if choice != nil {
			b["tool_choice"] = choice
		}
		return b
	}
	tests := []struct {
		name       string
		opts       ServeOptions
		choice     any
		structured bool
		status     int
	}{
		{"vllm hermes parser", ServeOptions{EnableAutoToolChoice: true, ToolCallParser: "hermes", ModelType: "qwen3"}, "auto", true, 200},
		{"vllm choice omitted", ServeOptions{EnableAutoToolChoice: true, ToolCallParser: "hermes", ModelType: "qwen3"}, nil, true, 200},
		{"vllm wrong parser for the model", ServeOptions{EnableAutoToolChoice: true, ToolCallParser: "llama3_json", ModelType: "qwen3"}, "auto", false, 200},
		{"vllm llama model", ServeOptions{EnableAutoToolChoice: true, ToolCallParser: "llama3_json", ModelType: "llama"}, "auto", true, 200},
		{"vllm without the flags", ServeOptions{ModelType: "qwen3"}, "auto", false, 400},
		{"vllm required parses with any parser", ServeOptions{EnableAutoToolChoice: true, ToolCallParser: "mistral", ModelType: "qwen3"}, "required", true, 200},
		{"vllm 0.8.5", ServeOptions{Version: "0.8.5", EnableAutoToolChoice: true, ToolCallParser: "hermes", ModelType: "qwen2"}, "auto", true, 200},
		{"sglang qwen25 parser", ServeOptions{Kind: KindSGLang, ToolCallParser: "qwen25", ModelType: "qwen3"}, "auto", true, 200},
		{"sglang without parser", ServeOptions{Kind: KindSGLang, ModelType: "qwen3"}, "auto", false, 200},
		{"sglang mistral", ServeOptions{Kind: KindSGLang, ToolCallParser: "mistral", ModelType: "mistral"}, "auto", true, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv := newTestServer(t, tt.opts)
			code, body, _ := post(t, srv.URL+"/v1/chat/completions", req(false, tt.choice))
			if code != tt.status {
				t.Fatalf("status %d, want %d: %s", code, tt.status, body)
			}
			if code == 400 {
				if !strings.Contains(string(body), `\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set`) {
					t.Errorf("400 body: %s", body)
				}
				return
			}
			var r chatResponse
			_ = json.Unmarshal(body, &r)
			ch := r.Choices[0]
			_, sbody, _ := post(t, srv.URL+"/v1/chat/completions", req(true, tt.choice))
			s := collect(t, sbody)
			if tt.structured {
				if len(ch.Message.ToolCalls) != 1 || ch.FinishReason != "tool_calls" {
					t.Fatalf("want one tool call and finish tool_calls: %s", body)
				}
				c := ch.Message.ToolCalls[0]
				if c.Function.Name != "get_current_weather" || c.Type != "function" || len(c.ID) < 9 {
					t.Errorf("call %+v", c)
				}
				checkWeatherArgs(t, c.Function.Arguments)
				if ch.Message.Content != nil && strings.Contains(*ch.Message.Content, "tool_call") {
					t.Errorf("tool markup left in content: %q", *ch.Message.Content)
				}
				// Streamed: the name once, arguments in fragments that join to the same object.
				sc := s.calls[0]
				if sc == nil || s.names[0] != 1 || sc.ID == "" || len(s.finish) != 1 || s.finish[0] != "tool_calls" {
					t.Fatalf("streamed call %+v names %v finish %v", sc, s.names, s.finish)
				}
				var a, b map[string]any
				_ = json.Unmarshal([]byte(c.Function.Arguments), &a)
				if err := json.Unmarshal([]byte(sc.Function.Arguments), &b); err != nil {
					t.Fatalf("streamed arguments %q", sc.Function.Arguments)
				}
				if ja, jb := mustJSON(a), mustJSON(b); ja != jb {
					t.Errorf("streamed arguments %s differ from %s", jb, ja)
				}
				return
			}
			// Misconfigured: the call is plain text in content, finish "stop".
			if len(ch.Message.ToolCalls) != 0 || ch.FinishReason != "stop" || ch.Message.Content == nil ||
				!strings.Contains(*ch.Message.Content, "get_current_weather") {
				t.Errorf("want the call as text with finish stop: %s", body)
			}
			if len(s.calls) != 0 || len(s.finish) != 1 || s.finish[len(s.finish)-1] != "stop" || !strings.Contains(s.content, "get_current_weather") {
				t.Errorf("streamed: calls %v finish %v content %q", s.calls, s.finish, s.content)
			}
		})
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// A tool result gets a plain answer that mentions it.
func TestToolRoundTrip(t *testing.T) {
	_, srv := newTestServer(t, ServeOptions{EnableAutoToolChoice: true, ToolCallParser: "hermes"})
	body := map[string]any{"model": "m", "tools": []any{weatherTool}, "messages": []any{
		map[string]any{"role": "user", "content": weatherQuestion},
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "call_1", "type": "function",
			"function": map[string]any{"name": "get_current_weather", "arguments": `{"city": "Dallas"}`}}}},
		map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "98 degrees"},
	}}
	code, b, _ := post(t, srv.URL+"/v1/chat/completions", body)
	var r chatResponse
	_ = json.Unmarshal(b, &r)
	if code != 200 || len(r.Choices[0].Message.ToolCalls) != 0 || r.Choices[0].FinishReason == "tool_calls" ||
		r.Choices[0].Message.Content == nil || !strings.Contains(*r.Choices[0].Message.Content, "98") {
		t.Errorf("round trip: %d %s", code, b)
	}
}

func TestReasoning(t *testing.T) {
	tests := []struct {
		name              string
		opts              ServeOptions
		kwargs            map[string]any
		wantReasoning     bool // reasoning_content set
		wantReasoningNew  bool // vLLM 0.16's "reasoning" set too
		wantThinkInContet bool
	}{
		{"vllm 0.16 qwen3 parser", ServeOptions{Thinking: true, ReasoningParser: "qwen3"}, nil, true, true, false},
		{"vllm without parser", ServeOptions{Thinking: true}, nil, false, false, true},
		{"vllm parser of another format", ServeOptions{Thinking: true, ReasoningParser: "granite"}, nil, false, false, true},
		{"vllm 0.8.5 needs --enable-reasoning", ServeOptions{Version: "0.8.5", Thinking: true, ReasoningParser: "deepseek_r1"}, nil, false, false, true},
		{"vllm 0.8.5 with --enable-reasoning", ServeOptions{Version: "0.8.5", Thinking: true, ReasoningParser: "deepseek_r1", EnableReasoning: true}, nil, true, false, false},
		{"sglang qwen3", ServeOptions{Kind: KindSGLang, Thinking: true, ReasoningParser: "qwen3"}, nil, true, false, false},
		{"sglang separate_reasoning false", ServeOptions{Kind: KindSGLang, Thinking: true, ReasoningParser: "qwen3"}, map[string]any{"separate_reasoning": false}, false, false, true},
		{"thinking off per request", ServeOptions{Thinking: true, ReasoningParser: "qwen3"}, map[string]any{"enable_thinking": false}, false, false, false},
		{"model that does not think", ServeOptions{ReasoningParser: "qwen3"}, nil, false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv := newTestServer(t, tt.opts)
			extra := map[string]any{"max_tokens": 200}
			if v, ok := tt.kwargs["separate_reasoning"]; ok {
				extra["separate_reasoning"] = v
			} else if tt.kwargs != nil {
				extra["chat_template_kwargs"] = tt.kwargs
			}
			_, b, _ := post(t, srv.URL+"/v1/chat/completions", chatBody("What is 1+3?", extra))
			var r chatResponse
			_ = json.Unmarshal(b, &r)
			m := r.Choices[0].Message
			if got := m.ReasoningContent != nil && *m.ReasoningContent != ""; got != tt.wantReasoning {
				t.Errorf("reasoning_content set = %v: %s", got, b)
			}
			if got := m.Reasoning != nil && *m.Reasoning != ""; got != tt.wantReasoningNew {
				t.Errorf("reasoning set = %v: %s", got, b)
			}
			if m.Content == nil || *m.Content == "" {
				t.Fatalf("no content: %s", b)
			}
			if got := strings.Contains(*m.Content, "<think>"); got != tt.wantThinkInContet {
				t.Errorf("<think> in content = %v: %q", got, *m.Content)
			}
			// Streaming agrees, and reasoning comes before content.
			extra["stream"] = true
			_, sb, _ := post(t, srv.URL+"/v1/chat/completions", chatBody("What is 1+3?", extra))
			s := collect(t, sb)
			if (s.reasoningContent != "") != tt.wantReasoning || strings.TrimSpace(s.content) != strings.TrimSpace(*m.Content) {
				t.Errorf("stream: reasoning %q content %q vs %q", s.reasoningContent, s.content, *m.Content)
			}
		})
	}
}

func TestMetricNames(t *testing.T) {
	tests := []struct {
		opts    ServeOptions
		want    []string
		notWant []string
	}{
		{ServeOptions{Metrics: true}, []string{"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
			"vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:request_success_total", "vllm:time_to_first_token_seconds",
			"vllm:inter_token_latency_seconds", "vllm:e2e_request_latency_seconds", "vllm:request_queue_time_seconds",
			"vllm:num_preemptions_total", "vllm:prefix_cache_hits_total"}, []string{"vllm:gpu_cache_usage_perc", "vllm:time_per_output_token_seconds"}},
		{ServeOptions{Metrics: true, Version: "0.8.5"}, []string{"vllm:gpu_cache_usage_perc", "vllm:time_per_output_token_seconds",
			"vllm:gpu_prefix_cache_hits_total", "vllm:prompt_tokens_total"}, []string{"vllm:kv_cache_usage_perc", "vllm:inter_token_latency_seconds"}},
		{ServeOptions{Kind: KindSGLang, Metrics: true}, []string{"sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:token_usage",
			"sglang:gen_throughput", "sglang:prompt_tokens_total", "sglang:generation_tokens_total", "sglang:time_to_first_token_seconds",
			"sglang:inter_token_latency_seconds", "sglang:max_total_num_tokens"}, []string{"vllm:num_requests_running"}},
	}
	for _, tt := range tests {
		_, srv := newTestServer(t, tt.opts)
		_, b, _ := post(t, srv.URL+"/v1/chat/completions", chatBody("count me", map[string]any{"max_tokens": 7, "ignore_eos": true}))
		var r chatResponse
		_ = json.Unmarshal(b, &r)
		resp, err := httpGet(srv.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(strings.NewReader(resp))
		if err != nil {
			t.Fatalf("%+v: /metrics does not parse: %v", tt.opts, err)
		}
		for _, n := range tt.want {
			if fams[n] == nil {
				t.Errorf("%s %s: metric %s missing", tt.opts.Kind, tt.opts.Version, n)
			}
		}
		for _, n := range tt.notWant {
			if fams[n] != nil {
				t.Errorf("%s %s: metric %s should not exist in this version", tt.opts.Kind, tt.opts.Version, n)
			}
		}
		prefix := "vllm:"
		if tt.opts.Kind == KindSGLang {
			prefix = "sglang:"
		}
		gen := fams[prefix+"generation_tokens_total"].GetMetric()[0].GetCounter().GetValue()
		prompt := fams[prefix+"prompt_tokens_total"].GetMetric()[0].GetCounter().GetValue()
		if int(gen) != r.Usage.CompletionTokens || int(prompt) != r.Usage.PromptTokens {
			t.Errorf("%s: counters %v/%v, usage %+v", prefix, prompt, gen, r.Usage)
		}
		ttft := fams[prefix+"time_to_first_token_seconds"].GetMetric()[0].GetHistogram()
		if ttft.GetSampleCount() != 1 {
			t.Errorf("%s: TTFT samples %d", prefix, ttft.GetSampleCount())
		}
	}
	// vLLM with --disable-log-stats keeps /metrics, without its series.
	_, srv0 := newTestServer(t, ServeOptions{Metrics: true, NoStats: true})
	if body, err := httpGet(srv0.URL + "/metrics"); err != nil || strings.Contains(body, "vllm:") {
		t.Errorf("--disable-log-stats: %v %q", err, body)
	}
	// SGLang without --enable-metrics has no /metrics.
	_, srv := newTestServer(t, ServeOptions{Kind: KindSGLang})
	if _, err := httpGet(srv.URL + "/metrics"); err == nil {
		t.Error("SGLang without metrics serves /metrics")
	}
}

// generateArgs covers the schema forms tools use.
func TestGenerateArgs(t *testing.T) {
	tests := []struct {
		schema, prompt, want string
	}{
		{`{"type":"object","properties":{"location":{"type":"string"},"unit":{"type":"string","enum":["c","f"]}},"required":["location"]}`, "", `{"location": "Dallas"}`},
		{`{"type":"object","properties":{"a":{"type":"integer","minimum":5},"b":{"type":"number","maximum":1},"c":{"type":"boolean"}}}`, "", `{"a": 5, "b": 1.0, "c": true}`},
		{`{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string"},"minItems":2}},"required":["tags"]}`, "", `{"tags": ["example", "example"]}`},
		{`{"type":"object","properties":{"x":{"anyOf":[{"type":"null"},{"type":"integer"}]}},"required":["x"]}`, "", `{"x": 1}`},
		{`{"type":"object","properties":{"o":{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}},"required":["o"]}`, "", `{"o": {"query": "rehearsal"}}`},
		{`{"type":"object","properties":{"mode":{"enum":["fast","slow"]}},"required":["mode"]}`, "go SLOW please", `{"mode": "slow"}`},
		{`{"type":"object","properties":{"k":{"const":3}},"required":["k"]}`, "", `{"k": 3}`},
		{`{"type":"object","properties":{"n":{"$ref":"#/$defs/N"}},"required":["n"],"$defs":{"N":{"type":"integer","maximum":0}}}`, "", `{"n": 0}`},
		{`not json`, "", `{}`},
	}
	for _, tt := range tests {
		if got := generateArgs(json.RawMessage(tt.schema), tt.prompt).pyJSON(); got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.schema, got, tt.want)
		}
	}
}

func TestRenderToolFormats(t *testing.T) {
	args := &ordered{}
	args.set("city", "Dallas")
	args.set("days", 2)
	want := map[toolFormat]string{
		fmtHermes:     "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"city\": \"Dallas\", \"days\": 2}}\n</tool_call>",
		fmtLlama3JSON: `{"name": "f", "parameters": {"city": "Dallas", "days": 2}}`,
		fmtMistral:    `[TOOL_CALLS][{"name": "f", "arguments": {"city": "Dallas", "days": 2}}]`,
		fmtPythonic:   `[f(city='Dallas', days=2)]`,
		fmtQwen3Coder: "<tool_call>\n<function=f>\n<parameter=city>\nDallas\n</parameter>\n<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>",
	}
	for f, w := range want {
		if got := renderToolCall(f, "f", args); got != w {
			t.Errorf("%s:\n got %q\nwant %q", f, got, w)
		}
	}
}
