package engine

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/engine/kinds"
	"github.com/roofline/roofline/internal/engine/logdiag"
)

// TestKindLogs: each kind's own classifier (its rules and the shared ones)
// says of its engine's logs what the classifier of every kind says, so that
// a server whose kind is known loses nothing; and its rules are complete
// enough to name something. The logs are logdiag's testdata, named after
// the engine that wrote them ("vllm-0.16-v1.log", "compose-sglang-….log").
func TestKindLogs(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("logdiag", "testdata", "*", "*.log"))
	seen := map[string]int{}
	for _, f := range files {
		base := strings.TrimPrefix(filepath.Base(f), "compose-")
		name, _, _ := strings.Cut(base, "-")
		k := Lookup(name)
		if k == nil {
			continue
		}
		seen[name]++
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := k.Diagnose(b), LogsOf("").Classify(b); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %s's classifier says %s (%q), every kind's %s (%q)", f, k.Display, got.Class, got.Summary, want.Class, want.Summary)
		}
		if got, want := k.Footprint(b), LogsOf("").Footprint(b); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %s's footprint %+v, every kind's %+v", f, k.Display, got, want)
		} else if got != nil && got.Engine != k.Name {
			t.Errorf("%s: footprint of engine %q, want %q", f, got.Engine, k.Name)
		}
	}
	for _, k := range Kinds() {
		if seen[k.Name] < 10 {
			t.Errorf("%d logs of %s in logdiag/testdata, want at least 10", seen[k.Name], k.Display)
		}
		if k.Logs() != LogsOf(k.Name) || LogsOf("tgi") != LogsOf("") {
			t.Error("LogsOf must return the named kind's classifier, and every kind's for an unknown name")
		}
	}
}

// TestKindLogsOwnRules: a kind's own messages are its rules only; the other
// kind's classifier does not name them.
func TestKindLogsOwnRules(t *testing.T) {
	for _, c := range []struct{ file, kind, class string }{
		{"sglang_mem_fraction/sglang-0.5.6.log", kinds.VLLM, logdiag.SGLangMemFraction},
		{"kv_too_small/vllm-0.16-v1.log", kinds.SGLang, logdiag.KVTooSmall},
		{"no_kv_memory/vllm-0.16-v1.log", kinds.SGLang, logdiag.NoKVMemory},
	} {
		b, err := os.ReadFile(filepath.Join("logdiag", "testdata", c.file))
		if err != nil {
			t.Fatal(err)
		}
		if d := LogsOf("").Classify(b); d.Class != c.class {
			t.Fatalf("%s: every kind's classifier says %s, want %s", c.file, d.Class, c.class)
		}
		if d := MustLookup(c.kind).Diagnose(b); d.Class == c.class {
			t.Errorf("%s: %s's classifier names %s, another kind's message", c.file, c.kind, d.Class)
		}
	}
}

// BenchmarkDiagnose classifies the real vLLM excerpts of logdiag's testdata
// with vLLM's classifier and with every kind's (a log without a state
// record): what knowing the kind saves.
func BenchmarkDiagnose(b *testing.B) {
	files, _ := filepath.Glob(filepath.Join("logdiag", "testdata", "real", "vllm-*.log"))
	var logs [][]byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		logs = append(logs, data)
	}
	for _, c := range []struct {
		name string
		c    *logdiag.Classifier
	}{{"kind", MustLookup(kinds.VLLM).Logs()}, {"every", LogsOf("")}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				for _, l := range logs {
					c.c.Classify(l)
				}
			}
		})
	}
}
