package state_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/roofline/roofline/internal/state"
)

// FuzzDecode: any input is a state or an error, never a panic; whatever
// decodes must encode, and encoding is stable under a second round trip.
func FuzzDecode(f *testing.F) {
	ins, _ := filepath.Glob("testdata/roundtrip/*.json")
	for _, in := range ins {
		b, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
		f.Add(bytes.ReplaceAll(b, []byte("1"), []byte("99999999999999999999999")))
	}
	f.Add([]byte(`{"format_version":1e999}`))
	f.Add([]byte(`{"format_version":2}`))
	f.Add([]byte(`{"format_version":1,"serial":1,"lineage":"L","servers":{"a":{"name":"a","gpus":[-1]}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := state.Decode(data)
		if err != nil {
			if s != nil {
				t.Fatal("Decode returned a state and an error")
			}
			return
		}
		out, err := state.Marshal(s)
		if err != nil {
			t.Fatalf("a decoded state does not encode: %v", err)
		}
		s2, err := state.Decode(out)
		if err != nil {
			t.Fatalf("encoded state does not decode: %v\n%s", err, out)
		}
		out2, err := state.Marshal(s2)
		if err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("second round trip differs (%v):\n%s\n---\n%s", err, out, out2)
		}
	})
}
