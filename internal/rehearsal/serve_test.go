package rehearsal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// newTestServer serves a handler with fast timing.
func newTestServer(t *testing.T, o ServeOptions) (*Handler, *httptest.Server) {
	t.Helper()
	if o.TTFT == 0 {
		o.TTFT = time.Millisecond
	}
	if o.ITL == 0 {
		o.ITL = 100 * time.Microsecond
	}
	if len(o.ServedNames) == 0 {
		o.ServedNames = []string{"m"}
	}
	h := NewHandler(o)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, srv
}

func post(t *testing.T, url string, body any) (int, []byte, http.Header) {
	t.Helper()
	raw, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header
}

// sseEvents splits an SSE body into its data payloads, checking the framing:
// every event is exactly "data: <payload>\n\n".
func sseEvents(t *testing.T, body []byte) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	expectBlank := false
	for sc.Scan() {
		line := sc.Text()
		if expectBlank {
			if line != "" {
				t.Fatalf("event not followed by a blank line: %q", line)
			}
			expectBlank = false
			continue
		}
		payload, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("line is not a data line: %q", line)
		}
		out = append(out, payload)
		expectBlank = true
	}
	if expectBlank {
		t.Fatal("the stream does not end with a blank line")
	}
	return out
}

type chunk struct {
	Object  string `json:"object"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Role             *string    `json:"role"`
			Content          *string    `json:"content"`
			Reasoning        *string    `json:"reasoning"`
			ReasoningContent *string    `json:"reasoning_content"`
			ToolCalls        []toolCall `json:"tool_calls"`
		} `json:"delta"`
		Text         *string `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage          `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// streamed is a reassembled streamed answer.
type streamed struct {
	role, content, reasoning, reasoningContent string
	calls                                      map[int]*toolCall
	names                                      map[int]int // name deltas per call
	finish                                     []string
	usage                                      *usage
	chunks                                     int
	errors                                     []string
	done                                       bool
}

func collect(t *testing.T, body []byte) streamed {
	t.Helper()
	s := streamed{calls: map[int]*toolCall{}, names: map[int]int{}}
	events := sseEvents(t, body)
	for i, ev := range events {
		if ev == "[DONE]" {
			if i != len(events)-1 {
				t.Fatal("[DONE] is not the last event")
			}
			s.done = true
			continue
		}
		var c chunk
		if err := json.Unmarshal([]byte(ev), &c); err != nil {
			t.Fatalf("event is not JSON: %q", ev)
		}
		if len(c.Error) > 0 {
			s.errors = append(s.errors, string(c.Error))
			continue
		}
		if c.Usage != nil && len(c.Choices) == 0 {
			if s.usage != nil {
				t.Fatal("two usage chunks")
			}
			s.usage = c.Usage
			continue
		}
		if s.usage != nil {
			t.Fatal("a chunk after the usage chunk")
		}
		s.chunks++
		for _, ch := range c.Choices {
			d := ch.Delta
			if d.Role != nil {
				if s.role != "" {
					t.Fatal("role sent twice")
				}
				s.role = *d.Role
			}
			if d.Content != nil {
				s.content += *d.Content
			}
			if d.Reasoning != nil {
				s.reasoning += *d.Reasoning
			}
			if d.ReasoningContent != nil {
				s.reasoningContent += *d.ReasoningContent
			}
			if ch.Text != nil {
				s.content += *ch.Text
			}
			for _, tc := range d.ToolCalls {
				idx := 0
				if tc.Index != nil {
					idx = *tc.Index
				}
				if s.calls[idx] == nil {
					s.calls[idx] = &toolCall{}
				}
				c := s.calls[idx]
				if tc.ID != "" {
					c.ID = tc.ID
				}
				if tc.Function.Name != "" {
					s.names[idx]++
					c.Function.Name = tc.Function.Name
				}
				c.Function.Arguments += tc.Function.Arguments
			}
			if ch.FinishReason != nil {
				s.finish = append(s.finish, *ch.FinishReason)
			}
		}
	}
	return s
}

func chatBody(content string, extra map[string]any) map[string]any {
	b := map[string]any{"model": "m", "messages": []map[string]any{{"role": "user", "content": content}}}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

func TestSSEConformance(t *testing.T) {
	for _, kind := range []string{KindVLLM, KindSGLang} {
		t.Run(kind, func(t *testing.T) {
			_, srv := newTestServer(t, ServeOptions{Kind: kind})
			code, body, hdr := post(t, srv.URL+"/v1/chat/completions", chatBody("hello there", map[string]any{
				"stream": true, "max_tokens": 12, "ignore_eos": true, "stream_options": map[string]any{"include_usage": true}}))
			if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("status %d, content type %q", code, hdr.Get("Content-Type"))
			}
			s := collect(t, body)
			if !s.done || s.role != "assistant" || s.usage == nil {
				t.Fatalf("done=%v role=%q usage=%v", s.done, s.role, s.usage)
			}
			if len(s.finish) != 1 || s.finish[0] != "length" {
				t.Errorf("finish reasons %v, want exactly one \"length\"", s.finish)
			}
			if s.usage.CompletionTokens != 12 || s.usage.TotalTokens != s.usage.PromptTokens+12 {
				t.Errorf("usage %+v", *s.usage)
			}
			// /tokenize of the same messages agrees with usage.prompt_tokens.
			_, tb, _ := post(t, srv.URL+"/tokenize", map[string]any{"model": "m", "messages": []map[string]any{{"role": "user", "content": "hello there"}}})
			var tok struct{ Count int }
			_ = json.Unmarshal(tb, &tok)
			if tok.Count != s.usage.PromptTokens {
				t.Errorf("/tokenize count %d, usage.prompt_tokens %d", tok.Count, s.usage.PromptTokens)
			}
			// Without include_usage no usage chunk; completions stream text.
			_, body, _ = post(t, srv.URL+"/v1/completions", map[string]any{"model": "m", "prompt": "one two", "max_tokens": 5, "stream": true})
			s = collect(t, body)
			if s.usage != nil || !s.done || len(s.finish) != 1 || s.content == "" {
				t.Errorf("completions stream: %+v", s)
			}
		})
	}
}

func TestContinuousUsage(t *testing.T) {
	_, srv := newTestServer(t, ServeOptions{})
	_, body, _ := post(t, srv.URL+"/v1/completions", map[string]any{"model": "m", "prompt": []int{5, 6, 7}, "max_tokens": 4, "ignore_eos": true,
		"stream": true, "stream_options": map[string]any{"include_usage": true, "continuous_usage_stats": true}})
	var last int
	for _, ev := range sseEvents(t, body) {
		if ev == "[DONE]" {
			continue
		}
		var c chunk
		_ = json.Unmarshal([]byte(ev), &c)
		if c.Usage == nil {
			t.Fatalf("chunk without usage: %s", ev)
		}
		if c.Usage.PromptTokens != 3 || c.Usage.CompletionTokens < last {
			t.Errorf("usage %+v after %d", *c.Usage, last)
		}
		last = c.Usage.CompletionTokens
	}
	if last != 4 {
		t.Errorf("last cumulative completion_tokens %d, want 4", last)
	}
}

func TestLengthControls(t *testing.T) {
	_, srv := newTestServer(t, ServeOptions{OutputLen: 10})
	tests := []struct {
		name       string
		extra      map[string]any
		wantTokens int
		wantFinish string
	}{
		// The end-of-sequence token counts, as in both engines' usage.
		{"natural end", map[string]any{"max_tokens": 100}, 11, "stop"},
		{"EOS does not fit", map[string]any{"max_tokens": 10}, 10, "length"},
		{"max_tokens cuts", map[string]any{"max_tokens": 4}, 4, "length"},
		{"ignore_eos", map[string]any{"max_tokens": 50, "ignore_eos": true}, 50, "length"},
		{"min_tokens", map[string]any{"max_tokens": 100, "min_tokens": 30}, 31, "stop"},
		{"max_completion_tokens", map[string]any{"max_completion_tokens": 3, "max_tokens": 90}, 3, "length"},
	}
	for _, tt := range tests {
		code, body, _ := post(t, srv.URL+"/v1/chat/completions", chatBody("x", tt.extra))
		var r struct {
			Choices []struct {
				FinishReason string `json:"finish_reason"`
			}
			Usage usage
		}
		if err := json.Unmarshal(body, &r); err != nil || code != 200 {
			t.Fatalf("%s: %d %s", tt.name, code, body)
		}
		if r.Usage.CompletionTokens != tt.wantTokens || r.Choices[0].FinishReason != tt.wantFinish {
			t.Errorf("%s: %d tokens, finish %q; want %d, %q", tt.name, r.Usage.CompletionTokens, r.Choices[0].FinishReason, tt.wantTokens, tt.wantFinish)
		}
	}
}

// Requests longer than max_model_len get the engine's 400, in its error shape.
func TestErrorShapes(t *testing.T) {
	long := strings.Repeat(" word", 300)
	tests := []struct {
		kind, version string
		nested        bool
		want          string
	}{
		{KindVLLM, "0.16.0", true, "This model's maximum context length is 100 tokens. However, your request has"},
		{KindVLLM, "0.8.5", false, "This model's maximum context length is 100 tokens. However, you requested"},
		{KindSGLang, "0.5.6.post2", false, "is longer than the model's context length (100 tokens)"},
	}
	for _, tt := range tests {
		_, srv := newTestServer(t, ServeOptions{Kind: tt.kind, Version: tt.version, MaxModelLen: 100})
		code, body, _ := post(t, srv.URL+"/v1/chat/completions", chatBody(long, nil))
		if code != 400 {
			t.Fatalf("%s %s: status %d", tt.kind, tt.version, code)
		}
		var nested struct {
			Error struct {
				Message, Type string
				Code          int
			}
		}
		var flat struct {
			Object, Message, Type string
			Code                  int
		}
		_ = json.Unmarshal(body, &nested)
		_ = json.Unmarshal(body, &flat)
		msg := flat.Message
		if tt.nested {
			if nested.Error.Code != 400 || nested.Error.Type != "BadRequestError" || flat.Object != "" {
				t.Errorf("%s %s: want the nested shape, got %s", tt.kind, tt.version, body)
			}
			msg = nested.Error.Message
		} else if flat.Object != "error" || flat.Code != 400 {
			t.Errorf("%s %s: want the flat shape, got %s", tt.kind, tt.version, body)
		}
		if !strings.Contains(msg, tt.want) {
			t.Errorf("%s %s: message %q", tt.kind, tt.version, msg)
		}
		// max_tokens beyond the context: the second form of the error.
		code, body, _ = post(t, srv.URL+"/v1/chat/completions", chatBody("x", map[string]any{"max_tokens": 5000}))
		if code != 400 || !strings.Contains(string(body), "5000") {
			t.Errorf("%s %s: max_tokens too large: %d %s", tt.kind, tt.version, code, body)
		}
	}
	// vLLM names unknown models with a 404.
	_, srv := newTestServer(t, ServeOptions{})
	code, body, _ := post(t, srv.URL+"/v1/chat/completions", map[string]any{"model": "other", "messages": []map[string]any{{"role": "user", "content": "x"}}})
	if code != 404 || !strings.Contains(string(body), "The model `other` does not exist.") {
		t.Errorf("unknown model: %d %s", code, body)
	}
}

// An error after the stream started is an error event, then [DONE].
func TestStreamErrors(t *testing.T) {
	for _, o := range []ServeOptions{{Kind: KindVLLM}, {Kind: KindVLLM, Version: "0.8.5"}, {Kind: KindSGLang}} {
		_, srv := newTestServer(t, o)
		raw, _ := json.Marshal(chatBody("x", map[string]any{"stream": true, "max_tokens": 20, "ignore_eos": true}))
		req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", bytes.NewReader(raw))
		req.Header.Set("X-Rehearsal-Fail", "stream_error_after=3")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		s := collect(t, body)
		if resp.StatusCode != 200 || len(s.errors) != 1 || !s.done || len(s.finish) != 0 {
			t.Fatalf("%+v: status %d, %+v", o, resp.StatusCode, s)
		}
		var e struct {
			Message string
			Code    int
		}
		if err := json.Unmarshal([]byte(s.errors[0]), &e); err != nil || e.Code != 500 || e.Message == "" {
			t.Errorf("%+v: error object %s", o, s.errors[0])
		}
	}
	// The engine dies while streaming: once the stream has its first
	// tokens (a fixed delay could land before the request on a loaded
	// machine, which then gets a plain 500).
	h, srv := newTestServer(t, ServeOptions{ITL: 5 * time.Millisecond})
	go func() {
		for deadline := time.Now().Add(time.Minute); h.Stats().GenerationTokens == 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		h.SetState(StateDead)
	}()
	_, body, _ := post(t, srv.URL+"/v1/chat/completions", chatBody("x", map[string]any{"stream": true, "max_tokens": 1000, "ignore_eos": true}))
	s := collect(t, body)
	if len(s.errors) != 1 || !strings.Contains(s.errors[0], "EngineCore encountered an issue") || !s.done {
		t.Errorf("dead engine: %+v", s)
	}
	if code := healthOf(t, srv.URL); code != 503 {
		t.Errorf("/health of a dead engine: %d", code)
	}
}

func healthOf(t *testing.T, url string) int {
	resp, err := http.Get(url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestEndpoints(t *testing.T) {
	_, srv := newTestServer(t, ServeOptions{ServedNames: []string{"a", "b"}, ModelPath: "/models/x", MaxModelLen: 8192})
	resp, _ := http.Get(srv.URL + "/v1/models")
	var models struct {
		Data []struct {
			ID          string `json:"id"`
			Root        string `json:"root"`
			MaxModelLen int    `json:"max_model_len"`
		}
	}
	_ = json.NewDecoder(resp.Body).Decode(&models)
	resp.Body.Close()
	if len(models.Data) != 2 || models.Data[0].ID != "a" || models.Data[1].Root != "/models/x" || models.Data[0].MaxModelLen != 8192 {
		t.Errorf("/v1/models: %+v", models)
	}
	resp, _ = http.Get(srv.URL + "/version")
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != `{"version":"0.16.0"}` {
		t.Errorf("/version: %s", b)
	}
	resp, _ = http.Get(srv.URL + "/nope")
	if resp.StatusCode != 404 {
		t.Errorf("unknown path: %d", resp.StatusCode)
	}
	resp.Body.Close()

	_, sg := newTestServer(t, ServeOptions{Kind: KindSGLang})
	for _, p := range []string{"/server_info", "/get_server_info", "/model_info", "/health_generate"} {
		resp, _ := http.Get(sg.URL + p)
		if resp.StatusCode != 200 {
			t.Errorf("sglang %s: %d", p, resp.StatusCode)
		}
		resp.Body.Close()
	}
	resp, _ = http.Get(sg.URL + "/version")
	if resp.StatusCode != 404 {
		t.Errorf("sglang has no /version, got %d", resp.StatusCode)
	}
	resp.Body.Close()
}

func TestTokenizeRoundTrip(t *testing.T) {
	_, srv := newTestServer(t, ServeOptions{})
	text := "Hello, wörld! the cat\n<think>x</think> zzzzzzzz"
	_, b, _ := post(t, srv.URL+"/tokenize", map[string]any{"model": "m", "prompt": text})
	var tok struct {
		Count       int   `json:"count"`
		Tokens      []int `json:"tokens"`
		MaxModelLen int   `json:"max_model_len"`
	}
	_ = json.Unmarshal(b, &tok)
	if tok.Count != len(tok.Tokens) || tok.Count == 0 || tok.MaxModelLen != 4096 {
		t.Fatalf("/tokenize: %s", b)
	}
	_, b, _ = post(t, srv.URL+"/detokenize", map[string]any{"model": "m", "tokens": tok.Tokens})
	var de struct{ Prompt string }
	_ = json.Unmarshal(b, &de)
	if de.Prompt != text {
		t.Errorf("detokenize(tokenize(s)) = %q, want %q", de.Prompt, text)
	}
	// A prompt of token ids counts as its length.
	_, b, _ = post(t, srv.URL+"/v1/completions", map[string]any{"model": "m", "prompt": tok.Tokens, "max_tokens": 1})
	var r struct{ Usage usage }
	_ = json.Unmarshal(b, &r)
	if r.Usage.PromptTokens != tok.Count {
		t.Errorf("prompt_tokens %d for %d ids", r.Usage.PromptTokens, tok.Count)
	}
}

func TestAPIKey(t *testing.T) {
	_, srv := newTestServer(t, ServeOptions{APIKeys: []string{"k1"}})
	resp, _ := http.Get(srv.URL + "/v1/models")
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("without key: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest("GET", srv.URL+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer k1")
	resp, _ = http.DefaultClient.Do(req)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("with key: %d", resp.StatusCode)
	}
	if code := healthOf(t, srv.URL); code != 200 {
		t.Errorf("/health needs no key: %d", code)
	}
}

func httpGet(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return "", &httpError{resp.StatusCode}
	}
	return string(b), nil
}

type httpError struct{ code int }

func (e *httpError) Error() string { return http.StatusText(e.code) }

// recorder is a minimal ResponseWriter for the fuzz test (no server needed).
type recorder struct {
	h    http.Header
	code int
	body bytes.Buffer
}

func newRecorder() *recorder { return &recorder{h: http.Header{}, code: 200} }

func (r *recorder) Header() http.Header         { return r.h }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(code int)        { r.code = code }
func (r *recorder) Flush()                      {}

func newRequest(path, body string) *http.Request {
	return httptest.NewRequest("POST", path, strings.NewReader(body))
}
