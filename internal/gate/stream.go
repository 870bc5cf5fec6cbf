package gate

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Stream is one streamed completion read to its end and put back together:
// what health and smoke check. The benchmark reads chunks itself and keeps
// only timestamps.
type Stream struct {
	Events      int // SSE events, [DONE] included
	Chunks      int // JSON chunks
	TokenChunks int // chunks that carried output (ChoiceDelta.HasToken)

	Content          string
	Reasoning        string // delta.reasoning
	ReasoningContent string // delta.reasoning_content
	Text             string // completions: choices[].text
	ToolCalls        []StreamToolCall

	// FinishReasons lists every non-empty finish_reason in arrival order;
	// a well-formed stream has exactly one per choice.
	FinishReasons []string
	Usage         *Usage // the last usage object seen
	UsageChunks   int
	Done          bool // [DONE] arrived
	Error         *APIError

	// FirstContentChunk and FirstReasoningChunk are chunk numbers (1-based, 0
	// for never): reasoning deltas must come before content deltas.
	FirstContentChunk   int
	FirstReasoningChunk int
	// BadIndex counts choices with an index other than 0 (n=1 requests).
	BadIndex int
}

// StreamToolCall is a tool call reassembled from its deltas by index.
type StreamToolCall struct {
	Index     int
	ID        string
	Type      string
	Name      string
	Arguments string
	// IDChunks and NameChunks count the deltas that carried an id or a name
	// fragment: vLLM's tests expect each exactly once per call.
	IDChunks   int
	NameChunks int
}

// ErrNoDone is returned when a stream ends without [DONE]: the server
// closed it early or the connection broke.
var ErrNoDone = errors.New("the stream ended without data: [DONE]")

// ReadStream reads an OpenAI-style event stream to [DONE] and reassembles it.
// onChunk, when not nil, sees every decoded chunk. The Stream is returned
// also with an error; an error object sent inside the stream is returned as
// the error (an *APIError) and kept in Stream.Error.
func ReadStream(r io.Reader, onChunk func(*Chunk)) (*Stream, error) {
	st := &Stream{}
	sr := NewSSEReader(r)
	var c Chunk
	var content, reasoning, reasoningContent, text strings.Builder
	calls := map[int]*StreamToolCall{}
	finish := func() {
		st.Content, st.Reasoning = content.String(), reasoning.String()
		st.ReasoningContent, st.Text = reasoningContent.String(), text.String()
		for _, tc := range calls {
			st.ToolCalls = append(st.ToolCalls, *tc)
		}
		sort.Slice(st.ToolCalls, func(i, j int) bool { return st.ToolCalls[i].Index < st.ToolCalls[j].Index })
	}
	defer finish()
	for {
		data, err := sr.Next()
		if err == io.EOF {
			return st, ErrNoDone
		}
		if err != nil {
			return st, fmt.Errorf("reading the stream: %w", err)
		}
		st.Events++
		if IsDone(data) {
			st.Done = true
			return st, nil
		}
		if len(data) == 0 {
			continue
		}
		if err := c.Decode(data); err != nil {
			return st, err
		}
		if c.Error != nil {
			st.Error = c.Error
			// Servers send [DONE] after the error; reading on would only
			// hide the error behind a normal-looking end.
			return st, c.Error
		}
		st.Chunks++
		if onChunk != nil {
			onChunk(&c)
		}
		if c.HasUsage {
			u := c.Usage
			st.Usage = &u
			st.UsageChunks++
		}
		token := false
		for i := range c.Choices {
			ch := &c.Choices[i]
			if ch.Index != 0 {
				st.BadIndex++
			}
			if ch.HasToken() {
				token = true
			}
			content.Write(ch.Content)
			reasoning.Write(ch.Reasoning)
			reasoningContent.Write(ch.ReasoningContent)
			text.Write(ch.Text)
			if (len(ch.Content) > 0 || len(ch.Text) > 0) && st.FirstContentChunk == 0 {
				st.FirstContentChunk = st.Chunks
			}
			if (len(ch.Reasoning) > 0 || len(ch.ReasoningContent) > 0) && st.FirstReasoningChunk == 0 {
				st.FirstReasoningChunk = st.Chunks
			}
			for _, td := range ch.ToolCalls {
				tc := calls[td.Index]
				if tc == nil {
					tc = &StreamToolCall{Index: td.Index}
					calls[td.Index] = tc
				}
				if len(td.ID) > 0 {
					tc.ID = string(td.ID)
					tc.IDChunks++
				}
				if len(td.Type) > 0 {
					tc.Type = string(td.Type)
				}
				if len(td.Name) > 0 {
					tc.Name += string(td.Name)
					tc.NameChunks++
				}
				tc.Arguments += string(td.Arguments)
			}
			if ch.FinishReason != "" {
				st.FinishReasons = append(st.FinishReasons, ch.FinishReason)
			}
		}
		if token {
			st.TokenChunks++
		}
	}
}

// Summary renders the stream as stable text, for tests and -json details.
func (st *Stream) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "events %d, chunks %d, token chunks %d, done %v\n", st.Events, st.Chunks, st.TokenChunks, st.Done)
	for _, f := range []struct{ name, v string }{
		{"content", st.Content}, {"reasoning", st.Reasoning},
		{"reasoning_content", st.ReasoningContent}, {"text", st.Text},
	} {
		if f.v != "" {
			fmt.Fprintf(&b, "%s: %q\n", f.name, f.v)
		}
	}
	if st.FirstReasoningChunk > 0 || st.FirstContentChunk > 0 {
		fmt.Fprintf(&b, "first reasoning chunk %d, first content chunk %d\n", st.FirstReasoningChunk, st.FirstContentChunk)
	}
	for _, tc := range st.ToolCalls {
		fmt.Fprintf(&b, "tool call %d: id %q (%d chunks) type %q name %q (%d chunks) arguments %s\n",
			tc.Index, tc.ID, tc.IDChunks, tc.Type, tc.Name, tc.NameChunks, tc.Arguments)
	}
	fmt.Fprintf(&b, "finish reasons %q\n", st.FinishReasons)
	if st.Usage != nil {
		fmt.Fprintf(&b, "usage prompt %d completion %d total %d (%d usage chunks)\n",
			st.Usage.PromptTokens, st.Usage.CompletionTokens, st.Usage.TotalTokens, st.UsageChunks)
	}
	if st.Error != nil {
		fmt.Fprintf(&b, "error: %v\n", st.Error)
	}
	return b.String()
}
