package rehearsal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Tool calls. The rehearsal "model" answers a request that offers tools with a
// call of one of them, written in the model family's native text format
// (toolFormat). Whether the client sees structured tool_calls or that raw text
// in content depends on the server's parser, exactly as with a real engine.

// toolFormat is how a model family writes a tool call.
type toolFormat string

const (
	fmtHermes      toolFormat = "hermes"      // Qwen2.5, Qwen3, Hermes: <tool_call>{json}</tool_call>
	fmtLlama3JSON  toolFormat = "llama3_json" // Llama 3.x: a bare JSON object with "parameters"
	fmtMistral     toolFormat = "mistral"     // [TOOL_CALLS][{...}]
	fmtDeepSeekV3  toolFormat = "deepseek_v3" // <｜tool▁calls▁begin｜>...
	fmtQwen3Coder  toolFormat = "qwen3_coder" // <tool_call><function=...><parameter=...>
	fmtPythonic    toolFormat = "pythonic"    // [f(a=1)]
	toolFormatNone toolFormat = ""
)

var toolFormats = []toolFormat{fmtHermes, fmtLlama3JSON, fmtMistral, fmtDeepSeekV3, fmtQwen3Coder, fmtPythonic}

// toolParsersFor lists, per engine, the tool-call parser names that read a format.
var toolParsersFor = map[toolFormat]map[string][]string{
	fmtHermes:     {KindVLLM: {"hermes"}, KindSGLang: {"qwen", "qwen25", "hermes"}},
	fmtLlama3JSON: {KindVLLM: {"llama3_json", "llama4_json"}, KindSGLang: {"llama3"}},
	fmtMistral:    {KindVLLM: {"mistral"}, KindSGLang: {"mistral"}},
	fmtDeepSeekV3: {KindVLLM: {"deepseek_v3", "deepseek_v31"}, KindSGLang: {"deepseekv3", "deepseekv31"}},
	fmtQwen3Coder: {KindVLLM: {"qwen3_coder", "qwen3_xml"}, KindSGLang: {"qwen3_coder"}},
	fmtPythonic:   {KindVLLM: {"pythonic", "llama4_pythonic"}, KindSGLang: {"pythonic"}},
}

// parserReads reports whether the named parser of engine kind reads format f.
func parserReads(kind, parser string, f toolFormat) bool {
	for _, p := range toolParsersFor[f][kind] {
		if p == parser {
			return true
		}
	}
	return false
}

// toolFormatForModel guesses a model family's tool-call format from config.json's model_type.
func toolFormatForModel(modelType string) toolFormat {
	switch t := strings.ToLower(modelType); {
	case strings.HasPrefix(t, "llama"):
		return fmtLlama3JSON
	case strings.HasPrefix(t, "mistral"), strings.HasPrefix(t, "mixtral"):
		return fmtMistral
	case strings.HasPrefix(t, "deepseek"):
		return fmtDeepSeekV3
	default:
		return fmtHermes
	}
}

// renderToolCall writes one call in format f.
func renderToolCall(f toolFormat, name string, args *ordered) string {
	a := args.pyJSON()
	switch f {
	case fmtLlama3JSON:
		return `{"name": ` + pyQuote(name) + `, "parameters": ` + a + `}`
	case fmtMistral:
		return `[TOOL_CALLS][{"name": ` + pyQuote(name) + `, "arguments": ` + a + `}]`
	case fmtDeepSeekV3:
		return "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>" + name +
			"\n```json\n" + a + "\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
	case fmtQwen3Coder:
		var b strings.Builder
		b.WriteString("<tool_call>\n<function=" + name + ">\n")
		for i, k := range args.keys {
			v := args.vals[i]
			s, ok := v.(string)
			if !ok {
				s = pyJSONValue(v)
			}
			b.WriteString("<parameter=" + k + ">\n" + s + "\n</parameter>\n")
		}
		b.WriteString("</function>\n</tool_call>")
		return b.String()
	case fmtPythonic:
		var parts []string
		for i, k := range args.keys {
			parts = append(parts, k+"="+pyRepr(args.vals[i]))
		}
		return "[" + name + "(" + strings.Join(parts, ", ") + ")]"
	default:
		return "<tool_call>\n{\"name\": " + pyQuote(name) + ", \"arguments\": " + a + "}\n</tool_call>"
	}
}

// ordered is a JSON object that keeps its key order (the schema's), as
// Python's json.dumps of a dict does.
type ordered struct {
	keys []string
	vals []any
}

func (o *ordered) set(k string, v any) {
	o.keys = append(o.keys, k)
	o.vals = append(o.vals, v)
}

// MarshalJSON writes compact JSON (for the structured tool_calls we compare in tests).
func (o *ordered) MarshalJSON() ([]byte, error) { return []byte(o.pyJSON()), nil }

// pyJSON renders o as Python's json.dumps(ensure_ascii=False) does: ", " and ": ".
func (o *ordered) pyJSON() string { return pyJSONValue(o) }

func pyJSONValue(v any) string {
	var b strings.Builder
	writePy(&b, v)
	return b.String()
}

func writePy(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case int:
		b.WriteString(strconv.Itoa(x))
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			b.WriteString(strconv.FormatFloat(x, 'f', 1, 64))
		} else {
			b.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
		}
	case string:
		b.WriteString(pyQuote(x))
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writePy(b, e)
		}
		b.WriteByte(']')
	case *ordered:
		b.WriteByte('{')
		for i, k := range x.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(pyQuote(k))
			b.WriteString(": ")
			writePy(b, x.vals[i])
		}
		b.WriteByte('}')
	default:
		raw, _ := json.Marshal(x)
		b.Write(raw)
	}
}

// pyQuote is a JSON string without HTML escaping and with non-ASCII kept.
func pyQuote(s string) string { return string(appendJSONString(nil, s)) }

// pyRepr renders a value as a Python literal (for the pythonic format).
func pyRepr(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case bool:
		if x {
			return "True"
		}
		return "False"
	case string:
		return "'" + strings.ReplaceAll(strings.ReplaceAll(x, `\`, `\\`), "'", `\'`) + "'"
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = pyRepr(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case *ordered:
		parts := make([]string, len(x.keys))
		for i, k := range x.keys {
			parts[i] = pyRepr(k) + ": " + pyRepr(x.vals[i])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	default:
		return pyJSONValue(v)
	}
}

// schema is the part of JSON Schema the argument generator reads.
type schema struct {
	Type       json.RawMessage            `json:"type"`
	Properties json.RawMessage            `json:"properties"`
	Required   []string                   `json:"required"`
	Enum       []any                      `json:"enum"`
	Const      any                        `json:"const"`
	Default    any                        `json:"default"`
	Items      json.RawMessage            `json:"items"`
	AnyOf      []json.RawMessage          `json:"anyOf"`
	OneOf      []json.RawMessage          `json:"oneOf"`
	AllOf      []json.RawMessage          `json:"allOf"`
	Minimum    *float64                   `json:"minimum"`
	Maximum    *float64                   `json:"maximum"`
	ExclMin    *float64                   `json:"exclusiveMinimum"`
	MinItems   *int                       `json:"minItems"`
	MinLength  *int                       `json:"minLength"`
	MaxLength  *int                       `json:"maxLength"`
	Format     string                     `json:"format"`
	Defs       map[string]json.RawMessage `json:"$defs"`
	Ref        string                     `json:"$ref"`
}

// argGen builds arguments valid against a tool's parameter schema: every
// required property (all properties when none is required), enum values (one
// mentioned in the prompt when there is one), numbers within their bounds.
type argGen struct {
	prompt string // lower-cased user text, to pick mentioned values
	defs   map[string]json.RawMessage
	depth  int
}

func generateArgs(params json.RawMessage, prompt string) *ordered {
	g := &argGen{prompt: strings.ToLower(prompt)}
	var root schema
	if len(params) == 0 || json.Unmarshal(params, &root) != nil {
		return &ordered{}
	}
	g.defs = root.Defs
	if o, ok := g.value("", params).(*ordered); ok {
		return o
	}
	return &ordered{}
}

func (g *argGen) value(name string, raw json.RawMessage) any {
	var s schema
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	g.depth++
	defer func() { g.depth-- }()
	if g.depth > 8 {
		return nil
	}
	if s.Ref != "" {
		if d, ok := g.defs[strings.TrimPrefix(s.Ref, "#/$defs/")]; ok {
			return g.value(name, d)
		}
	}
	switch {
	case s.Const != nil:
		return normNumber(s.Const)
	case len(s.Enum) > 0:
		for _, e := range s.Enum {
			if str, ok := e.(string); ok && str != "" && strings.Contains(g.prompt, strings.ToLower(str)) {
				return str
			}
		}
		return normNumber(s.Enum[0])
	case len(s.AnyOf) > 0:
		return g.value(name, firstNonNull(s.AnyOf))
	case len(s.OneOf) > 0:
		return g.value(name, firstNonNull(s.OneOf))
	case len(s.AllOf) > 0:
		return g.value(name, s.AllOf[0])
	}
	typ := schemaType(s.Type)
	if typ == "" && len(s.Properties) > 0 {
		typ = "object"
	}
	switch typ {
	case "object":
		o := &ordered{}
		keys := orderedKeys(s.Properties)
		var props map[string]json.RawMessage
		_ = json.Unmarshal(s.Properties, &props)
		want := map[string]bool{}
		for _, r := range s.Required {
			want[r] = true
		}
		for _, k := range keys {
			if len(s.Required) == 0 || want[k] {
				o.set(k, g.value(k, props[k]))
			}
		}
		// Required names without a property schema still get a value.
		for _, r := range s.Required {
			if _, ok := props[r]; !ok {
				o.set(r, "example")
			}
		}
		return o
	case "array":
		n := 1
		if s.MinItems != nil && *s.MinItems > n {
			n = min(*s.MinItems, 8)
		}
		out := make([]any, n)
		for i := range out {
			out[i] = g.value(name, s.Items)
		}
		return out
	case "integer":
		return int(g.number(s, true))
	case "number":
		return g.number(s, false)
	case "boolean":
		return true
	case "null":
		return nil
	}
	if s.Default != nil {
		return normNumber(s.Default)
	}
	return g.str(name, s)
}

func (g *argGen) number(s schema, integer bool) float64 {
	v := 1.0
	if !integer {
		v = 1.5
	}
	if s.Minimum != nil && v < *s.Minimum {
		v = *s.Minimum
	}
	if s.ExclMin != nil && v <= *s.ExclMin {
		v = *s.ExclMin + 1
	}
	if s.Maximum != nil && v > *s.Maximum {
		v = *s.Maximum
	}
	if integer {
		v = math.Ceil(v)
		if s.Maximum != nil && v > *s.Maximum {
			v = math.Floor(*s.Maximum)
		}
	}
	return v
}

// str picks a plausible string: a city or a state when the name says so, else "example".
func (g *argGen) str(name string, s schema) string {
	n := strings.ToLower(name)
	v := "example"
	switch {
	case s.Format == "date":
		v = "2025-01-01"
	case s.Format == "date-time":
		v = "2025-01-01T00:00:00Z"
	case strings.Contains(n, "city"), strings.Contains(n, "location"):
		v = "Dallas"
	case strings.Contains(n, "state"):
		v = "TX"
	case strings.Contains(n, "query"), strings.Contains(n, "search"):
		v = "rehearsal"
	}
	if s.MaxLength != nil && len(v) > *s.MaxLength {
		v = v[:*s.MaxLength]
	}
	if s.MinLength != nil && len(v) < *s.MinLength {
		v += strings.Repeat("x", *s.MinLength-len(v))
	}
	return v
}

func schemaType(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		for _, t := range list {
			if t != "null" {
				return t
			}
		}
		if len(list) > 0 {
			return list[0]
		}
	}
	return ""
}

func firstNonNull(list []json.RawMessage) json.RawMessage {
	for _, r := range list {
		var s schema
		if json.Unmarshal(r, &s) == nil && schemaType(s.Type) != "null" {
			return r
		}
	}
	return list[0]
}

// normNumber turns JSON numbers decoded as float64 into ints when integral.
func normNumber(v any) any {
	if f, ok := v.(float64); ok && f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return int(f)
	}
	return v
}

// orderedKeys returns an object's keys in document order.
func orderedKeys(raw json.RawMessage) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			break
		}
		k, ok := t.(string)
		if !ok {
			break
		}
		keys = append(keys, k)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			break
		}
	}
	if keys == nil {
		// Fall back to sorted keys for anything the decoder could not walk.
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) == nil {
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
		}
	}
	return keys
}

// pickTool chooses the tool to call: the named one, else one whose name the
// prompt mentions, else the first.
func pickTool(tools []tool, prompt, named string) (tool, error) {
	if named != "" {
		for _, t := range tools {
			if t.Function.Name == named {
				return t, nil
			}
		}
		return tool{}, fmt.Errorf("tool %q not found in tools", named)
	}
	p := strings.ToLower(prompt)
	for _, t := range tools {
		words := strings.FieldsFunc(strings.ToLower(t.Function.Name), func(r rune) bool { return r == '_' || r == '-' })
		for _, w := range words {
			if len(w) > 3 && w != "get" && strings.Contains(p, w) {
				return t, nil
			}
		}
	}
	return tools[0], nil
}
