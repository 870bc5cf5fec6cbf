package gate

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// readAllEvents drains r and returns the events' data and the final error.
func readAllEvents(r *SSEReader) ([]string, error) {
	var out []string
	for {
		data, err := r.Next()
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return out, err
		}
		out = append(out, string(data))
	}
}

func TestSSEReader(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"vllm framing", "data: {\"a\":1}\n\ndata: [DONE]\n\n", []string{`{"a":1}`, "[DONE]"}},
		{"no space after colon", "data:{\"a\":1}\n\n", []string{`{"a":1}`}},
		{"only one space is stripped", "data:  x\n\n", []string{" x"}},
		{"CRLF", "data: a\r\n\r\ndata: b\r\n\r\n", []string{"a", "b"}},
		{"CR alone", "data: a\r\rdata: b\r\r", []string{"a", "b"}},
		{"mixed line ends", "data: a\r\n\ndata: b\r\r\n", []string{"a", "b"}},
		{"comments are keep-alives", ": ping\n\n: ping\ndata: a\n\n", []string{"a"}},
		{"multi-line data joined with LF", "data: a\ndata: b\ndata:\n\n", []string{"a\nb\n"}},
		{"event and id fields ignored", "event: completion\nid: 7\nretry: 10\ndata: a\n\n", []string{"a"}},
		{"unknown fields ignored", "foo: bar\nbaz\ndata: a\n\n", []string{"a"}},
		{"blank lines without data dispatch nothing", "\n\n\n: c\n\n", nil},
		{"empty data is an event", "data:\n\n", []string{""}},
		{"field without colon", "data\n\n", []string{""}},
		{"leading BOM", "\xef\xbb\xbfdata: a\n\n", []string{"a"}},
		{"last event without blank line", "data: a\n\ndata: [DONE]\n", []string{"a", "[DONE]"}},
		{"torn last line is dropped", "data: a\n\ndata: {\"cho", []string{"a"}},
		{"torn after CR split", "data: a\r\rdata: b", []string{"a"}},
		{"empty stream", "", nil},
		{"colon inside value", "data: {\"k\":\"a:b\"}\n\n", []string{`{"k":"a:b"}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, split := range []struct {
				name string
				wrap func(io.Reader) io.Reader
			}{
				{"whole", func(r io.Reader) io.Reader { return r }},
				{"one byte reads", iotest.OneByteReader},
				{"EOF with data", iotest.DataErrReader},
				{"half reads", iotest.HalfReader},
			} {
				got, err := readAllEvents(NewSSEReader(split.wrap(strings.NewReader(tt.in))))
				if err != nil {
					t.Fatalf("%s: %v", split.name, err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("%s: got %q, want %q", split.name, got, tt.want)
				}
				got, err = readAllEvents(newSSEReaderSize(split.wrap(strings.NewReader(tt.in)), 16))
				if err != nil {
					t.Fatalf("%s: %v", split.name, err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("%s: got %q, want %q", split.name, got, tt.want)
				}
			}
			if got := refSSE([]byte(tt.in)); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("reference implementation disagrees with the table: %q", got)
			}
		})
	}
}

func TestSSEReaderLongLines(t *testing.T) {
	big := strings.Repeat("x", 1<<20) // past the 64 KiB bufio buffer
	in := "data: " + big + "\n\ndata: [DONE]\n\n"
	got, err := readAllEvents(NewSSEReader(iotest.HalfReader(strings.NewReader(in))))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != big || got[1] != "[DONE]" {
		t.Fatalf("1 MiB line not read back whole: %d events", len(got))
	}

	r := NewSSEReader(strings.NewReader(in))
	r.maxLen = 1000
	if _, err := r.Next(); !errors.Is(err, ErrEventTooLong) {
		t.Fatalf("over-long line: got %v, want ErrEventTooLong", err)
	}
	r = NewSSEReader(strings.NewReader(strings.Repeat("data: 0123456789\n", 200) + "\n"))
	r.maxLen = 1000
	if _, err := r.Next(); !errors.Is(err, ErrEventTooLong) {
		t.Fatalf("over-long multi-line event: got %v, want ErrEventTooLong", err)
	}
}

func TestSSEReaderReadError(t *testing.T) {
	boom := errors.New("connection reset by peer")
	r := NewSSEReader(io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(boom)))
	got, err := readAllEvents(r)
	if !errors.Is(err, boom) || !reflect.DeepEqual(got, []string{"a"}) {
		t.Fatalf("got %q, %v; want [a], %v", got, err, boom)
	}
	if _, err := r.Next(); !errors.Is(err, boom) {
		t.Fatalf("error not sticky: %v", err)
	}
}

func TestSSEReaderReset(t *testing.T) {
	r := NewSSEReader(strings.NewReader("data: a\n\n"))
	if got, _ := readAllEvents(r); !reflect.DeepEqual(got, []string{"a"}) {
		t.Fatal(got)
	}
	r.Reset(strings.NewReader("event: x\ndata: b\n\n"))
	d, err := r.Next()
	if err != nil || string(d) != "b" || r.EventType() != "x" {
		t.Fatalf("after Reset: %q %v %q", d, err, r.EventType())
	}
}

// TestSSETranscripts reads streams in the shapes vLLM and SGLang send
// (gates.md §4) and checks them end to end through the chunk decoder.
func TestSSETranscripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/streams/*.sse")
	if len(files) == 0 {
		t.Fatal("no transcripts in testdata/streams")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			st, err := ReadStream(bytes.NewReader(raw), nil)
			got := st.Summary()
			if err != nil {
				got += "returned error: " + err.Error() + "\n"
			}
			golden(t, "streams/"+strings.TrimSuffix(filepath.Base(f), ".sse")+".golden", got)
		})
	}
}

// refSSE is a plain implementation of the same rules, for the fuzz test.
func refSSE(b []byte) []string {
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	var lines []string
	for len(b) > 0 {
		i := bytes.IndexAny(b, "\r\n")
		if i < 0 {
			break // torn last line
		}
		lines = append(lines, string(b[:i]))
		if b[i] == '\r' && i+1 < len(b) && b[i+1] == '\n' {
			i++
		}
		b = b[i+1:]
	}
	var out []string
	var data []string
	has := false
	for _, l := range lines {
		switch {
		case l == "":
			if has {
				out = append(out, strings.Join(data, "\n"))
			}
			data, has = nil, false
		case l[0] == ':':
		default:
			field, value, _ := strings.Cut(l, ":")
			value = strings.TrimPrefix(value, " ")
			if field == "data" {
				data, has = append(data, value), true
			}
		}
	}
	if has {
		out = append(out, strings.Join(data, "\n"))
	}
	return out
}

func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{
		"data: {\"a\":1}\n\ndata: [DONE]\n\n",
		"data:a\r\n\r\n", "data: a\r\rdata: b\r\r", ": c\ndata: x\ndata: y\n\n",
		"\xef\xbb\xbfdata: a\n\n", "data: a\n\ndata: {\"cho", "event: e\nid: 1\ndata\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		want := refSSE(in)
		for i, wrap := range []func(io.Reader) io.Reader{
			func(r io.Reader) io.Reader { return r }, iotest.OneByteReader, iotest.DataErrReader,
		} {
			// 16 bytes (bufio's minimum) makes most lines take the long-line path.
			got, err := readAllEvents(newSSEReaderSize(wrap(bytes.NewReader(in)), []int{4096, 16, 64}[i]))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 && len(want) == 0 {
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got %q, want %q", got, want)
			}
		}
	})
}
