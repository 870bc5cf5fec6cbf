package gate

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// MaxEventBytes bounds one SSE line and one event's data. A tool call, a
// continuous-usage chunk or long-context logprobs can make lines large (the
// aiohttp 64 KiB and 128 KiB limits broke vLLM's and TensorRT-LLM's
// benchmarks), so the limit is generous; it exists so a broken server cannot
// make the client buffer without end.
const MaxEventBytes = 32 << 20

// ErrEventTooLong is returned when a line or an event exceeds MaxEventBytes.
var ErrEventTooLong = errors.New("server-sent event longer than 32 MiB")

// doneData is the OpenAI stream terminator.
var doneData = []byte("[DONE]")

// IsDone reports whether data is the OpenAI end-of-stream marker. Like the
// OpenAI and vLLM clients it accepts anything starting with [DONE].
func IsDone(data []byte) bool { return bytes.HasPrefix(data, doneData) }

// SSEReader reads server-sent events (WHATWG "event stream" format) as vLLM,
// SGLang and OpenAI send them: "data:" with or without a space, comment lines
// starting with ':', multi-line data joined with '\n', CRLF, LF or CR line
// ends, a leading byte-order mark. event:, id: and retry: fields are read and
// ignored except for the event type.
//
// It allocates nothing per event once its buffers have grown to the largest
// event: the data returned by Next is only valid until the next call.
type SSEReader struct {
	br      *bufio.Reader
	data    []byte // data of the event being built
	hasData bool   // a data field was seen (the data may be empty)
	evType  []byte
	long    []byte // a line longer than the bufio buffer, assembled
	pending [][]byte
	started bool
	err     error
	maxLen  int
}

// NewSSEReader returns a reader of the events in r.
func NewSSEReader(r io.Reader) *SSEReader { return newSSEReaderSize(r, 64<<10) }

// newSSEReaderSize lets tests use a tiny buffer, which sends every line
// through the long-line path.
func newSSEReaderSize(r io.Reader, size int) *SSEReader {
	return &SSEReader{br: bufio.NewReaderSize(r, size), maxLen: MaxEventBytes}
}

// Reset makes the reader read r, keeping its buffers.
func (s *SSEReader) Reset(r io.Reader) {
	s.br.Reset(r)
	s.data, s.hasData, s.evType, s.long = s.data[:0], false, s.evType[:0], s.long[:0]
	s.pending, s.started, s.err = s.pending[:0], false, nil
}

// EventType is the event: field of the event last returned ("" for the
// default "message" events that chat completions use).
func (s *SSEReader) EventType() string { return string(s.evType) }

// Next returns the data of the next event. At the end of the stream it
// returns io.EOF; a stream cut inside an event drops that event, as the SSE
// specification says, and also returns io.EOF (callers detect truncation by
// the missing [DONE]). Other errors are read errors or ErrEventTooLong.
func (s *SSEReader) Next() ([]byte, error) {
	if s.err != nil {
		return nil, s.err
	}
	s.data, s.hasData = s.data[:0], false
	s.evType = s.evType[:0]
	for {
		line, complete, err := s.readLine()
		if complete {
			if dispatch := s.processLine(line); dispatch {
				return s.data, nil
			}
			if len(s.data) > s.maxLen {
				s.err = ErrEventTooLong
				return nil, s.err
			}
		}
		if err != nil {
			// A last event whose lines all ended but with no blank line after
			// it is delivered: some proxies drop the final blank line.
			if err == io.EOF && s.hasData {
				s.err = err
				return s.data, nil
			}
			s.err = err
			return nil, err
		}
	}
}

// readLine returns the next line without its terminator. complete is false for
// a final line cut by the end of the stream (not a line by the SSE rules).
func (s *SSEReader) readLine() (line []byte, complete bool, err error) {
	if len(s.pending) > 0 {
		line = s.pending[0]
		s.pending = s.pending[1:]
		return line, true, nil
	}
	seg, err := s.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		s.long = append(s.long[:0], seg...)
		for err == bufio.ErrBufferFull {
			if len(s.long) > s.maxLen {
				return nil, false, ErrEventTooLong
			}
			seg, err = s.br.ReadSlice('\n')
			s.long = append(s.long, seg...)
		}
		seg = s.long
	}
	if len(seg) > s.maxLen {
		return nil, false, ErrEventTooLong
	}
	if !s.started {
		s.started = true
		seg = bytes.TrimPrefix(seg, []byte("\xef\xbb\xbf"))
	}
	switch {
	case len(seg) > 0 && seg[len(seg)-1] == '\n':
		seg = seg[:len(seg)-1]
		if len(seg) > 0 && seg[len(seg)-1] == '\r' {
			seg = seg[:len(seg)-1]
		}
		complete = true
	case len(seg) > 0 && seg[len(seg)-1] == '\r':
		// At the end of the stream a trailing CR still ends a line.
		seg = seg[:len(seg)-1]
		complete = true
	}
	if err != nil && err != io.EOF {
		return nil, false, err
	}
	// A CR alone is a line end too; no real server sends it, so the split
	// costs one IndexByte on the common path. The lines after the first wait
	// in pending; a torn remainder at the end of the stream is dropped.
	if i := bytes.IndexByte(seg, '\r'); i >= 0 {
		line, rest := seg[:i], seg[i+1:]
		s.pending = s.pending[:0]
		for {
			j := bytes.IndexByte(rest, '\r')
			if j < 0 {
				break
			}
			s.pending = append(s.pending, rest[:j])
			rest = rest[j+1:]
		}
		if complete {
			s.pending = append(s.pending, rest)
		}
		return line, true, nil
	}
	return seg, complete, err
}

// processLine applies one line to the event being built and reports whether
// the event is complete.
func (s *SSEReader) processLine(line []byte) bool {
	if len(line) == 0 {
		if s.hasData {
			return true
		}
		s.evType = s.evType[:0]
		return false
	}
	if line[0] == ':' {
		return false
	}
	field, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		field, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(field) {
	case "data":
		if s.hasData {
			s.data = append(s.data, '\n')
		}
		s.data = append(s.data, value...)
		s.hasData = true
	case "event":
		s.evType = append(s.evType[:0], value...)
	}
	return false
}
