package logdiag_test

import (
	"os"
	"path/filepath"
	"testing"
)

// benchFiles runs f on each testdata file that matches pattern once per
// iteration.
func benchFiles(b *testing.B, pattern string, f func(b *testing.B, log []byte)) {
	files, _ := filepath.Glob(pattern)
	if len(files) == 0 {
		b.Fatalf("no files match %s", pattern)
	}
	var logs [][]byte
	n := 0
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			b.Fatal(err)
		}
		logs = append(logs, data)
		n += len(data)
	}
	b.SetBytes(int64(n))
	for b.Loop() {
		for _, l := range logs {
			f(b, l)
		}
	}
}

// BenchmarkClassifyReal classifies each excerpt of real engine logs
// (testdata/real): the cost of the rules on real lines.
func BenchmarkClassifyReal(b *testing.B) {
	benchFiles(b, "testdata/real/*.log", func(_ *testing.B, log []byte) { Classify(log) })
}

// BenchmarkFootprintReal reads the footprint of each real start in
// testdata/footprint.
func BenchmarkFootprintReal(b *testing.B) {
	benchFiles(b, "testdata/footprint/*.log", func(b *testing.B, log []byte) {
		if ParseFootprint(log) == nil {
			b.Fatal("no footprint")
		}
	})
}
