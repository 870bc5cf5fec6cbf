package logdiag_test

import (
	"os"
	"path/filepath"
	"testing"
)

// readAll returns the contents of the testdata files that match pattern.
func readAll(b *testing.B, pattern string) [][]byte {
	files, _ := filepath.Glob(pattern)
	if len(files) == 0 {
		b.Fatalf("no files match %s", pattern)
	}
	var out [][]byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

// BenchmarkClassifyReal classifies each excerpt of real engine logs
// (testdata/real) once per iteration: the cost of the rules on real lines.
func BenchmarkClassifyReal(b *testing.B) {
	logs := readAll(b, "testdata/real/*.log")
	n := 0
	for _, l := range logs {
		n += len(l)
	}
	b.SetBytes(int64(n))
	for b.Loop() {
		for _, l := range logs {
			Classify(l)
		}
	}
}

// BenchmarkFootprintReal reads the footprint of each real start in
// testdata/footprint once per iteration.
func BenchmarkFootprintReal(b *testing.B) {
	logs := readAll(b, "testdata/footprint/*.log")
	n := 0
	for _, l := range logs {
		n += len(l)
	}
	b.SetBytes(int64(n))
	for b.Loop() {
		for _, l := range logs {
			if ParseFootprint(l) == nil {
				b.Fatal("no footprint")
			}
		}
	}
}
