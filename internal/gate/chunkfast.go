package gate

import (
	"bytes"
	"errors"
	"unicode/utf8"
)

// fastDecoder is a single-pass JSON reader for the chunk shape, written so the
// benchmark's hot loop allocates nothing: encoding/json costs ~2 µs and a few
// allocations per chunk, this ~0.3 µs and none. It gives the same result as
// encoding/json into wireChunk (the fuzz test checks it) and falls back to it
// (errFallback) for every shape it does not handle itself.
type fastDecoder struct {
	data []byte
	pos  int
	c    *Chunk
}

var errSyntax = errors.New("stream chunk is not valid JSON")

// maxDepth is encoding/json's nesting limit; deeper input goes to the
// fallback so the error is encoding/json's.
const maxDepth = 10000

func (d *fastDecoder) ws() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, 0 at the end.
func (d *fastDecoder) peek() byte {
	d.ws()
	if d.pos >= len(d.data) {
		return 0
	}
	return d.data[d.pos]
}

func (d *fastDecoder) chunk() error {
	var seen uint8
	err := d.object(func(key []byte) error {
		var bit uint8
		switch string(key) {
		case "choices":
			bit = 1
		case "usage":
			bit = 2
		case "error":
			bit = 4
		case "object":
			bit = 8
		default:
			if foldsTo(key, "choices", "usage", "error", "object") {
				return errFallback
			}
			return d.skip(1)
		}
		if seen&bit != 0 {
			return errFallback
		}
		seen |= bit
		switch bit {
		case 1:
			return d.choices()
		case 2:
			return d.usage()
		case 4:
			if d.null() {
				return nil
			}
			return errFallback
		default:
			if d.null() {
				return nil
			}
			s, ok, err := d.str()
			if err != nil {
				return err
			}
			if !ok || string(s) == "error" {
				return errFallback
			}
			return nil
		}
	})
	if err != nil {
		return err
	}
	d.ws()
	if d.pos != len(d.data) {
		return errFallback
	}
	return nil
}

// foldsTo reports whether key matches one of names case-insensitively, which
// encoding/json would treat as that field.
func foldsTo(key []byte, names ...string) bool {
	for _, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return true
		}
	}
	return false
}

// object reads {"key": value, ...}, calling field for each key with the
// position at the value. Keys with escapes go to the fallback.
func (d *fastDecoder) object(field func(key []byte) error) error {
	if d.peek() != '{' {
		return errFallback
	}
	d.pos++
	if d.peek() == '}' {
		d.pos++
		return nil
	}
	for {
		if d.peek() != '"' {
			return errFallback
		}
		key, err := d.rawKey()
		if err != nil {
			return err
		}
		if d.peek() != ':' {
			return errFallback
		}
		d.pos++
		d.ws()
		if err := field(key); err != nil {
			return err
		}
		switch d.peek() {
		case ',':
			d.pos++
		case '}':
			d.pos++
			return nil
		default:
			return errFallback
		}
	}
}

// rawKey reads a key without escapes and returns its bytes.
func (d *fastDecoder) rawKey() ([]byte, error) {
	start := d.pos + 1
	for i := start; i < len(d.data); i++ {
		switch c := d.data[i]; {
		case c == '"':
			d.pos = i + 1
			return d.data[start:i], nil
		case c == '\\' || c < 0x20:
			return nil, errFallback
		}
	}
	return nil, errFallback
}

// array reads [v, ...] (or null), calling elem with the position at each value.
func (d *fastDecoder) array(elem func() error) error {
	if d.null() {
		return nil
	}
	if d.peek() != '[' {
		return errFallback
	}
	d.pos++
	if d.peek() == ']' {
		d.pos++
		return nil
	}
	for {
		d.ws()
		if err := elem(); err != nil {
			return err
		}
		switch d.peek() {
		case ',':
			d.pos++
		case ']':
			d.pos++
			return nil
		default:
			return errFallback
		}
	}
}

// objectOrNull reads an object like object, or a null as nothing.
func (d *fastDecoder) objectOrNull(field func(key []byte) error) error {
	if d.null() {
		return nil
	}
	return d.object(field)
}

// null consumes a null literal if one is next.
func (d *fastDecoder) null() bool {
	d.ws()
	if bytes.HasPrefix(d.data[d.pos:], []byte("null")) {
		d.pos += 4
		return true
	}
	return false
}

func (d *fastDecoder) choices() error {
	return d.array(func() error {
		c := d.c
		n := len(c.Choices)
		if n < cap(c.Choices) {
			c.Choices = c.Choices[:n+1]
			tc := c.Choices[n].ToolCalls[:0]
			c.Choices[n] = ChoiceDelta{ToolCalls: tc}
		} else {
			c.Choices = append(c.Choices, ChoiceDelta{})
		}
		var seen uint8
		return d.objectOrNull(func(key []byte) error {
			ch := &c.Choices[n]
			var bit uint8
			switch string(key) {
			case "index":
				bit = 1
			case "delta":
				bit = 2
			case "text":
				bit = 4
			case "finish_reason":
				bit = 8
			default:
				if foldsTo(key, "index", "delta", "text", "finish_reason") {
					return errFallback
				}
				return d.skip(2)
			}
			if seen&bit != 0 {
				return errFallback
			}
			seen |= bit
			switch bit {
			case 1:
				return d.int(&ch.Index)
			case 2:
				return d.delta(n)
			case 4:
				return d.strField(&ch.Text)
			default:
				var b []byte
				if err := d.strField(&b); err != nil {
					return err
				}
				ch.FinishReason = finishReason(b)
				return nil
			}
		})
	})
}

// finishReason returns b as a string without allocating for the usual values.
func finishReason(b []byte) string {
	switch string(b) {
	case "":
		return ""
	case "stop":
		return "stop"
	case "length":
		return "length"
	case "tool_calls":
		return "tool_calls"
	case "abort":
		return "abort"
	case "error":
		return "error"
	}
	return string(b)
}

func (d *fastDecoder) delta(n int) error {
	var seen uint8
	return d.objectOrNull(func(key []byte) error {
		ch := &d.c.Choices[n]
		var bit uint8
		switch string(key) {
		case "content":
			bit = 1
		case "reasoning":
			bit = 2
		case "reasoning_content":
			bit = 4
		case "tool_calls":
			bit = 8
		default:
			if foldsTo(key, "content", "reasoning", "reasoning_content", "tool_calls") {
				return errFallback
			}
			return d.skip(3)
		}
		if seen&bit != 0 {
			return errFallback
		}
		seen |= bit
		switch bit {
		case 1:
			return d.strField(&ch.Content)
		case 2:
			return d.strField(&ch.Reasoning)
		case 4:
			return d.strField(&ch.ReasoningContent)
		default:
			return d.toolCalls(n)
		}
	})
}

func (d *fastDecoder) toolCalls(n int) error {
	return d.array(func() error {
		ch := &d.c.Choices[n]
		ch.ToolCalls = append(ch.ToolCalls, ToolCallDelta{})
		k := len(ch.ToolCalls) - 1
		var seen uint8
		return d.objectOrNull(func(key []byte) error {
			tc := &d.c.Choices[n].ToolCalls[k]
			var bit uint8
			switch string(key) {
			case "index":
				bit = 1
			case "id":
				bit = 2
			case "type":
				bit = 4
			case "function":
				bit = 8
			default:
				if foldsTo(key, "index", "id", "type", "function") {
					return errFallback
				}
				return d.skip(5)
			}
			if seen&bit != 0 {
				return errFallback
			}
			seen |= bit
			switch bit {
			case 1:
				return d.int(&tc.Index)
			case 2:
				return d.strField(&tc.ID)
			case 4:
				return d.strField(&tc.Type)
			default:
				return d.function(n, k)
			}
		})
	})
}

func (d *fastDecoder) function(n, k int) error {
	var seen uint8
	return d.objectOrNull(func(key []byte) error {
		tc := &d.c.Choices[n].ToolCalls[k]
		switch {
		case string(key) == "name" && seen&1 == 0:
			seen |= 1
			return d.strField(&tc.Name)
		case string(key) == "arguments" && seen&2 == 0:
			seen |= 2
			return d.strField(&tc.Arguments)
		case foldsTo(key, "name", "arguments"):
			return errFallback
		}
		return d.skip(6)
	})
}

func (d *fastDecoder) usage() error {
	if d.null() {
		return nil
	}
	// Set before the object is read: anything but an object falls back,
	// which starts over from a reset chunk.
	c := d.c
	c.HasUsage = true
	var seen uint8
	return d.object(func(key []byte) error {
		var dst *int
		var bit uint8
		switch string(key) {
		case "prompt_tokens":
			dst, bit = &c.Usage.PromptTokens, 1
		case "completion_tokens":
			dst, bit = &c.Usage.CompletionTokens, 2
		case "total_tokens":
			dst, bit = &c.Usage.TotalTokens, 4
		default:
			if foldsTo(key, "prompt_tokens", "completion_tokens", "total_tokens") {
				return errFallback
			}
			return d.skip(2)
		}
		if seen&bit != 0 {
			return errFallback
		}
		seen |= bit
		return d.int(dst)
	})
}

// int reads a JSON integer (or null, which leaves *dst as is, like
// encoding/json). Anything else goes to the fallback.
func (d *fastDecoder) int(dst *int) error {
	if d.null() {
		return nil
	}
	i := d.pos
	neg := false
	if i < len(d.data) && d.data[i] == '-' {
		neg = true
		i++
	}
	start := i
	var v int64
	for i < len(d.data) && d.data[i] >= '0' && d.data[i] <= '9' {
		if v > (1<<62)/10 {
			return errFallback
		}
		v = v*10 + int64(d.data[i]-'0')
		i++
	}
	if i == start || (d.data[start] == '0' && i-start > 1) {
		return errFallback
	}
	if i < len(d.data) {
		switch d.data[i] {
		case '.', 'e', 'E':
			return errFallback
		}
	}
	if neg {
		v = -v
	}
	*dst = int(v)
	d.pos = i
	return nil
}

// strField reads a string (or null, which leaves *dst nil) into the arena.
func (d *fastDecoder) strField(dst *[]byte) error {
	if d.null() {
		return nil
	}
	s, ok, err := d.str()
	if err != nil {
		return err
	}
	if !ok {
		return errFallback
	}
	if len(s) == 0 {
		*dst = nil
	} else {
		*dst = s
	}
	return nil
}

// str reads a JSON string, unescaped into the arena as encoding/json would
// (invalid UTF-8 and lone surrogates become U+FFFD). ok is false when the
// next value is not a string.
func (d *fastDecoder) str() (s []byte, ok bool, err error) {
	if d.pos >= len(d.data) || d.data[d.pos] != '"' {
		return nil, false, nil
	}
	c := d.c
	start := len(c.arena)
	i := d.pos + 1
	for {
		// Copy the plain run in one append.
		j := i
		for j < len(d.data) {
			b := d.data[j]
			if b == '"' || b == '\\' || b < 0x20 || b >= utf8.RuneSelf {
				break
			}
			j++
		}
		c.arena = append(c.arena, d.data[i:j]...)
		i = j
		if i >= len(d.data) {
			return nil, false, errSyntax
		}
		switch b := d.data[i]; {
		case b == '"':
			d.pos = i + 1
			return c.arena[start:len(c.arena):len(c.arena)], true, nil
		case b < 0x20:
			return nil, false, errSyntax
		case b == '\\':
			n, err := d.escape(i)
			if err != nil {
				return nil, false, err
			}
			i = n
		default:
			r, size := utf8.DecodeRune(d.data[i:])
			if r == utf8.RuneError && size == 1 {
				c.arena = utf8.AppendRune(c.arena, utf8.RuneError)
			} else {
				c.arena = append(c.arena, d.data[i:i+size]...)
			}
			i += size
		}
	}
}

// escape decodes the escape at data[i] == '\\' into the arena and returns the
// index after it.
func (d *fastDecoder) escape(i int) (int, error) {
	if i+1 >= len(d.data) {
		return 0, errSyntax
	}
	c := d.c
	switch e := d.data[i+1]; e {
	case '"', '\\', '/':
		c.arena = append(c.arena, e)
	case 'b':
		c.arena = append(c.arena, '\b')
	case 'f':
		c.arena = append(c.arena, '\f')
	case 'n':
		c.arena = append(c.arena, '\n')
	case 'r':
		c.arena = append(c.arena, '\r')
	case 't':
		c.arena = append(c.arena, '\t')
	case 'u':
		r, ok := hex4(d.data[i+2:])
		if !ok {
			return 0, errSyntax
		}
		i += 6
		if utf16IsSurrogate(r) {
			// A high surrogate followed by an escaped low one is one rune;
			// anything else is U+FFFD (encoding/json's rule).
			if r < 0xDC00 && i+1 < len(d.data) && d.data[i] == '\\' && d.data[i+1] == 'u' {
				if r2, ok := hex4(d.data[i+2:]); ok && r2 >= 0xDC00 && r2 <= 0xDFFF {
					c.arena = utf8.AppendRune(c.arena, (r-0xD800)<<10+(r2-0xDC00)+0x10000)
					return i + 6, nil
				}
			}
			r = utf8.RuneError
		}
		c.arena = utf8.AppendRune(c.arena, r)
		return i, nil
	default:
		return 0, errSyntax
	}
	return i + 2, nil
}

func utf16IsSurrogate(r rune) bool { return r >= 0xD800 && r <= 0xDFFF }

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// skip validates and steps over any JSON value.
func (d *fastDecoder) skip(depth int) error {
	if depth > maxDepth {
		return errFallback
	}
	switch d.peek() {
	case '{':
		return d.object(func([]byte) error { return d.skip(depth + 1) })
	case '[':
		return d.array(func() error { return d.skip(depth + 1) })
	case '"':
		return d.skipString()
	case 't':
		return d.literal("true")
	case 'f':
		return d.literal("false")
	case 'n':
		return d.literal("null")
	default:
		return d.skipNumber()
	}
}

func (d *fastDecoder) literal(lit string) error {
	if !bytes.HasPrefix(d.data[d.pos:], []byte(lit)) {
		return errFallback
	}
	d.pos += len(lit)
	return nil
}

func (d *fastDecoder) skipString() error {
	i := d.pos + 1
	for i < len(d.data) {
		switch b := d.data[i]; {
		case b == '"':
			d.pos = i + 1
			return nil
		case b < 0x20:
			return errFallback
		case b == '\\':
			if i+1 >= len(d.data) {
				return errFallback
			}
			switch d.data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if _, ok := hex4(d.data[i+2:]); !ok {
					return errFallback
				}
				i += 6
			default:
				return errFallback
			}
		default:
			i++
		}
	}
	return errFallback
}

// skipNumber steps over a number in JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *fastDecoder) skipNumber() error {
	b, i := d.data, d.pos
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return errFallback
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return errFallback
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return errFallback
		}
	}
	d.pos = i
	return nil
}
