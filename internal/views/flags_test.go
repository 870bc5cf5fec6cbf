package views

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/roofline/roofline/internal/engine"
)

// TestWriteFlagsGolden fixes the human and JSON formats on reference flags.
func TestWriteFlagsGolden(t *testing.T) {
	for _, tt := range []struct{ kind, version, query, file string }{
		{"vllm", "0.16.0", "prefix-caching", "vllm-0.16.0-prefix-caching"},
		{"sglang", "0.5.6.post2", "tp-size", "sglang-0.5.6.post2-tp-size"},
		{"vllm", "0.8.5", "quantization", "vllm-0.8.5-quantization"},
	} {
		inst, ok := engine.Reference(tt.kind, tt.version)
		if !ok {
			t.Fatal("no reference")
		}
		found := inst.Flags.Filter(tt.query)
		var b bytes.Buffer
		writeFlags(&b, inst, found, tt.query)
		js, err := flagsJSON(found)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("\n# -json\n")
		b.Write(js)
		b.WriteString("\n")
		golden(t, filepath.Join("testdata", "flags", tt.file+".golden"), b.String())
	}
}
