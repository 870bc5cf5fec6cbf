package model

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"math/bits"
	"slices"
	"strings"
	"unicode/utf8"
)

// MaxHeaderLen bounds a safetensors header. Real headers are well under 10 MiB
// (DeepSeek-V3's largest shard has about 100 KiB); the bound keeps a corrupt
// length from allocating gigabytes.
const MaxHeaderLen = 100 << 20

// Header is a parsed safetensors header.
type Header struct {
	Len       int64             // the JSON header's length in bytes
	Tensors   []Tensor          // in header order; File is left empty
	Metadata  map[string]string // __metadata__
	DataBytes int64             // the data section's size: the largest end offset
}

// dtypeBits is the storage size of each safetensors dtype. Packed quantized
// weights (AWQ/GPTQ int4 in I32, MXFP4/NVFP4 blocks in U8) are stored in these
// dtypes, so their bytes follow from the shape as for any other tensor.
var dtypeBits = map[string]int64{
	"BOOL": 8, "U8": 8, "I8": 8, "U16": 16, "I16": 16, "U32": 32, "I32": 32, "U64": 64, "I64": 64,
	"F16": 16, "BF16": 16, "F32": 32, "F64": 64, "C64": 64,
	"F8_E4M3": 8, "F8_E5M2": 8, "F8_E8M0": 8, "E8M0": 8, "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8,
	"F6_E2M3": 6, "F6_E3M2": 6, "F4": 4,
}

// nameSet finds duplicate names by their 64-bit hashes, comparing the
// strings only on a hash match: with 92,000 long tensor names a string-keyed
// map costs more than the whole header parse.
type nameSet struct {
	m    map[uint64]string
	more map[string]struct{} // names whose hash another name already has
}

var nameSeed = maphash.MakeSeed()

func newNameSet(n int) *nameSet {
	return &nameSet{m: make(map[uint64]string, n)}
}

// add returns false when name is already in the set.
func (s *nameSet) add(name string) bool {
	h := maphash.String(nameSeed, name)
	prev, ok := s.m[h]
	switch {
	case !ok:
		s.m[h] = name
		return true
	case prev == name:
		return false
	}
	if s.more == nil {
		s.more = map[string]struct{}{}
	}
	if _, dup := s.more[name]; dup {
		return false
	}
	s.more[name] = struct{}{}
	return true
}

// nameSum is an order-independent fingerprint of a set of names: their
// count and the sum of their hashes.
type nameSum struct {
	count int
	sum   uint64
}

func (n *nameSum) add(name string) {
	n.count++
	n.sum += maphash.String(nameSeed, name)
}

// dtypeNames interns the dtype strings.
var dtypeNames = func() map[string]string {
	m := make(map[string]string, len(dtypeBits))
	for k := range dtypeBits {
		m[k] = k
	}
	return m
}()

// DtypeBits returns the storage size in bits of a safetensors dtype, 0 when unknown.
func DtypeBits(dtype string) int64 { return dtypeBits[dtype] }

// ReadHeader reads the header of a safetensors file of size bytes. name is
// used in error messages only. It never allocates more than the header's
// length (bounded by MaxHeaderLen and by size) and checks that the tensors'
// byte ranges match their dtype and shape, do not overlap, leave no holes and
// fit the header's own data section; whether the file holds that much data is
// the caller's check (size - 8 - Len versus DataBytes).
func ReadHeader(r io.ReaderAt, size int64, name string) (*Header, error) {
	return readHeader(r, size, name, nil)
}

// readHeader is ReadHeader with a scratch buffer that a caller reading many
// shards reuses (ParseHeader copies what it keeps).
func readHeader(r io.ReaderAt, size int64, name string, scratch []byte) (*Header, error) {
	if size < 8 {
		return nil, fmt.Errorf("%s: %d bytes is too short for a safetensors file (it starts with an 8-byte header length); the file is truncated or not safetensors", name, size)
	}
	// One read covers the length and most real headers (tens of KiB): on a
	// 163-shard model every saved system call counts.
	first := scratch
	if int64(cap(first)) < min(size, 8+firstRead) {
		first = make([]byte, min(size, 8+firstRead))
	}
	first = first[:min(size, 8+firstRead)]
	k, err := r.ReadAt(first, 0)
	if k < 8 {
		return nil, fmt.Errorf("%s: reading the header length: %w", name, err)
	}
	first = first[:k] // short only when the file shrank since its size was taken
	n := binary.LittleEndian.Uint64(first)
	if n > MaxHeaderLen {
		return nil, fmt.Errorf("%s: header length %d is larger than %d bytes; the file is corrupt or not safetensors", name, n, MaxHeaderLen)
	}
	if int64(n) > size-8 {
		return nil, fmt.Errorf("%s: header length %d is past the end of the file (%d bytes); the file is truncated", name, n, size)
	}
	buf := first[8:]
	if int64(n) <= int64(len(buf)) {
		buf = buf[:n]
	} else {
		buf = make([]byte, n)
		have := copy(buf, first[8:])
		if k, err := r.ReadAt(buf[have:], 8+int64(have)); k < len(buf)-have {
			return nil, fmt.Errorf("%s: reading the %d-byte header: %w", name, n, err)
		}
	}
	h, err := ParseHeader(buf)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	h.Len = int64(n)
	return h, nil
}

// firstRead is how much of the header ReadHeader reads with the length.
const firstRead = 128 << 10

// ParseHeader parses and checks the JSON header of a safetensors file.
func ParseHeader(buf []byte) (*Header, error) {
	if !utf8.Valid(buf) {
		return nil, fmt.Errorf("invalid safetensors header: it is not UTF-8 text")
	}
	p := newParser(buf)
	h := &Header{Tensors: make([]Tensor, 0, len(buf)/120)}
	if err := p.header(h); err != nil {
		return nil, fmt.Errorf("invalid safetensors header: %w", err)
	}
	if err := checkOffsets(h); err != nil {
		return nil, fmt.Errorf("invalid safetensors header: %w", err)
	}
	return h, nil
}

// checkOffsets checks each tensor's size against its dtype and shape and that
// the ranges tile the data section from 0 without overlaps or holes, as the
// safetensors library itself requires before an engine can load the file.
func checkOffsets(h *Header) error {
	idx := make([]int, len(h.Tensors))
	for i := range idx {
		idx[i] = i
	}
	for _, t := range h.Tensors {
		b, o := t.Offsets[0], t.Offsets[1]
		if o < b {
			return fmt.Errorf("tensor %q: data_offsets [%d, %d] end before they begin", t.Name, b, o)
		}
		if o-b != t.Bytes {
			return fmt.Errorf("tensor %q: dtype %s and shape %v make %d bytes, but data_offsets [%d, %d] hold %d", t.Name, t.Dtype, t.Shape, t.Bytes, b, o, o-b)
		}
	}
	// Writers lay tensors out in header order, so the sort is usually skipped.
	sorted := true
	for k := 1; k < len(h.Tensors) && sorted; k++ {
		sorted = h.Tensors[k-1].Offsets[0] < h.Tensors[k].Offsets[0] ||
			h.Tensors[k-1].Offsets[0] == h.Tensors[k].Offsets[0] && h.Tensors[k-1].Offsets[1] <= h.Tensors[k].Offsets[1]
	}
	if !sorted {
		slices.SortFunc(idx, func(a, b int) int {
			ta, tb := &h.Tensors[a], &h.Tensors[b]
			if ta.Offsets[0] != tb.Offsets[0] {
				return cmpInt(ta.Offsets[0], tb.Offsets[0])
			}
			return cmpInt(ta.Offsets[1], tb.Offsets[1])
		})
	}
	var end int64
	var prev string
	for _, i := range idx {
		t := &h.Tensors[i]
		switch {
		case t.Offsets[0] < end:
			return fmt.Errorf("tensors %q and %q overlap (data_offsets [%d, %d] begin before %d)", prev, t.Name, t.Offsets[0], t.Offsets[1], end)
		case t.Offsets[0] > end:
			if prev == "" {
				return fmt.Errorf("tensor %q begins at %d: the data section has %d unused bytes at its start", t.Name, t.Offsets[0], t.Offsets[0])
			}
			return fmt.Errorf("%d unused bytes between tensors %q and %q (data_offsets leave a hole)", t.Offsets[0]-end, prev, t.Name)
		}
		end = t.Offsets[1]
		prev = t.Name
	}
	h.DataBytes = end
	return nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (p *parser) header(h *Header) error {
	seen := newNameSet(len(p.buf) / 120)
	err := p.object(func(key string) error {
		if !seen.add(key) {
			return p.errorf("tensor %q is listed twice", key)
		}
		if key == "__metadata__" {
			var err error
			h.Metadata, err = p.metadata()
			return err
		}
		t, err := p.tensor(key)
		if err != nil {
			return err
		}
		h.Tensors = append(h.Tensors, t)
		return nil
	})
	if err != nil {
		return err
	}
	// The writer pads the header with spaces to an 8-byte boundary; the
	// safetensors library accepts nothing else after the object.
	return p.end()
}

func (p *parser) metadata() (map[string]string, error) {
	if p.peek() == 'n' {
		return nil, p.literal("null")
	}
	m := map[string]string{}
	err := p.object(func(k string) error {
		if p.peek() != '"' {
			return p.errorf("__metadata__ value of %q is not a string", k)
		}
		v, err := p.str()
		m[k] = v
		return err
	})
	return m, err
}

func (p *parser) tensor(name string) (Tensor, error) {
	t := Tensor{Name: name}
	var haveDtype, haveShape, haveOffsets bool
	err := p.object(func(k string) error {
		var err error
		switch k {
		case "dtype":
			if p.peek() != '"' {
				return p.errorf("tensor %q: dtype is not a string", name)
			}
			t.Dtype, err = p.dtype()
			haveDtype = true
		case "shape":
			if t.Shape, err = p.ints(name, "shape", -1); t.Shape == nil {
				t.Shape = []int64{}
			}
			haveShape = true
		case "data_offsets":
			var o []int64
			if o, err = p.ints(name, "data_offsets", 2); err == nil {
				t.Offsets = [2]int64{o[0], o[1]}
			}
			haveOffsets = true
		default:
			err = p.skip(0)
		}
		return err
	})
	if err != nil {
		return t, fmt.Errorf("tensor %q: %w", name, err)
	}
	switch {
	case !haveDtype:
		return t, fmt.Errorf("tensor %q has no dtype", name)
	case !haveShape:
		return t, fmt.Errorf("tensor %q has no shape", name)
	case !haveOffsets:
		return t, fmt.Errorf("tensor %q has no data_offsets", name)
	}
	bitsPer := dtypeBits[t.Dtype]
	if bitsPer == 0 {
		return t, fmt.Errorf("tensor %q: unknown dtype %q (roofline knows %s)", name, t.Dtype, knownDtypes())
	}
	elems := uint64(1)
	for _, d := range t.Shape {
		hi, lo := bits.Mul64(elems, uint64(d))
		if hi != 0 || lo > math.MaxInt64/8 {
			return t, fmt.Errorf("tensor %q: shape %v is too large", name, t.Shape)
		}
		elems = lo
	}
	nbits := elems * uint64(bitsPer)
	if nbits%8 != 0 {
		return t, fmt.Errorf("tensor %q: %d elements of %s do not fill whole bytes", name, elems, t.Dtype)
	}
	t.Bytes = int64(nbits / 8)
	return t, nil
}

func knownDtypes() string {
	names := make([]string, 0, len(dtypeBits))
	for k := range dtypeBits {
		names = append(names, k)
	}
	slices.Sort(names)
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}

// dtype reads the dtype string without allocating for the known ones.
func (p *parser) dtype() (string, error) {
	p.ws()
	start := p.pos + 1
	if end := start; end <= len(p.buf) {
		for end < len(p.buf) && p.buf[end] != '"' && p.buf[end] != '\\' && p.buf[end] >= 0x20 {
			end++
		}
		if end < len(p.buf) && p.buf[end] == '"' {
			if k, ok := dtypeNames[p.buf[start:end]]; ok {
				p.pos = end + 1
				return k, nil
			}
		}
	}
	return p.str()
}

// ints reads an array of non-negative integers; want >= 0 requires that many.
// The values are cut from p.shapes, one allocation per few hundred tensors.
func (p *parser) ints(name, field string, want int) ([]int64, error) {
	if len(p.shapes) < 64 {
		p.shapes = make([]int64, 4096)
	}
	out := p.shapes[:0:64]
	err := p.array(func() error {
		p.ws()
		start := p.pos
		for p.pos < len(p.buf) && isNumByte(p.buf[p.pos]) {
			p.pos++
		}
		tok := p.buf[start:p.pos]
		if tok == "" {
			return p.errorf("%s holds something other than a number", field)
		}
		v, err := parseUint(tok)
		if err != nil {
			return fmt.Errorf("%s %s %v", field, tok, err)
		}
		if len(out) == cap(out) {
			return fmt.Errorf("%s has more than %d entries", field, cap(out))
		}
		out = append(out, v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if want >= 0 && len(out) != want {
		return nil, fmt.Errorf("%s has %d entries, want %d", field, len(out), want)
	}
	p.shapes = p.shapes[len(out):]
	return out[:len(out):len(out)], nil
}

func isNumByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// parseUint parses a JSON integer that must be non-negative and fit int64.
func parseUint(tok string) (int64, error) {
	if tok[0] == '-' {
		if len(tok) > 1 && tok[1] >= '0' && tok[1] <= '9' {
			return 0, fmt.Errorf("is negative")
		}
		return 0, fmt.Errorf("is not a non-negative integer")
	}
	if len(tok) > 1 && tok[0] == '0' {
		return 0, fmt.Errorf("is not a JSON integer")
	}
	var v uint64
	for i := 0; i < len(tok); i++ {
		c := tok[i] - '0'
		if c > 9 {
			return 0, fmt.Errorf("is not a non-negative integer")
		}
		v = v*10 + uint64(c)
	}
	// 18 digits cannot overflow; longer ones are checked once, not per digit.
	if len(tok) > 18 && (len(tok) > 19 || v > math.MaxInt64) {
		return 0, fmt.Errorf("is too large")
	}
	return int64(v), nil
}

// str reads a JSON string.
func (p *parser) str() (string, error) {
	if err := p.expect('"'); err != nil {
		return "", err
	}
	start := p.pos
	// Fast path: no escapes, as in every real tensor name.
	if n := strings.IndexByte(p.buf[start:], '"'); n >= 0 {
		s := p.buf[start : start+n]
		if strings.IndexByte(s, '\\') < 0 && (!p.ctl || !hasCtl(s)) {
			p.pos = start + n + 1
			return s, nil
		}
	}
	for p.pos < len(p.buf) {
		switch c := p.buf[p.pos]; {
		case c == '"':
			p.pos++
			var s string
			if err := json.Unmarshal([]byte(p.buf[start-1:p.pos]), &s); err != nil {
				return "", p.errorf("invalid string: %v", err)
			}
			return s, nil
		case c == '\\':
			p.pos += 2
			continue
		case c < 0x20:
			return "", p.errorf("control character in a string")
		}
		p.pos++
	}
	return "", p.errorf("unterminated string")
}

func (p *parser) literal(lit string) error {
	p.ws()
	if len(p.buf)-p.pos < len(lit) || p.buf[p.pos:p.pos+len(lit)] != lit {
		return p.errorf("invalid value")
	}
	p.pos += len(lit)
	return nil
}
