package rehearsal

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTokenizer(t *testing.T) {
	tok := NewTokenizer(151936)
	tests := []struct {
		text string
		ids  []int
	}{
		{" a", []int{256}},
		{" z", []int{281}},
		{" aa", []int{282}},
		{" the", []int{tok.mustWord("the")}},
		{"A", []int{'A'}},
		{"<think>", []int{151936 - 8 + 3}},
		{" ab,", []int{283, ','}},
		{"  a", []int{' ', 256}},
	}
	for _, tt := range tests {
		if got := tok.Encode(tt.text); !equalInts(got, tt.ids) {
			t.Errorf("Encode(%q) = %v, want %v", tt.text, got, tt.ids)
		}
	}
	// Words longer than the vocabulary allows split into a word and bytes.
	small := NewTokenizer(10)
	if small.VocabSize() != minVocab {
		t.Errorf("vocabulary raised to %d, want %d", small.VocabSize(), minVocab)
	}
	if got := small.Encode(" zzz"); len(got) != 2 || small.Decode(got) != " zzz" {
		t.Errorf("small vocabulary: %v", got)
	}
	for _, id := range []int{-1, 151936} {
		if tok.Piece(id) != "" {
			t.Errorf("Piece(%d) should be empty", id)
		}
	}
}

func (t *Tokenizer) mustWord(w string) int {
	id, ok := t.wordID(w)
	if !ok {
		panic(w)
	}
	return id
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// FuzzTokenizer: decode(encode(s)) == s, ids stay in the vocabulary, and
// the JSON encoding of any decoded text is valid.
func FuzzTokenizer(f *testing.F) {
	for _, s := range []string{"", " the cat", "Hello, wörld", "<|im_start|>user\nhi<|im_end|>", " zzzzzzzzzz", "\xff\xfe", "<thi"} {
		f.Add(s, 151936)
		f.Add(s, 1024)
	}
	f.Fuzz(func(t *testing.T, s string, vocab int) {
		vocab = vocab%300000 + 1
		if vocab < 0 {
			vocab = -vocab
		}
		tok := NewTokenizer(vocab)
		ids := tok.Encode(s)
		for _, id := range ids {
			if id < 0 || id >= tok.VocabSize() {
				t.Fatalf("id %d outside the vocabulary of %d", id, tok.VocabSize())
			}
		}
		if got := tok.Decode(ids); got != s {
			t.Fatalf("round trip %q -> %q", s, got)
		}
		if len(ids) > len(s) {
			t.Fatalf("%d tokens for %d bytes", len(ids), len(s))
		}
		enc := appendJSONString(nil, s)
		var back string
		if err := json.Unmarshal(enc, &back); err != nil {
			t.Fatalf("appendJSONString(%q) = %s: %v", s, enc, err)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("JSON round trip %q -> %q", s, back)
		}
	})
}

// FuzzSchema: argument generation never panics on any schema, and always
// produces a JSON object.
func FuzzSchema(f *testing.F) {
	for _, s := range []string{`{"type":"object","properties":{"a":{"type":"string"}}}`, `{"$ref":"#/$defs/x","$defs":{"x":{"$ref":"#/$defs/x"}}}`,
		`{"type":["null","object"],"properties":{"n":{"type":"array","minItems":3,"items":{"enum":[1,"a",null]}}}}`, `[]`, `{"anyOf":[]}`} {
		f.Add(s, "prompt")
	}
	f.Fuzz(func(t *testing.T, schema, prompt string) {
		out := generateArgs(json.RawMessage(schema), prompt).pyJSON()
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatalf("generated %q: %v", out, err)
		}
		_ = renderToolCall(fmtPythonic, "f", generateArgs(json.RawMessage(schema), prompt))
	})
}

// FuzzRequest: request bodies never panic the handler.
func FuzzRequest(f *testing.F) {
	for _, s := range []string{`{"messages":[{"role":"user","content":"x"}],"max_tokens":2}`,
		`{"messages":[{"role":"tool","content":[{"type":"text","text":"y"}]}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":{"type":"function","function":{"name":"f"}}}`,
		`{"prompt":[[1,2],[3]],"max_tokens":1,"n":2,"stream":true}`, `{"prompt":[1e99]}`, `{"tool_choice":"sometimes"}`} {
		f.Add(s)
	}
	h := NewHandler(ServeOptions{TTFT: 1, ITL: 1, MaxModelLen: 64, OutputLen: 3, EnableAutoToolChoice: true, ToolCallParser: "hermes"})
	f.Fuzz(func(t *testing.T, body string) {
		for _, path := range []string{"/v1/chat/completions", "/v1/completions", "/tokenize", "/detokenize"} {
			rec := newRecorder()
			req := newRequest(path, body)
			h.ServeHTTP(rec, req)
			if rec.code >= 500 {
				t.Fatalf("%s %q: status %d", path, body, rec.code)
			}
		}
	})
}

func TestParseFail(t *testing.T) {
	f, err := parseFail(KindVLLM, "kv_too_small, crash_after=2s")
	if err != nil || f.class != ClassKVTooSmall || !f.crash || f.crashAfter.String() != "2s" {
		t.Errorf("%+v %v", f, err)
	}
	f, err = parseFail(KindSGLang, "unhealthy_after=0s,never_healthy")
	if err != nil || !f.unhealthy || f.unhealthyAfter != 0 || !f.neverHealthy {
		t.Errorf("%+v %v", f, err)
	}
	for _, bad := range []string{"oom", "kv_too_small", "crash_after=soon", "oom_weights,nccl_error"} {
		if _, err := parseFail(KindSGLang, bad); err == nil || !strings.Contains(err.Error(), EnvFail) {
			t.Errorf("%q: error %v", bad, err)
		}
	}
}
