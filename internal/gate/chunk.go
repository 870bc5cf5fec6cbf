package gate

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Chunk is the part of one streamed chat.completion.chunk (or text_completion
// chunk) that the gates need. Byte slices point into the Chunk's own buffer
// and are valid until the next Decode.
type Chunk struct {
	Choices []ChoiceDelta
	// HasUsage is true when the chunk carried a usage object (the final chunk
	// with stream_options.include_usage, or every chunk with
	// continuous_usage_stats).
	HasUsage bool
	Usage    Usage
	// Error is set when the event is an error object instead of a chunk
	// (a server that fails after the stream started).
	Error *APIError

	arena []byte
}

// ChoiceDelta is one element of choices[].
type ChoiceDelta struct {
	Index int
	// Delta fields of chat chunks.
	Content          []byte
	Reasoning        []byte // vLLM (from late 2025): delta.reasoning
	ReasoningContent []byte // SGLang and older vLLM: delta.reasoning_content
	ToolCalls        []ToolCallDelta
	// Text is choices[].text of /v1/completions chunks.
	Text         []byte
	FinishReason string
}

// HasToken reports whether the choice carries generated output: content,
// reasoning, tool-call fragments or completion text. A role-only first chunk
// (content "") and a bare finish chunk carry none.
func (c *ChoiceDelta) HasToken() bool {
	return len(c.Content) > 0 || len(c.Reasoning) > 0 || len(c.ReasoningContent) > 0 ||
		len(c.ToolCalls) > 0 || len(c.Text) > 0
}

// ToolCallDelta is one element of delta.tool_calls[].
type ToolCallDelta struct {
	Index     int
	ID        []byte
	Type      []byte
	Name      []byte
	Arguments []byte
}

// Usage is the OpenAI usage object.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// APIError is an OpenAI-style error, in either shape the engines send:
// {"error": {"message", "type", "code"}} (current vLLM) or
// {"object": "error", "message", "type", "code"} (SGLang, older vLLM).
type APIError struct {
	Status  int    `json:"status,omitempty"` // HTTP status when it came with one
	Message string `json:"message"`
	Type    string `json:"type,omitempty"`
	Code    string `json:"code,omitempty"`
}

func (e *APIError) Error() string {
	var b strings.Builder
	if e.Status != 0 {
		fmt.Fprintf(&b, "HTTP %d", e.Status)
	}
	if e.Type != "" {
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		b.WriteString(e.Type)
	}
	if e.Message != "" {
		if b.Len() > 0 {
			b.WriteString(": ")
		}
		b.WriteString(e.Message)
	}
	if b.Len() == 0 {
		return "error object without a message"
	}
	return b.String()
}

// ParseAPIError reads an error body in any of the shapes OpenAI-compatible
// servers use; status is the HTTP status (0 inside a stream). It returns nil
// when body is not an error object.
func ParseAPIError(status int, body []byte) *APIError {
	var w struct {
		Error   json.RawMessage `json:"error"`
		Object  string          `json:"object"`
		Message *string         `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
		Detail  json.RawMessage `json:"detail"` // FastAPI validation errors
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return nil
	}
	e := &APIError{Status: status}
	switch {
	case len(w.Error) > 0 && string(w.Error) != "null":
		var inner struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		}
		if json.Unmarshal(w.Error, &inner) == nil {
			e.Message, e.Type, e.Code = inner.Message, inner.Type, rawCode(inner.Code)
		} else {
			var s string
			if json.Unmarshal(w.Error, &s) != nil {
				s = string(w.Error)
			}
			e.Message = s
		}
	case w.Object == "error" || (w.Message != nil && status >= 400):
		if w.Message != nil {
			e.Message = *w.Message
		}
		e.Type, e.Code = w.Type, rawCode(w.Code)
	case len(w.Detail) > 0 && status >= 400:
		var s string
		if json.Unmarshal(w.Detail, &s) != nil {
			s = string(w.Detail)
		}
		e.Message = s
	default:
		return nil
	}
	return e
}

func rawCode(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// errFallback makes the fast decoder hand the input to encoding/json: for
// shapes real servers do not send (duplicate or differently-cased keys,
// escaped keys, wrong types) and for error objects.
var errFallback = errors.New("fallback")

// Decode parses one event's data into c, reusing c's memory. It returns an
// error for data that is not a JSON object of the chunk shape; an error
// object is not an error of Decode but sets c.Error.
func (c *Chunk) Decode(data []byte) error {
	c.reset()
	d := fastDecoder{data: data, c: c}
	err := d.chunk()
	if err == nil {
		return nil
	}
	if err != errFallback {
		return err
	}
	c.reset()
	return c.decodeSlow(data)
}

func (c *Chunk) reset() {
	c.Choices = c.Choices[:0]
	c.HasUsage, c.Usage, c.Error = false, Usage{}, nil
	c.arena = c.arena[:0]
}

// wireChunk is the encoding/json form of a chunk: the reference the fast
// decoder is fuzzed against, and the decoder of the shapes it leaves alone.
type wireChunk struct {
	Object  *string `json:"object"`
	Choices []struct {
		Index int `json:"index"`
		Delta *struct {
			Content          *string `json:"content"`
			Reasoning        *string `json:"reasoning"`
			ReasoningContent *string `json:"reasoning_content"`
			ToolCalls        []struct {
				Index    int     `json:"index"`
				ID       *string `json:"id"`
				Type     *string `json:"type"`
				Function *struct {
					Name      *string `json:"name"`
					Arguments *string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		Text         *string `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *Usage          `json:"usage"`
	Error json.RawMessage `json:"error"`
}

func (c *Chunk) decodeSlow(data []byte) error {
	var w wireChunk
	if err := json.Unmarshal(data, &w); err != nil {
		return fmt.Errorf("stream chunk is not valid JSON: %w", err)
	}
	if (len(w.Error) > 0 && string(w.Error) != "null") || (w.Object != nil && *w.Object == "error") {
		c.Error = ParseAPIError(0, data)
		if c.Error == nil {
			c.Error = &APIError{Message: string(data)}
		}
		return nil
	}
	c.fromWire(&w)
	return nil
}

func (c *Chunk) fromWire(w *wireChunk) {
	str := func(p *string) []byte {
		if p == nil || *p == "" {
			return nil
		}
		start := len(c.arena)
		c.arena = append(c.arena, *p...)
		return c.arena[start:len(c.arena):len(c.arena)]
	}
	for _, wc := range w.Choices {
		ch := ChoiceDelta{Index: wc.Index, Text: str(wc.Text)}
		if wc.FinishReason != nil {
			ch.FinishReason = *wc.FinishReason
		}
		if d := wc.Delta; d != nil {
			ch.Content, ch.Reasoning, ch.ReasoningContent = str(d.Content), str(d.Reasoning), str(d.ReasoningContent)
			for _, tc := range d.ToolCalls {
				t := ToolCallDelta{Index: tc.Index, ID: str(tc.ID), Type: str(tc.Type)}
				if f := tc.Function; f != nil {
					t.Name, t.Arguments = str(f.Name), str(f.Arguments)
				}
				ch.ToolCalls = append(ch.ToolCalls, t)
			}
		}
		c.Choices = append(c.Choices, ch)
	}
	if w.Usage != nil {
		c.HasUsage, c.Usage = true, *w.Usage
	}
}
