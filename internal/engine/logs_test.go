package engine

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
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
