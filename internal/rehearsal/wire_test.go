package rehearsal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawChunk is one chat.completion.chunk as the wire carries it.
type rawChunk struct {
	Choices []struct {
		Index        int             `json:"index"`
		Delta        json.RawMessage `json:"delta"`
		Text         *string         `json:"text"`
		FinishReason *string         `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage `json:"usage"`
}

func chunksOf(t *testing.T, body []byte) []rawChunk {
	t.Helper()
	var out []rawChunk
	for _, ev := range sseEvents(t, body) {
		if ev == "[DONE]" {
			continue
		}
		var c rawChunk
		if err := json.Unmarshal([]byte(ev), &c); err != nil {
			t.Fatalf("chunk %s: %v", ev, err)
		}
		out = append(out, c)
	}
	return out
}

// The finish_reason arrives on a chunk of its own, after the last content or
// argument chunk: vLLM sends it with the EOS token's (empty) delta, SGLang
// with a separate empty delta. Only a max_tokens cut puts it on the last
// content chunk.
func TestFinishChunk(t *testing.T) {
	weather := []map[string]any{{"type": "function", "function": map[string]any{"name": "get_weather",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}}}}
	tests := []struct {
		name, kind, version string
		extra               map[string]any
		wantDelta, finish   string
		wantTokensPlusEOS   bool
	}{
		{"vllm 0.16 text", KindVLLM, "0.16.0", map[string]any{"max_tokens": 100}, `{"content":""}`, "stop", true},
		{"vllm 0.8.5 text", KindVLLM, "0.8.5", map[string]any{"max_tokens": 100}, `{"content":""}`, "stop", true},
		{"vllm 0.16 tool call", KindVLLM, "0.16.0", map[string]any{"max_tokens": 200, "tools": weather}, `{}`, "tool_calls", true},
		{"vllm 0.8.5 tool call", KindVLLM, "0.8.5", map[string]any{"max_tokens": 200, "tools": weather}, `{}`, "tool_calls", true},
		{"sglang text", KindSGLang, "0.5.6.post2", map[string]any{"max_tokens": 100}, `{}`, "stop", true},
		{"sglang tool call", KindSGLang, "0.5.6.post2", map[string]any{"max_tokens": 200, "tools": weather}, `{}`, "tool_calls", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv := newTestServer(t, ServeOptions{Kind: tt.kind, Version: tt.version, OutputLen: 6,
				EnableAutoToolChoice: true, ToolCallParser: "hermes"})
			body := chatBody("weather in Paris", tt.extra)
			body["stream"], body["stream_options"] = true, map[string]any{"include_usage": true}
			code, raw, _ := post(t, srv.URL+"/v1/chat/completions", body)
			if code != 200 {
				t.Fatalf("status %d: %s", code, raw)
			}
			cs := chunksOf(t, raw)
			var withChoices []rawChunk
			for _, c := range cs {
				if len(c.Choices) > 0 {
					withChoices = append(withChoices, c)
				}
			}
			last := withChoices[len(withChoices)-1]
			if last.Choices[0].FinishReason == nil || *last.Choices[0].FinishReason != tt.finish {
				t.Fatalf("last chunk finish %v, want %q", last.Choices[0].FinishReason, tt.finish)
			}
			if string(last.Choices[0].Delta) != tt.wantDelta {
				t.Errorf("finish chunk delta %s, want %s", last.Choices[0].Delta, tt.wantDelta)
			}
			for _, c := range withChoices[:len(withChoices)-1] {
				if c.Choices[0].FinishReason != nil {
					t.Errorf("finish_reason before the last chunk: %s", c.Choices[0].Delta)
				}
			}
			// Non-streamed: the same token count, the EOS included.
			delete(body, "stream")
			delete(body, "stream_options")
			_, raw, _ = post(t, srv.URL+"/v1/chat/completions", body)
			var r struct{ Usage usage }
			_ = json.Unmarshal(raw, &r)
			u := cs[len(cs)-1].Usage
			if u == nil || u.CompletionTokens != r.Usage.CompletionTokens {
				t.Errorf("streamed usage %+v, non-streamed %+v", u, r.Usage)
			}
		})
	}
	// A max_tokens cut: no EOS, the finish rides on the last content chunk.
	_, srv := newTestServer(t, ServeOptions{OutputLen: 20})
	_, raw, _ := post(t, srv.URL+"/v1/chat/completions", chatBody("x", map[string]any{"max_tokens": 5, "stream": true}))
	cs := chunksOf(t, raw)
	last := cs[len(cs)-1]
	if *last.Choices[0].FinishReason != "length" || !strings.Contains(string(last.Choices[0].Delta), `"content":"`) ||
		string(last.Choices[0].Delta) == `{"content":""}` {
		t.Errorf("length cut: last delta %s finish %v", last.Choices[0].Delta, *last.Choices[0].FinishReason)
	}
}

// stream_options without stream=true: vLLM's validator answers 400 (an empty
// object is falsy in Python and passes); SGLang has no such check.
func TestStreamOptionsWithoutStream(t *testing.T) {
	tests := []struct {
		kind, version string
		opts          any
		want          int
	}{
		{KindVLLM, "0.16.0", map[string]any{"include_usage": true}, 400},
		{KindVLLM, "0.8.5", map[string]any{"include_usage": false}, 400},
		{KindVLLM, "0.16.0", map[string]any{}, 200},
		{KindVLLM, "0.16.0", nil, 200},
		{KindSGLang, "0.5.6.post2", map[string]any{"include_usage": true}, 200},
	}
	for _, tt := range tests {
		_, srv := newTestServer(t, ServeOptions{Kind: tt.kind, Version: tt.version})
		for _, path := range []string{"/v1/chat/completions", "/v1/completions"} {
			body := chatBody("hi", map[string]any{"max_tokens": 3, "stream_options": tt.opts})
			if path == "/v1/completions" {
				body = map[string]any{"model": "m", "prompt": "hi", "max_tokens": 3, "stream_options": tt.opts}
			}
			code, raw, _ := post(t, srv.URL+path, body)
			if code != tt.want {
				t.Errorf("%s %s %s %v: %d %s, want %d", tt.kind, tt.version, path, tt.opts, code, raw, tt.want)
			}
			if code == 400 && !strings.Contains(string(raw), "Stream options can only be defined when `stream=True`.") {
				t.Errorf("message: %s", raw)
			}
		}
	}
}

// usage.prompt_tokens counts the prompt once whatever n is.
func TestUsageWithN(t *testing.T) {
	for _, kind := range []string{KindVLLM, KindSGLang} {
		_, srv := newTestServer(t, ServeOptions{Kind: kind, OutputLen: 4})
		var one, two struct{ Usage usage }
		_, raw, _ := post(t, srv.URL+"/v1/chat/completions", chatBody("count me once", map[string]any{"max_tokens": 50}))
		_ = json.Unmarshal(raw, &one)
		_, raw, _ = post(t, srv.URL+"/v1/chat/completions", chatBody("count me once", map[string]any{"max_tokens": 50, "n": 2}))
		_ = json.Unmarshal(raw, &two)
		if two.Usage.PromptTokens != one.Usage.PromptTokens || two.Usage.CompletionTokens != 2*one.Usage.CompletionTokens ||
			two.Usage.TotalTokens != two.Usage.PromptTokens+two.Usage.CompletionTokens {
			t.Errorf("%s: n=1 %+v, n=2 %+v", kind, one.Usage, two.Usage)
		}
		// Two prompts: each counted once.
		_, raw, _ = post(t, srv.URL+"/v1/completions", map[string]any{"model": "m", "prompt": []any{[]int{1, 2, 3}, []int{4, 5}}, "max_tokens": 2, "n": 3})
		var c struct{ Usage usage }
		_ = json.Unmarshal(raw, &c)
		if c.Usage.PromptTokens != 5 || c.Usage.CompletionTokens != 2*2*3 {
			t.Errorf("%s completions: %+v", kind, c.Usage)
		}
	}
}

// metricValue finds one sample's value in an exposition text.
func metricValue(t *testing.T, text, series string) (float64, bool) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			var v float64
			if err := json.Unmarshal([]byte(strings.Replace(rest, "+Inf", "1e999", 1)), &v); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			return v, true
		}
	}
	return 0, false
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// vllm:iteration_tokens_total: one observation per engine step, with the
// step's tokens: the prefill step carries the prompt.
func TestIterationTokens(t *testing.T) {
	_, srv := newTestServer(t, ServeOptions{Metrics: true, OutputLen: 4, ITL: 20 * time.Millisecond})
	_, raw, _ := post(t, srv.URL+"/v1/completions", map[string]any{"model": "m", "prompt": []int{1, 2, 3, 4, 5, 6, 7}, "max_tokens": 4, "ignore_eos": true})
	var c struct{ Usage usage }
	_ = json.Unmarshal(raw, &c)
	// The last step closes one interval (20 ms) after the answer: wait for
	// its observation rather than for a fixed time a loaded machine may
	// overrun.
	lbl := `{engine="0",model_name="m"}`
	var text string
	var count float64
	for deadline := time.Now().Add(time.Minute); count < 4 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		text = scrape(t, srv.URL)
		count, _ = metricValue(t, text, "vllm:iteration_tokens_total_count"+lbl)
	}
	sum, _ := metricValue(t, text, "vllm:iteration_tokens_total_sum"+lbl)
	if sum != 7+4 {
		t.Errorf("iteration tokens sum %v, want the prompt and every generated token (11)", sum)
	}
	if count != 4 {
		t.Errorf("iteration tokens observed %v times, want once per step (4)", count)
	}
	if v, _ := metricValue(t, text, `vllm:iteration_tokens_total_bucket{engine="0",model_name="m",le="5.0"}`); v != 3 {
		t.Errorf("steps of at most 5 tokens: %v, want 3 (the prefill step has 8)", v)
	}
}

// vLLM's /metrics also carries prometheus_client's process and python series
// and the instrumentator's http_* series (not for excluded routes); SGLang's
// multiprocess registry has neither.
func TestHTTPAndProcessSeries(t *testing.T) {
	for _, version := range []string{"0.8.5", "0.16.0"} {
		_, srv := newTestServer(t, ServeOptions{Version: version, Metrics: true, OutputLen: 2})
		post(t, srv.URL+"/v1/completions", map[string]any{"model": "m", "prompt": "hi", "max_tokens": 2})
		post(t, srv.URL+"/v1/completions", map[string]any{"model": "nope", "prompt": "hi"})
		healthOf(t, srv.URL)
		text := scrape(t, srv.URL)
		for _, want := range []string{
			`http_requests_total{handler="/v1/completions",method="POST",status="2xx"} 1.0`,
			`http_requests_total{handler="/v1/completions",method="POST",status="4xx"} 1.0`,
			`http_request_size_bytes_count{handler="/v1/completions"} 2.0`,
			`http_request_duration_highr_seconds_count 2.0`,
			`http_request_duration_seconds_bucket{handler="/v1/completions",method="POST",le="+Inf"} 2.0`,
			"# TYPE process_resident_memory_bytes gauge", "process_start_time_seconds ", "python_info{",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("%s: no %q in /metrics", version, want)
			}
		}
		if strings.Contains(text, `handler="/health"`) || strings.Contains(text, `handler="/metrics"`) {
			t.Errorf("%s: excluded routes instrumented", version)
		}
		if v, ok := metricValue(t, text, "process_resident_memory_bytes"); !ok || v <= 0 {
			t.Errorf("%s: resident memory %v", version, v)
		}
		if !(strings.Index(text, "process_") < strings.Index(text, "vllm:") && strings.Index(text, "vllm:") < strings.Index(text, "http_")) {
			t.Errorf("%s: series order: default collectors, vllm, http", version)
		}
	}
	_, srv := newTestServer(t, ServeOptions{Kind: KindSGLang, Metrics: true})
	if text := scrape(t, srv.URL); strings.Contains(text, "http_requests_total") || strings.Contains(text, "process_") {
		t.Errorf("sglang /metrics has http/process series")
	}
}

// /v1/responses: served by vLLM from 0.10, 404 before and on SGLang.
func TestResponsesAPI(t *testing.T) {
	for _, tt := range []struct {
		kind, version string
		want          int
	}{{KindVLLM, "0.16.0", 200}, {KindVLLM, "0.8.5", 404}, {KindSGLang, "0.5.6.post2", 404}} {
		_, srv := newTestServer(t, ServeOptions{Kind: tt.kind, Version: tt.version, OutputLen: 5})
		code, raw, _ := post(t, srv.URL+"/v1/responses", map[string]any{"model": "m", "input": "hello", "instructions": "be brief"})
		if code != tt.want {
			t.Fatalf("%s %s: %d %s", tt.kind, tt.version, code, raw)
		}
		if code != 200 {
			continue
		}
		var r struct {
			Object, Status string
			Output         []struct {
				Type, Role string
				Content    []struct{ Type, Text string }
			}
			Usage struct{ InputTokens, OutputTokens, TotalTokens int } `json:"usage"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		if r.Object != "response" || r.Status != "completed" || len(r.Output) != 1 || r.Output[0].Content[0].Type != "output_text" || r.Output[0].Content[0].Text == "" {
			t.Errorf("response %s", raw)
		}
		// Streamed: typed events, numbered, ending with response.completed; the
		// deltas add up to the text.
		b, _ := json.Marshal(map[string]any{"model": "m", "input": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_text", "text": "hello"}}}}, "stream": true, "max_output_tokens": 3})
		resp, err := http.Post(srv.URL+"/v1/responses", "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var types []string
		var deltas strings.Builder
		var final struct {
			Response struct {
				Status  string
				Output  []struct{ Content []struct{ Text string } }
				Details *struct{ Reason string } `json:"incomplete_details"`
			}
		}
		seq := 0
		for _, block := range strings.Split(strings.TrimSpace(string(body)), "\n\n") {
			ev, data, ok := strings.Cut(block, "\ndata: ")
			typ, _ := strings.CutPrefix(ev, "event: ")
			if !ok {
				t.Fatalf("event block %q", block)
			}
			var m map[string]any
			_ = json.Unmarshal([]byte(data), &m)
			if m["type"] != typ || m["sequence_number"] != float64(seq) {
				t.Errorf("event %s: type %v seq %v, want %d", typ, m["type"], m["sequence_number"], seq)
			}
			seq++
			types = append(types, typ)
			if typ == "response.output_text.delta" {
				deltas.WriteString(m["delta"].(string))
			}
			if typ == "response.completed" {
				_ = json.Unmarshal([]byte(data), &final)
			}
		}
		if types[0] != "response.created" || types[len(types)-1] != "response.completed" {
			t.Errorf("events %v", types)
		}
		if final.Response.Status != "incomplete" || final.Response.Details == nil || final.Response.Details.Reason != "max_output_tokens" ||
			final.Response.Output[0].Content[0].Text != deltas.String() {
			t.Errorf("final %+v, deltas %q", final.Response, deltas.String())
		}
	}
}
