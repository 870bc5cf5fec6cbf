package rehearsal

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// The rehearsal engine against real clients: openai-go (here) and the
// openai npm SDK (npm_test.go), for every emulated engine version.

// engineVersions are the engine versions the rehearsal emulates.
var engineVersions = []struct{ kind, version, parser string }{
	{KindVLLM, "0.8.5", "hermes"},
	{KindVLLM, "0.16.0", "hermes"},
	{KindSGLang, "0.5.6.post2", "qwen25"},
}

func clientServer(t *testing.T, kind, version, parser string) *httptest.Server {
	t.Helper()
	_, srv := newTestServer(t, ServeOptions{Kind: kind, Version: version, ServedNames: []string{"qwen"},
		MaxModelLen: 2048, OutputLen: 8, EnableAutoToolChoice: true, ToolCallParser: parser, Metrics: true})
	return srv
}

func newClient(url string) openai.Client {
	return openai.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0),
		option.WithRequestTimeout(30*time.Second))
}

var goWeatherTool = openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
	Name:        "get_weather",
	Description: openai.String("The weather in a city"),
	Parameters: openai.FunctionParameters{"type": "object",
		"properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}},
})

func TestOpenAIGoClient(t *testing.T) {
	for _, ev := range engineVersions {
		t.Run(ev.kind+"-"+ev.version, func(t *testing.T) {
			srv := clientServer(t, ev.kind, ev.version, ev.parser)
			client := newClient(srv.URL)
			ctx := context.Background()

			// Streamed tool call: the accumulator sees the call finish.
			stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
				Model:         "qwen",
				Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is the weather in Paris?")},
				Tools:         []openai.ChatCompletionToolUnionParam{goWeatherTool},
				StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
			})
			acc := openai.ChatCompletionAccumulator{}
			var finished []openai.FinishedChatCompletionToolCall
			for stream.Next() {
				acc.AddChunk(stream.Current())
				if tc, ok := acc.JustFinishedToolCall(); ok {
					finished = append(finished, tc)
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if len(finished) != 1 || finished[0].Name != "get_weather" {
				t.Fatalf("JustFinishedToolCall fired %d times: %+v", len(finished), finished)
			}
			var args struct{ City string }
			if err := json.Unmarshal([]byte(finished[0].Arguments), &args); err != nil || args.City == "" {
				t.Errorf("arguments %q: %v", finished[0].Arguments, err)
			}
			if got := acc.Choices[0].FinishReason; got != "tool_calls" {
				t.Errorf("finish_reason %q", got)
			}
			if acc.Usage.CompletionTokens == 0 || acc.Usage.TotalTokens != acc.Usage.PromptTokens+acc.Usage.CompletionTokens {
				t.Errorf("usage %+v", acc.Usage)
			}

			// Non-streamed: the same call, and the same usage.
			resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
				Model:    "qwen",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is the weather in Paris?")},
				Tools:    []openai.ChatCompletionToolUnionParam{goWeatherTool},
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Choices[0].Message.ToolCalls) != 1 || resp.Choices[0].Message.ToolCalls[0].Function.Arguments != finished[0].Arguments ||
				resp.Usage.CompletionTokens != acc.Usage.CompletionTokens || resp.Usage.PromptTokens != acc.Usage.PromptTokens {
				t.Errorf("non-streamed %+v usage %+v; streamed usage %+v", resp.Choices[0].Message, resp.Usage, acc.Usage)
			}

			// Plain text with n=2: both choices, the prompt counted once.
			text, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
				Model: "qwen", N: openai.Int(2), MaxTokens: openai.Int(100),
				Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief"), openai.UserMessage("hello")},
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(text.Choices) != 2 || text.Choices[1].Message.Content == "" || text.Choices[0].FinishReason != "stop" ||
				text.Usage.CompletionTokens != 2*9 { // 8 tokens of text and the EOS, twice
				t.Errorf("n=2: %d choices, usage %+v", len(text.Choices), text.Usage)
			}

			// Completions, streamed.
			cs := client.Completions.NewStreaming(ctx, openai.CompletionNewParams{
				Model: "qwen", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon")}, MaxTokens: openai.Int(5),
			})
			var sb strings.Builder
			var finish string
			for cs.Next() {
				for _, c := range cs.Current().Choices {
					sb.WriteString(c.Text)
					if c.FinishReason != "" {
						finish = string(c.FinishReason)
					}
				}
			}
			if cs.Err() != nil || sb.Len() == 0 || finish != "length" {
				t.Errorf("completions stream: %q finish %q err %v", sb.String(), finish, cs.Err())
			}

			// Errors: a context overflow is a 400 the client surfaces as
			// *openai.Error (vLLM 0.16.0 nests it under "error", which the
			// client reads the message from).
			_, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
				Model: "qwen", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(strings.Repeat("word ", 3000))},
			})
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
				t.Fatalf("overflow: %v", err)
			}
			if ev.version == "0.16.0" && !strings.Contains(apiErr.Message, "maximum context length is 2048 tokens") {
				t.Errorf("overflow message %q", apiErr.Message)
			}
			if ev.kind == KindVLLM {
				_, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
					Model: "other", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
				if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
					t.Errorf("unknown model: %v", err)
				}
			}
			// An error after the stream started ends the stream with an error.
			es := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
				Model: "qwen", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
			}, option.WithHeader("X-Rehearsal-Fail", "stream_error_after=2"))
			n := 0
			for es.Next() {
				n++
			}
			if es.Err() == nil || !strings.Contains(es.Err().Error(), "injected stream error") {
				t.Errorf("stream error after %d chunks: %v", n, es.Err())
			}

			// The Responses API where the engine serves it.
			r, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "qwen",
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hello")}, MaxOutputTokens: openai.Int(50)})
			if ev.kind != KindVLLM || ev.version == "0.8.5" {
				if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
					t.Errorf("responses on %s %s: %v", ev.kind, ev.version, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.OutputText() == "" || r.Status != "completed" || r.Usage.OutputTokens != 9 {
				t.Errorf("response %q status %q usage %+v", r.OutputText(), r.Status, r.Usage)
			}
			rs := client.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: "qwen",
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hello")}})
			var deltas strings.Builder
			var done responses.Response
			for rs.Next() {
				switch e := rs.Current(); e.Type {
				case "response.output_text.delta":
					deltas.WriteString(e.Delta)
				case "response.completed":
					done = e.Response
				}
			}
			if rs.Err() != nil || deltas.String() != r.OutputText() || done.OutputText() != r.OutputText() {
				t.Errorf("responses stream %q / %q, err %v; want %q", deltas.String(), done.OutputText(), rs.Err(), r.OutputText())
			}
		})
	}
}
