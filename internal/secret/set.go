package secret

import (
	"io"
	"slices"
	"strings"
	"sync"
)

// MinLen is the shortest value masked where it appears inside a longer
// string. A sensitive "1" or "true" is still masked where it is a whole
// value, but hiding every "1" of every line would make output unreadable
// and tell nothing about the value anyway.
const MinLen = 4

// Set holds the plain sensitive values one roofline command knows, so that
// everything it prints or records can be masked against them. The zero Set
// is empty and ready; a nil *Set masks nothing.
type Set struct {
	mu   sync.RWMutex
	vals []string // longest first, so a value inside another is masked last
}

// NewSet returns a Set of vals.
func NewSet(vals ...string) *Set {
	s := &Set{}
	s.Add(vals...)
	return s
}

// Add adds values; empty ones are ignored.
func (s *Set) Add(vals ...string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range vals {
		if v == "" || slices.Contains(s.vals, v) {
			continue
		}
		s.vals = append(s.vals, v)
		// Lines read from a file end in a newline the value does not have.
		if t := strings.TrimSpace(v); t != v && t != "" && !slices.Contains(s.vals, t) {
			s.vals = append(s.vals, t)
		}
	}
	slices.SortFunc(s.vals, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
}

// Values returns the values, longest first.
func (s *Set) Values() []string {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.vals)
}

// Len is the number of values.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.vals)
}

// Is reports whether v is exactly one of the values.
func (s *Set) Is(v string) bool {
	if s == nil {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Contains(s.vals, v)
}

// In reports whether text holds one of the values: as a whole, or inside
// it for values of at least MinLen bytes.
func (s *Set) In(text string) bool {
	if s == nil {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, v := range s.vals {
		if text == v || len(v) >= MinLen && strings.Contains(text, v) {
			return true
		}
	}
	return false
}

// Mask replaces every value in text by Shown.
func (s *Set) Mask(text string) string {
	if s == nil {
		return text
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, v := range s.vals {
		if text == v {
			return Shown
		}
		if len(v) >= MinLen {
			text = strings.ReplaceAll(text, v, Shown)
		}
	}
	return text
}

// Spans are the byte spans [start, end) of the values (of at least MinLen
// bytes) in text, so that who cuts text can keep a value whole: a part of
// one is no longer masked.
func (s *Set) Spans(text string) [][2]int {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out [][2]int
	for _, v := range s.vals {
		if len(v) < MinLen {
			continue
		}
		for i := 0; ; {
			j := strings.Index(text[i:], v)
			if j < 0 {
				break
			}
			out = append(out, [2]int{i + j, i + j + len(v)})
			i += j + 1
		}
	}
	return out
}

// Writer masks what is written through it. Each Write is masked on its
// own; roofline writes whole lines or messages, so a value is not split
// across two writes in practice.
func (s *Set) Writer(w io.Writer) io.Writer {
	if s == nil {
		return w
	}
	return &maskWriter{s: s, w: w}
}

type maskWriter struct {
	s *Set
	w io.Writer
}

func (m *maskWriter) Write(p []byte) (int, error) {
	if m.s.Len() == 0 {
		return m.w.Write(p)
	}
	out := m.s.Mask(string(p))
	if _, err := io.WriteString(m.w, out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// SecretSpans are the spans of the values in text (Set.Spans): a view
// that cuts what it writes asks its writer.
func (m *maskWriter) SecretSpans(text string) [][2]int { return m.s.Spans(text) }

// Fd passes the terminal check through a masking writer, so colour and
// progress output still see a terminal.
func (m *maskWriter) Fd() uintptr {
	if f, ok := m.w.(interface{ Fd() uintptr }); ok {
		return f.Fd()
	}
	return ^uintptr(0)
}
