package gate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
)

// plain is Chunk with strings, for comparisons.
type plain struct {
	Choices  []plainChoice
	HasUsage bool
	Usage    Usage
	Error    *APIError
}

type plainChoice struct {
	Index                                            int
	Content, Reasoning, ReasoningContent, Text, Fini string
	Calls                                            []string
}

func toPlain(c *Chunk) plain {
	p := plain{HasUsage: c.HasUsage, Usage: c.Usage, Error: c.Error}
	for _, ch := range c.Choices {
		pc := plainChoice{Index: ch.Index, Content: string(ch.Content), Reasoning: string(ch.Reasoning),
			ReasoningContent: string(ch.ReasoningContent), Text: string(ch.Text), Fini: ch.FinishReason}
		for _, tc := range ch.ToolCalls {
			pc.Calls = append(pc.Calls, fmt.Sprintf("%d|%s|%s|%s|%s", tc.Index, tc.ID, tc.Type, tc.Name, tc.Arguments))
		}
		p.Choices = append(p.Choices, pc)
	}
	return p
}

func TestChunkDecode(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want plain
		fast bool // expected to take the fast path
	}{
		{"role chunk", `{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null}`,
			plain{Choices: []plainChoice{{}}}, true},
		{"content", `{"choices":[{"index":0,"delta":{"content":"Hi \"there\"\n\u00e9\ud83d\ude00"}}]}`,
			plain{Choices: []plainChoice{{Content: "Hi \"there\"\né😀"}}}, true},
		{"lone surrogate and bad UTF-8 become U+FFFD", "{\"choices\":[{\"delta\":{\"content\":\"a\\ud800b\xffc\"}}]}",
			plain{Choices: []plainChoice{{Content: "a\uFFFDb\uFFFDc"}}}, true},
		{"reasoning (vLLM)", `{"choices":[{"index":0,"delta":{"reasoning":"think"}}]}`,
			plain{Choices: []plainChoice{{Reasoning: "think"}}}, true},
		{"reasoning_content (SGLang)", `{"choices":[{"index":0,"delta":{"role":null,"content":null,"reasoning_content":"think","tool_calls":null}}]}`,
			plain{Choices: []plainChoice{{ReasoningContent: "think"}}}, true},
		{"tool call first delta", `{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"call_1","type":"function","index":0,"function":{"name":"get_weather"}}]}}]}`,
			plain{Choices: []plainChoice{{Calls: []string{"0|call_1|function|get_weather|"}}}}, true},
		{"tool call fragment", `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"city\": \""}}]}}]}`,
			plain{Choices: []plainChoice{{Calls: []string{"1||||{\"city\": \""}}}}, true},
		{"finish and stop_reason", `{"choices":[{"index":0,"delta":{"content":"!"},"finish_reason":"tool_calls","stop_reason":151645}]}`,
			plain{Choices: []plainChoice{{Content: "!", Fini: "tool_calls"}}}, true},
		{"usage chunk", `{"choices":[],"usage":{"prompt_tokens":12,"total_tokens":16,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":0}}}`,
			plain{HasUsage: true, Usage: Usage{12, 4, 16}}, true},
		{"completions text", `{"object":"text_completion","choices":[{"index":0,"text":" fox","finish_reason":"length"}]}`,
			plain{Choices: []plainChoice{{Text: " fox", Fini: "length"}}}, true},
		{"error nested", `{"error":{"message":"boom","type":"InternalServerError","param":null,"code":500}}`,
			plain{Error: &APIError{Message: "boom", Type: "InternalServerError", Code: "500"}}, false},
		{"error flat", `{"object":"error","message":"bad","type":"BadRequestError","param":null,"code":400}`,
			plain{Error: &APIError{Message: "bad", Type: "BadRequestError", Code: "400"}}, false},
		{"error null is no error", `{"error":null,"choices":[]}`, plain{}, true},
		{"differently cased key", `{"Choices":[{"delta":{"content":"x"}}]}`,
			plain{Choices: []plainChoice{{Content: "x"}}}, false},
		{"duplicate key, last wins", `{"choices":[{"delta":{"content":"a"}}],"choices":[]}`, plain{}, false},
		{"top-level null", `null`, plain{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Chunk
			if err := c.Decode([]byte(tt.in)); err != nil {
				t.Fatal(err)
			}
			got := toPlain(&c)
			if len(got.Choices) == 0 {
				got.Choices = nil
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			var f Chunk
			fast := (&fastDecoder{data: []byte(tt.in), c: &f}).chunk() == nil
			if fast != tt.fast {
				t.Errorf("fast path taken = %v, want %v", fast, tt.fast)
			}
		})
	}
}

func TestChunkDecodeErrors(t *testing.T) {
	for _, in := range []string{``, `{`, `{"choices":[}`, `{"choices":[{"index":1.5}]}`,
		`{"choices":[{"delta":{"content":5}}]}`, `[1]`, `{"a":1}x`, `{"usage":{"prompt_tokens":"3"}}`,
		"{\"choices\":[{\"delta\":{\"content\":\"a\x01\"}}]}"} {
		var c Chunk
		if err := c.Decode([]byte(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

func TestChunkReuse(t *testing.T) {
	var c Chunk
	for _, in := range []string{
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a"},{"index":1,"id":"b"}]}},{"index":1,"delta":{"content":"x"}}]}`,
		`{"choices":[{"delta":{"content":"y"}}]}`,
	} {
		if err := c.Decode([]byte(in)); err != nil {
			t.Fatal(err)
		}
	}
	want := plain{Choices: []plainChoice{{Content: "y"}}}
	if got := toPlain(&c); !reflect.DeepEqual(got, want) {
		t.Fatalf("stale data after reuse: %+v", got)
	}
}

func TestParseAPIError(t *testing.T) {
	tests := []struct {
		status int
		body   string
		want   string
	}{
		{400, `{"error":{"message":"\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set","type":"BadRequestError","param":null,"code":400}}`,
			`HTTP 400 BadRequestError: "auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set`},
		{400, `{"object":"error","message":"bad model","type":"NotFoundError","param":null,"code":404}`, "HTTP 400 NotFoundError: bad model"},
		{500, `{"error":"plain string"}`, "HTTP 500: plain string"},
		{422, `{"detail":"Field required"}`, "HTTP 422: Field required"},
		{422, `{"detail":[{"loc":["body","model"],"msg":"Field required"}]}`, `HTTP 422: [{"loc":["body","model"],"msg":"Field required"}]`},
	}
	for _, tt := range tests {
		e := ParseAPIError(tt.status, []byte(tt.body))
		if e == nil || e.Error() != tt.want {
			t.Errorf("%s: got %v, want %s", tt.body, e, tt.want)
		}
	}
	if e := ParseAPIError(200, []byte(`{"choices":[]}`)); e != nil {
		t.Errorf("a chunk read as an error: %v", e)
	}
	if e := ParseAPIError(502, []byte(`<html>bad gateway</html>`)); e != nil {
		t.Errorf("HTML read as an error object: %v", e)
	}
}

// FuzzChunkDecode checks the fast decoder against encoding/json: whenever
// the fast path accepts an input, the result must equal the reference's.
func FuzzChunkDecode(f *testing.F) {
	for _, s := range []string{
		`{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"c","type":"function","index":0,"function":{"name":"f","arguments":"{\"a\":1}"}}]}}]}`,
		`{"choices":[],"usage":{"prompt_tokens":12,"total_tokens":16,"completion_tokens":4}}`,
		`{"choices":[{"text":"a\u00e9\ud83d\ude00\n","finish_reason":"length","logprobs":{"x":[1,2.5e-3,-0,true,false,null]}}]}`,
		`{"error":{"message":"boom"}}`, `{"object":"error","message":"m"}`, `{"Usage":{}}`,
		`{"choices":[null,{"delta":null}]}`, `{"choices":[{"index":-7,"delta":{"reasoning":"r","reasoning_content":"rc"}}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var fast Chunk
		ferr := (&fastDecoder{data: in, c: &fast}).chunk()
		var ref Chunk
		var w wireChunk
		rerr := json.Unmarshal(in, &w)
		if rerr == nil {
			ref.fromWire(&w)
		}
		switch {
		case ferr == errFallback:
			// Decode must still not panic and agree with encoding/json on validity.
			var c Chunk
			if derr := c.Decode(in); (derr == nil) != (rerr == nil) {
				t.Fatalf("Decode error %v, encoding/json error %v", derr, rerr)
			}
		case ferr != nil:
			if rerr == nil {
				t.Fatalf("fast decoder rejects %q (%v), encoding/json accepts it", in, ferr)
			}
		default:
			if rerr != nil {
				t.Fatalf("fast decoder accepts %q, encoding/json: %v", in, rerr)
			}
			if (len(w.Error) > 0 && string(w.Error) != "null") || (w.Object != nil && *w.Object == "error") {
				t.Fatalf("fast path accepted an error object: %q", in)
			}
			a, b := toPlain(&fast), toPlain(&ref)
			if len(a.Choices) == 0 {
				a.Choices = nil
			}
			if len(b.Choices) == 0 {
				b.Choices = nil
			}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("input %q\nfast %+v\nref  %+v", in, a, b)
			}
		}
	})
}

// vllmStream builds a stream of n content chunks in vLLM's shape, with the
// role chunk, a finish chunk, the usage chunk and [DONE].
func vllmStream(n int) []byte {
	var b bytes.Buffer
	head := `{"id":"chatcmpl-0123456789abcdef0123456789abcdef","object":"chat.completion.chunk","created":1760000000,"model":"qwen3-8b",`
	fmt.Fprintf(&b, "data: %s\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n", head)
	for i := range n {
		fmt.Fprintf(&b, "data: %s\"choices\":[{\"index\":0,\"delta\":{\"content\":\" word%d\"},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n", head, i%100)
	}
	fmt.Fprintf(&b, "data: %s\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"},\"logprobs\":null,\"finish_reason\":\"length\",\"stop_reason\":null}],\"usage\":null}\n\n", head)
	fmt.Fprintf(&b, "data: %s\"choices\":[],\"usage\":{\"prompt_tokens\":1024,\"total_tokens\":%d,\"completion_tokens\":%d}}\n\n", head, 1024+n, n)
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

// BenchmarkStreamReader measures the CPU per chunk of the benchmark's hot
// loop: SSE framing plus chunk decoding, on vLLM-shaped chunks.
func BenchmarkStreamReader(b *testing.B) {
	const n = 2000
	stream := vllmStream(n)
	src := bytes.NewReader(stream)
	sr := NewSSEReader(src)
	var c Chunk
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	b.ResetTimer()
	chunks := 0
	for b.Loop() {
		src.Reset(stream)
		sr.Reset(src)
		for {
			data, err := sr.Next()
			if err == io.EOF || IsDone(data) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if err := c.Decode(data); err != nil {
				b.Fatal(err)
			}
			chunks++
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(chunks), "ns/chunk")
}

// BenchmarkChunkDecodeStdlib is the encoding/json reference, for comparison.
func BenchmarkChunkDecodeStdlib(b *testing.B) {
	data := []byte(strings.TrimSuffix(strings.TrimPrefix(strings.Split(string(vllmStream(1)), "\n\n")[1], "data: "), "\n"))
	b.ReportAllocs()
	for b.Loop() {
		var w wireChunk
		if err := json.Unmarshal(data, &w); err != nil {
			b.Fatal(err)
		}
	}
}
