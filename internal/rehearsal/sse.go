package rehearsal

import (
	"strconv"
	"unicode/utf8"
)

// Hand-written JSON appenders for the hot path: one chunk per token per
// stream, 25,000+ chunks a second at 256 streams, so no reflection.

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string. Like Python's json with
// ensure_ascii=False (what pydantic writes), non-ASCII stays as UTF-8; invalid
// UTF-8 becomes U+FFFD, as a detokenizer's errors="replace" does.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20 || c == 0x7f:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, "\ufffd"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

func appendUsage(b []byte, u usage) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(u.PromptTokens), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(u.TotalTokens), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(u.CompletionTokens), 10)
	return append(b, '}')
}

// sseData frames one event: "data: <payload>\n\n".
func sseData(b []byte, payload []byte) []byte {
	b = append(b, "data: "...)
	b = append(b, payload...)
	return append(b, '\n', '\n')
}

var sseDone = []byte("data: [DONE]\n\n")
