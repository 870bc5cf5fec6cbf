package model_test

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/roofline/roofline/internal/model"
	"github.com/roofline/roofline/internal/model/modeltest"
)

// BenchmarkInspect163Shards reads the headers of a full-size DeepSeek-V3
// layout (61 layers + MTP, 256 experts, FP8 with block scales: about 92,000
// tensors in 163 sparse shards). The target is 50 ms per Inspect.
func BenchmarkInspect163Shards(b *testing.B) {
	dir := b.TempDir()
	if err := modeltest.Write(dir, modeltest.DeepSeekV3, modeltest.Shards(163)); err != nil {
		b.Fatal(err)
	}
	var tensors, n int
	cpu0 := cpuTime()
	for b.Loop() {
		n++
		info, err := model.Inspect(dir)
		if err != nil {
			b.Fatal(err)
		}
		if info.HasErrors() || len(info.Shards) != 163 {
			b.Fatalf("%d shards, problems %v", len(info.Shards), info.Problems)
		}
		tensors = len(info.Tensors)
	}
	b.ReportMetric(float64(tensors), "tensors")
	if c := cpuTime() - cpu0; c > 0 {
		b.ReportMetric(float64(c.Milliseconds())/float64(n), "cpu-ms/op")
	}
}

// BenchmarkHash measures sha256 hashing throughput of Manifest over four
// 32 MiB files of random data (written, not sparse, so the disk is read).
func BenchmarkHash(b *testing.B) {
	dir := b.TempDir()
	buf := make([]byte, 32<<20)
	var total int64
	for i := range 4 {
		_, _ = rand.Read(buf)
		if err := os.WriteFile(filepath.Join(dir, "f"+string(rune('0'+i))), buf, 0o644); err != nil {
			b.Fatal(err)
		}
		total += int64(len(buf))
	}
	b.SetBytes(total)
	for b.Loop() {
		if err := model.Manifest(dir, discard{}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// BenchmarkParseHeader measures the header parser alone on one shard of a
// 4-layer DeepSeek-V3 (3,186 tensors, 414 KB of JSON).
func BenchmarkParseHeader(b *testing.B) {
	dir := b.TempDir()
	if err := modeltest.Write(dir, modeltest.DeepSeekV3, modeltest.Layers(4), modeltest.Shards(1)); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "model.safetensors")) // 30 GB, sparse: read the header only
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		b.Fatal(err)
	}
	h, err := model.ReadHeader(f, st.Size(), "model.safetensors")
	if err != nil {
		b.Fatal(err)
	}
	hdr := make([]byte, h.Len)
	if _, err := f.ReadAt(hdr, 8); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(h.Len)
	for b.Loop() {
		if _, err := model.ParseHeader(hdr); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRankBytes classifies every tensor of a 4-layer DeepSeek-V3 (MoE,
// MLA, MTP: 3,186 tensors) and sums a TP 8 rank.
func BenchmarkRankBytes(b *testing.B) {
	dir := b.TempDir()
	if err := modeltest.Write(dir, modeltest.DeepSeekV3, modeltest.Layers(4), modeltest.Shards(1)); err != nil {
		b.Fatal(err)
	}
	info, err := model.Inspect(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		info.RankBytes(model.RankOptions{TP: 8})
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(info.Tensors)), "ns/tensor")
}
