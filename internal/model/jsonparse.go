package model

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
)

// parser is a small JSON reader for the one shape a safetensors header has
// ({name: {dtype, shape, data_offsets}, __metadata__: {string: string}}).
// encoding/json is several times slower on the 10 MB of headers of a large
// sharded model; the fuzz test checks that everything accepted here is valid
// JSON.
//
// It works on one string copy of the header so that tensor names are
// substrings of it rather than one allocation each.
type parser struct {
	buf    string
	pos    int
	shapes []int64 // backing store the tensors' shapes are cut from
	// ctl is false when the text has no control characters at all (real
	// headers are compact JSON), so strings need not be checked one by one.
	ctl bool
}

func newParser(b []byte) *parser {
	return &parser{buf: string(b), ctl: hasCtlBytes(b)}
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// hasCtlBytes reports whether b holds a byte below 0x20, eight bytes at a
// time: a byte x is below 0x20 when x - 0x20 borrows and x's top bit is clear.
func hasCtlBytes(b []byte) bool {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if (x-0x20*ones)&^x&highs != 0 {
			return true
		}
	}
	for ; i < len(b); i++ {
		if b[i] < 0x20 {
			return true
		}
	}
	return false
}

func hasCtl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 {
			return true
		}
	}
	return false
}

const maxDepth = 64

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("at byte %d: %s", p.pos, fmt.Sprintf(format, args...))
}

func (p *parser) ws() {
	for p.pos < len(p.buf) {
		switch p.buf[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) expect(c byte) error {
	p.ws()
	if p.pos >= len(p.buf) {
		return p.errorf("unexpected end of header, want %q", c)
	}
	if p.buf[p.pos] != c {
		return p.errorf("want %q, found %q", c, p.buf[p.pos])
	}
	p.pos++
	return nil
}

// peek returns the next non-space byte, 0 at the end.
func (p *parser) peek() byte {
	p.ws()
	if p.pos >= len(p.buf) {
		return 0
	}
	return p.buf[p.pos]
}

// object reads a JSON object, calling fn after each key with the parser at
// the value, which fn must read.
func (p *parser) object(fn func(key string) error) error {
	if err := p.expect('{'); err != nil {
		return err
	}
	if p.peek() == '}' {
		p.pos++
		return nil
	}
	for {
		k, err := p.str()
		if err != nil {
			return err
		}
		if err := p.expect(':'); err != nil {
			return err
		}
		if err := fn(k); err != nil {
			return err
		}
		switch p.peek() {
		case '}':
			p.pos++
			return nil
		case ',':
			p.pos++
		default:
			return p.errorf("want ',' or '}' after %q", k)
		}
	}
}

// array reads a JSON array, calling fn with the parser at each element.
func (p *parser) array(fn func() error) error {
	if err := p.expect('['); err != nil {
		return err
	}
	if p.peek() == ']' {
		p.pos++
		return nil
	}
	for {
		if err := fn(); err != nil {
			return err
		}
		switch p.peek() {
		case ']':
			p.pos++
			return nil
		case ',':
			p.pos++
		default:
			return p.errorf("want ',' or ']'")
		}
	}
}

// end checks that only white space follows the value.
func (p *parser) end() error {
	p.ws()
	if p.pos != len(p.buf) {
		return p.errorf("unexpected data after the JSON object")
	}
	return nil
}

// skip skips any JSON value (fields a newer writer may add).
func (p *parser) skip(depth int) error {
	if depth > maxDepth {
		return p.errorf("nesting deeper than %d", maxDepth)
	}
	switch c := p.peek(); {
	case c == '"':
		_, err := p.str()
		return err
	case c == '{':
		return p.object(func(string) error { return p.skip(depth + 1) })
	case c == '[':
		return p.array(func() error { return p.skip(depth + 1) })
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		start := p.pos
		for p.pos < len(p.buf) && isNumByte(p.buf[p.pos]) {
			p.pos++
		}
		if !json.Valid([]byte(p.buf[start:p.pos])) {
			return p.errorf("invalid number %q", p.buf[start:p.pos])
		}
		return nil
	}
	return p.errorf("invalid value")
}
