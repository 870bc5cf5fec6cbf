package model

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
)

// file builds a safetensors file from a header string and a data size.
func file(header string, data int) []byte {
	var b bytes.Buffer
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(header)))
	b.Write(n[:])
	b.WriteString(header)
	b.Write(make([]byte, data))
	return b.Bytes()
}

func TestParseHeaderDtypes(t *testing.T) {
	for _, tc := range []struct {
		dtype string
		shape string
		bytes int64
	}{
		{"BF16", "[4096,128]", 4096 * 128 * 2},
		{"F16", "[3]", 6},
		{"F32", "[2,2]", 16},
		{"F64", "[1]", 8},
		{"F8_E4M3", "[7168,2048]", 7168 * 2048},
		{"F8_E5M2", "[5]", 5},
		{"F8_E8M0", "[90,16]", 1440},
		{"I8", "[3]", 3}, {"I16", "[3]", 6}, {"I32", "[1024,64]", 1024 * 64 * 4}, {"I64", "[3]", 24},
		{"U8", "[2880,16]", 2880 * 16}, {"U16", "[3]", 6}, {"U32", "[3]", 12}, {"U64", "[3]", 24},
		{"BOOL", "[9]", 9},
		{"F4", "[4,2]", 4},
		{"F6_E2M3", "[4]", 3}, {"F6_E3M2", "[8]", 6},
		{"F32", "[]", 4}, // a scalar
		{"BF16", "[0,16]", 0},
	} {
		t.Run(tc.dtype+tc.shape, func(t *testing.T) {
			hdr := fmt.Sprintf(`{"t":{"dtype":%q,"shape":%s,"data_offsets":[0,%d]}}`, tc.dtype, tc.shape, tc.bytes)
			h, err := ParseHeader([]byte(hdr))
			if err != nil {
				t.Fatal(err)
			}
			if got := h.Tensors[0].Bytes; got != tc.bytes {
				t.Errorf("bytes = %d, want %d", got, tc.bytes)
			}
			if h.DataBytes != tc.bytes {
				t.Errorf("DataBytes = %d, want %d", h.DataBytes, tc.bytes)
			}
		})
	}
}

func TestParseHeaderValid(t *testing.T) {
	hdr := `{"__metadata__":{"format":"pt","note":"a\"b"},` +
		`"b.weight":{"dtype":"BF16","shape":[2,3],"data_offsets":[12,24],"extra":{"x":[1,2.5,null,true]}},` +
		"\n" + `"a\u002eweight":{"dtype":"F32","shape":[3],"data_offsets":[0,12]}}    `
	h, err := ParseHeader([]byte(hdr))
	if err != nil {
		t.Fatal(err)
	}
	if h.Metadata["format"] != "pt" || h.Metadata["note"] != `a"b` {
		t.Errorf("metadata = %v", h.Metadata)
	}
	if len(h.Tensors) != 2 || h.Tensors[1].Name != "a.weight" || h.DataBytes != 24 {
		t.Errorf("tensors = %+v, data %d", h.Tensors, h.DataBytes)
	}
	if _, err := ParseHeader([]byte(`{}`)); err != nil {
		t.Errorf("empty header: %v", err)
	}
	if _, err := ParseHeader([]byte(`{"__metadata__":null}`)); err != nil {
		t.Errorf("null metadata: %v", err)
	}
}

func TestParseHeaderErrors(t *testing.T) {
	ok := `"dtype":"F32","shape":[2],"data_offsets":[0,8]`
	for _, tc := range []struct{ name, hdr, want string }{
		{"not json", `hello`, "want '{'"},
		{"array", `[1,2]`, "want '{'"},
		{"truncated", `{"t":{` + ok, "want ',' or '}'"},
		{"trailing", `{"t":{` + ok + `}} {}`, "unexpected data after"},
		{"missing dtype", `{"t":{"shape":[2],"data_offsets":[0,8]}}`, "has no dtype"},
		{"missing shape", `{"t":{"dtype":"F32","data_offsets":[0,8]}}`, "has no shape"},
		{"missing offsets", `{"t":{"dtype":"F32","shape":[2]}}`, "has no data_offsets"},
		{"unknown dtype", `{"t":{"dtype":"Q4_K","shape":[2],"data_offsets":[0,8]}}`, `unknown dtype "Q4_K"`},
		{"dtype not string", `{"t":{"dtype":4,"shape":[2],"data_offsets":[0,8]}}`, "dtype is not a string"},
		{"negative shape", `{"t":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}`, "shape -2 is negative"},
		{"float shape", `{"t":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}}`, "not a non-negative integer"},
		{"exp shape", `{"t":{"dtype":"F32","shape":[2e0],"data_offsets":[0,8]}}`, "not a non-negative integer"},
		{"leading zero", `{"t":{"dtype":"F32","shape":[02],"data_offsets":[0,8]}}`, "not a JSON integer"},
		{"huge dim", `{"t":{"dtype":"F32","shape":[99999999999999999999],"data_offsets":[0,8]}}`, "too large"},
		{"overflowing shape", `{"t":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}}`, "too large"},
		{"shape string", `{"t":{"dtype":"F32","shape":"2","data_offsets":[0,8]}}`, "want '['"},
		{"three offsets", `{"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8,9]}}`, "has 3 entries, want 2"},
		{"negative offset", `{"t":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}}`, "data_offsets -8 is negative"},
		{"size mismatch", `{"t":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, "make 12 bytes, but data_offsets [0, 8] hold 8"},
		{"reversed", `{"t":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}}`, "end before they begin"},
		{"overlap", `{"a":{` + ok + `},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, `"a" and "b" overlap`},
		{"hole", `{"a":{` + ok + `},"b":{"dtype":"F32","shape":[2],"data_offsets":[16,24]}}`, "8 unused bytes between"},
		{"late start", `{"b":{"dtype":"F32","shape":[2],"data_offsets":[16,24]}}`, "begins at 16"},
		{"duplicate", `{"a":{` + ok + `},"a":{` + ok + `}}`, `"a" is listed twice`},
		{"metadata not string", `{"__metadata__":{"n":1}}`, "not a string"},
		{"sub-byte", `{"t":{"dtype":"F4","shape":[3],"data_offsets":[0,1]}}`, "do not fill whole bytes"},
		{"not utf-8", "{\"t\xff\":{" + ok + "}}", "not UTF-8"},
		{"control char", "{\"t\x01\":{" + ok + "}}", "control character"},
		{"bad escape", `{"t\q":{` + ok + `}}`, "invalid string"},
		{"deep nesting", `{"t":{"x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `,` + ok + `}}`, "nesting deeper"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseHeader([]byte(tc.hdr))
			if err == nil {
				t.Fatalf("no error for %s", tc.hdr)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

// limitReader fails the test when asked for more bytes than the file has:
// a corrupt length must never turn into a huge allocation.
type limitReader struct {
	t    *testing.T
	data []byte
	size int64 // the size the caller is told
}

func (r limitReader) ReadAt(p []byte, off int64) (int, error) {
	if int64(len(p)) > r.size {
		r.t.Fatalf("read of %d bytes from a %d-byte file", len(p), r.size)
	}
	if off >= int64(len(r.data)) {
		return 0, fmt.Errorf("EOF")
	}
	n := copy(p, r.data[off:])
	if n < len(p) {
		return n, fmt.Errorf("EOF")
	}
	return n, nil
}

func TestReadHeaderBadLength(t *testing.T) {
	withLen := func(n uint64) []byte {
		b := make([]byte, 8, 64)
		binary.LittleEndian.PutUint64(b, n)
		return append(b, `{}`...)
	}
	for _, tc := range []struct {
		name string
		data []byte
		size int64
		want string
	}{
		{"2^63", withLen(1 << 63), 10, "header length 9223372036854775808 is larger than"},
		{"max uint64", withLen(math.MaxUint64), 10, "is larger than"},
		{"over 100 MiB", withLen(200 << 20), 1 << 40, "header length 209715200 is larger than 104857600"},
		{"past the end", withLen(1000), 10, "header length 1000 is past the end of the file (10 bytes)"},
		{"short file", []byte{1, 2, 3}, 3, "3 bytes is too short"},
		{"empty file", nil, 0, "0 bytes is too short"},
		{"bad json", file(`{"a":`, 0), int64(len(file(`{"a":`, 0))), "invalid safetensors header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadHeader(limitReader{t, tc.data, tc.size}, tc.size, "model-00001-of-00002.safetensors")
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.HasPrefix(err.Error(), "model-00001-of-00002.safetensors: ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q: want the file name and %q", err, tc.want)
			}
		})
	}
}

func TestReadHeader(t *testing.T) {
	data := file(`{"w":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,8]}}  `, 8)
	h, err := ReadHeader(bytes.NewReader(data), int64(len(data)), "x")
	if err != nil {
		t.Fatal(err)
	}
	if h.Len != int64(len(data)-16) || h.DataBytes != 8 || len(h.Tensors) != 1 {
		t.Errorf("header %+v", h)
	}
}

// FuzzReadHeader checks that no input panics or over-allocates, and that
// what the fast parser accepts agrees with encoding/json.
func FuzzReadHeader(f *testing.F) {
	for _, s := range []string{
		`{"__metadata__":{"format":"pt"},"a":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,8]}}`,
		`{"a":{"dtype":"F8_E4M3","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1,1],"data_offsets":[4,8]}}`,
		`{"a\n":{"dtype":"F4","shape":[2],"data_offsets":[0,1],"x":[{"y":null}]}}`,
		`{}`, `{"a":{}}`, `[`, `{"a":{"dtype":"I32","shape":[-1],"data_offsets":[0,4]}}`,
	} {
		f.Add(file(s, 8))
	}
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0x80})
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ReadHeader(limitReader{t, data, int64(len(data))}, int64(len(data)), "f")
		if err != nil {
			return
		}
		raw := data[8 : 8+h.Len]
		if !json.Valid(raw) {
			t.Fatalf("accepted invalid JSON %q", raw)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("encoding/json rejects %q: %v", raw, err)
		}
		var sum int64
		for _, tn := range h.Tensors {
			var want struct {
				Dtype       string  `json:"dtype"`
				Shape       []int64 `json:"shape"`
				DataOffsets []int64 `json:"data_offsets"`
			}
			if err := json.Unmarshal(m[tn.Name], &want); err != nil {
				t.Fatalf("tensor %q: encoding/json: %v", tn.Name, err)
			}
			if want.Dtype != tn.Dtype || fmt.Sprint(want.Shape) != fmt.Sprint(tn.Shape) || want.DataOffsets[0] != tn.Offsets[0] || want.DataOffsets[1] != tn.Offsets[1] {
				t.Fatalf("tensor %q: parsed %+v, encoding/json %+v", tn.Name, tn, want)
			}
			sum += tn.Bytes
		}
		if sum != h.DataBytes {
			t.Fatalf("tensor bytes %d != data section %d", sum, h.DataBytes)
		}
	})
}
