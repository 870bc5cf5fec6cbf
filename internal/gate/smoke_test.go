package gate

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/gate/gatetest"
	"github.com/roofline/roofline/internal/testload"
)

func TestSmoke(t *testing.T) {
	tests := []struct {
		name      string
		opts      gatetest.Options
		reasoning bool
		failing   []string // failing steps, in order
		detail    string   // in the first failing step's detail
	}{
		{name: "parser set: passes", opts: gatetest.Options{ToolParser: true}},
		{name: "sglang parser set: passes", opts: gatetest.Options{Engine: "sglang", ToolParser: true}},
		{name: "no parser: call as text", opts: gatetest.Options{},
			failing: []string{"tool call", "tool call, streamed"}, detail: "came back as plain text in content"},
		{name: "vllm without auto tool choice", opts: gatetest.Options{NoAutoToolChoice: true},
			failing: []string{"tool call", "tool call, streamed"}, detail: "set tool_call_parser"},
		{name: "streaming parser broken", opts: gatetest.Options{ToolParser: true, StreamToolsAsText: true},
			failing: []string{"tool call, streamed"}, detail: "streaming tool parser"},
		{name: "arguments miss a required property", opts: gatetest.Options{ToolParser: true, BadArguments: true},
			failing: []string{"tool call", "tool call, streamed"}, detail: `required property "city" is missing`},
		{name: "finish_reason stop with tool calls", opts: gatetest.Options{ToolParser: true, FinishStop: true},
			failing: []string{"tool call", "tool call, streamed"}, detail: `finish_reason is "stop"`},
		{name: "reasoning field (vLLM)", opts: gatetest.Options{ToolParser: true, ReasoningField: "reasoning"}, reasoning: true},
		{name: "reasoning_content field (SGLang)", opts: gatetest.Options{Engine: "sglang", ToolParser: true, ReasoningField: "reasoning_content"}, reasoning: true},
		{name: "no reasoning parser: think in content", opts: gatetest.Options{ToolParser: true, ReasoningField: "inline"}, reasoning: true,
			failing: []string{"reasoning"}, detail: "set reasoning_parser"},
		{name: "reasoning expected but none", opts: gatetest.Options{ToolParser: true}, reasoning: true,
			failing: []string{"reasoning"}, detail: "no reasoning came back"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, target := serve(t, tt.opts)
			res, err := Smoke(context.Background(), nil, target, SmokeOptions{Reasoning: tt.reasoning, StepTimeout: 10 * time.Second})
			var names []string
			for _, c := range res.Failed() {
				names = append(names, c.Name)
			}
			if strings.Join(names, "|") != strings.Join(tt.failing, "|") {
				t.Fatalf("failing steps %q, want %q; steps: %+v", names, tt.failing, res.Steps)
			}
			if (err == nil) != (len(tt.failing) == 0) || res.OK != (len(tt.failing) == 0) {
				t.Fatalf("err %v, OK %v", err, res.OK)
			}
			if len(tt.failing) > 0 && !strings.Contains(res.Failed()[0].Detail, tt.detail) {
				t.Errorf("detail %q lacks %q", res.Failed()[0].Detail, tt.detail)
			}
			wantSteps := 3
			if tt.reasoning {
				wantSteps = 4
			}
			if len(res.Steps) != wantSteps {
				t.Errorf("%d steps, want %d: %+v", len(res.Steps), wantSteps, res.Steps)
			}
		})
	}
}

// The round trip needs a call; without one it is skipped, not failed.
func TestSmokeRoundTripSkipped(t *testing.T) {
	_, target := serve(t, gatetest.Options{})
	res, _ := Smoke(context.Background(), nil, target, SmokeOptions{})
	last := res.Steps[len(res.Steps)-1]
	if last.Name != "tool result round trip" || !last.Skipped {
		t.Fatalf("round trip: %+v", last)
	}
}

func TestSmokeRequestShape(t *testing.T) {
	fake, target := serve(t, gatetest.Options{ToolParser: true})
	if _, err := Smoke(context.Background(), nil, target, SmokeOptions{}); err != nil {
		t.Fatal(err)
	}
	body := fake.LastBody()
	// tool_choice must be "auto": "required" would pass through structured
	// decoding even with a wrong parser.
	if body["tool_choice"] != "auto" || body["temperature"] != float64(0) {
		t.Errorf("tool_choice %v temperature %v", body["tool_choice"], body["temperature"])
	}
	msgs, _ := body["messages"].([]any)
	if len(msgs) != 4 || msgs[3].(map[string]any)["role"] != "tool" {
		t.Errorf("round trip messages: %v", msgs)
	}
}

func TestToolMarkup(t *testing.T) {
	for _, s := range []string{
		"<tool_call>\n{\"name\": \"f\"}\n</tool_call>", "[TOOL_CALLS][{\"name\": \"f\"}]", "<|python_tag|>f()",
		"<function=get_current_weather>{}</function>", `{"name": "get_current_weather", "arguments": {"city": "Dallas"}}`,
		`{"name":"f","parameters":{}}`, "<|tool_calls_section_begin|>", "<｜tool▁calls▁begin｜>",
	} {
		if !toolMarkup.MatchString(s) {
			t.Errorf("not recognised as tool markup: %q", s)
		}
	}
	for _, s := range []string{"It is 98 degrees in Dallas.", `The JSON {"name": "x"} is fine.`} {
		if toolMarkup.MatchString(s) {
			t.Errorf("plain text taken for tool markup: %q", s)
		}
	}
}

func TestValidateSchema(t *testing.T) {
	schema, _ := toolSchema("get_current_weather")
	tests := []struct {
		args string
		want string // substring of the problems; "" = valid
	}{
		{`{"city": "Dallas", "state": "TX", "unit": "fahrenheit"}`, ""},
		{`{"city": "Dallas", "state": "TX"}`, `required property "unit" is missing`},
		{`{"city": "Dallas", "state": "TX", "unit": "kelvin"}`, `"kelvin" is not one of ["celsius","fahrenheit"]`},
		{`{"city": 7, "state": "TX", "unit": "celsius"}`, "$.city: is a number, the schema wants string"},
		{`["Dallas"]`, "is an array, the schema wants object"},
	}
	for _, tt := range tests {
		v, err := decodeJSON(tt.args)
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(validateSchema(schema, v), "; ")
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: got %q, want %q", tt.args, got, tt.want)
		}
	}
	nested := map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{
		"n":    map[string]any{"type": "integer"},
		"tags": map[string]any{"type": "array", "items": map[string]any{"type": []any{"string", "null"}}},
	}}
	for args, want := range map[string]string{
		`{"n": 1.0, "tags": ["a", null]}`: "",
		`{"n": 1.5}`:                      "$.n: is a number, the schema wants integer",
		`{"tags": ["a", 2]}`:              "$.tags[1]: is a number",
		`{"x": 1}`:                        `property "x" is not in the schema`,
	} {
		v, _ := decodeJSON(args)
		got := strings.Join(validateSchema(nested, v), "; ")
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("%s: got %q, want %q", args, got, want)
		}
	}
	if _, err := decodeJSON(`{"a":1} {"b":2}`); err == nil {
		t.Error("two JSON values accepted as one")
	}
}

func TestSmokeStepTimeout(t *testing.T) {
	_, target := serve(t, gatetest.Options{ToolParser: true, TTFT: 5 * time.Second})
	start := time.Now()
	res, err := Smoke(context.Background(), nil, target, SmokeOptions{StepTimeout: 150 * time.Millisecond})
	if err == nil || !strings.Contains(res.Steps[0].Detail, "no complete answer within 150ms") {
		t.Fatalf("%v: %+v", err, res.Steps)
	}
	testload.Within(t, "two timed-out steps", time.Since(start), 3*time.Second)
}
