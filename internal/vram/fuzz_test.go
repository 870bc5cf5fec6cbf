package vram

import (
	"math"
	"testing"

	"github.com/roofline/roofline/internal/engine/kinds"
)

// fuzzInput builds an Input from fuzzer bytes; sizes are reduced modulo
// small ranges so that each run stays fast, but every field is reachable,
// including the invalid values Estimate must reject.
func fuzzInput(engine, version, kindsN uint8, tp, pp, layers uint8, heads, kvh, headDim uint16, window uint32,
	state, weights, gpuMem, free uint64, util float64, maxLen uint32, block, seqs uint16, mbt, conc uint32, dtype uint8, eager bool) Input {
	engines := []string{kinds.VLLM, kinds.SGLang, "", "tgi"}
	versions := []string{"", "0.6.4", "0.8.5", "0.9.2", "0.10.1.1", "0.11.0", "0.16.0", "0.21.0", "0.4.3", "0.5.6", "x"}
	dtypes := []string{"", "auto", "fp8", "bfloat16", "fp8_ds_mla", "float32", "nope"}
	in := Input{
		Engine: engines[int(engine)%len(engines)], EngineVersion: versions[int(version)%len(versions)],
		GPUMemoryBytes: gpuMem % (1 << 52), TP: int(tp % 20), PP: int(pp % 6),
		MaxModelLen: int(maxLen % (1 << 29)), GPUMemoryUtilization: util, KVCacheDtype: dtypes[int(dtype)%len(dtypes)],
		BlockSize: int(block % 300), MaxNumSeqs: int(seqs), MaxNumBatchedTokens: int(mbt % (1 << 29)),
		Concurrency: int(conc % 100), EnforceEager: eager, GPUName: "NVIDIA H100",
	}
	if free != 0 {
		in.FreeMemoryBytes = []uint64{free % (1 << 52)}
	}
	n := int(layers%96) + 1
	m := ModelSpec{NumAttentionHeads: int(heads % 200), HeadDim: int(headDim % 9000), HiddenSize: int(headDim) * 8,
		IntermediateSize: int(headDim) * 24, VocabSize: int(window % (1 << 18)), MaxModelLen: int(window % (1 << 20)),
		ExpertsPerToken: int(kindsN % 9), MoEIntermediateSize: int(heads % 3000)}
	for i := 0; i < n; i++ {
		l := Layer{Kind: AttnFull, KVHeads: int(kvh % 5000), HeadDim: int(headDim % 9000)}
		switch (int(kindsN) + i) % 5 {
		case 1:
			l.Kind, l.Window = AttnSliding, int(window%70000)
		case 2:
			l = Layer{Kind: AttnMLA, KVLoraRank: int(headDim % 1024), RopeDim: 64}
		case 3:
			if kindsN&0x80 != 0 {
				l = Layer{Kind: AttnLinear, StateBytes: state % (1 << 40)}
			}
		}
		if kindsN&0x40 == 0 && l.Kind != AttnFull {
			l = Layer{Kind: AttnFull, KVHeads: int(kvh % 5000), HeadDim: int(headDim % 9000)}
		}
		m.Layers = append(m.Layers, l)
		m.Weights = append(m.Weights, WeightPart{Name: "l", Bytes: weights % (1 << 38), Shard: ShardTP, Place: PlaceLayer, Layer: i})
		if kvh%5000 > 0 {
			m.Weights = append(m.Weights, WeightPart{Name: "kv", Bytes: weights % (1 << 30), Shard: ShardKVHeads, Heads: int(kvh % 5000), Place: PlaceLayer, Layer: i})
		}
	}
	m.Weights = append(m.Weights, WeightPart{Name: "embed", Bytes: weights % (1 << 34), Shard: ShardTP, Place: PlaceFirst},
		WeightPart{Name: "tied", Bytes: weights % (1 << 34), Shard: ShardTP, Place: PlaceLastIfSplit})
	in.Model = m
	return in
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func FuzzEstimate(f *testing.F) {
	f.Add(uint8(0), uint8(6), uint8(0), uint8(1), uint8(1), uint8(31), uint16(32), uint16(8), uint16(128), uint32(4096),
		uint64(0), uint64(400<<20), uint64(gb(79.18)), uint64(0), 0.9, uint32(16384), uint16(16), uint16(0), uint32(0), uint32(1), uint8(0), false)
	f.Add(uint8(1), uint8(9), uint8(0x41), uint8(4), uint8(2), uint8(60), uint16(64), uint16(4), uint16(128), uint32(128),
		uint64(0), uint64(2<<30), uint64(gb(22.03)), uint64(gb(20)), 0.85, uint32(32768), uint16(1), uint16(0), uint32(0), uint32(4), uint8(2), false)
	f.Add(uint8(0), uint8(1), uint8(0xC2), uint8(16), uint8(3), uint8(26), uint16(16), uint16(1), uint16(256), uint32(512),
		uint64(1<<21), uint64(1<<20), uint64(1<<30), uint64(1), 0.0, uint32(1), uint16(256), uint16(1), uint32(1), uint32(99), uint8(4), true)
	f.Add(uint8(0), uint8(7), uint8(0x43), uint8(2), uint8(1), uint8(0), uint16(0), uint16(0), uint16(0), uint32(0),
		uint64(math.MaxUint64), uint64(math.MaxUint64), uint64(math.MaxUint64), uint64(math.MaxUint64), math.NaN(), uint32(math.MaxUint32), uint16(math.MaxUint16), uint16(math.MaxUint16), uint32(math.MaxUint32), uint32(math.MaxUint32), uint8(3), false)
	f.Fuzz(func(t *testing.T, engine, version, kinds, tp, pp, layers uint8, heads, kvh, headDim uint16, window uint32,
		state, weights, gpuMem, free uint64, util float64, maxLen uint32, block, seqs uint16, mbt, conc uint32, dtype uint8, eager bool) {
		in := fuzzInput(engine, version, kinds, tp, pp, layers, heads, kvh, headDim, window, state, weights, gpuMem, free, util, maxLen, block, seqs, mbt, conc, dtype, eager)
		res, err := Estimate(in)
		if err != nil {
			if res != nil {
				t.Fatal("result with an error")
			}
			return
		}
		if len(res.Ranks) != res.TP*res.PP {
			t.Fatalf("%d ranks for TP %d PP %d", len(res.Ranks), res.TP, res.PP)
		}
		if res.KVTokens < 0 || !finite(res.MaxConcurrency) || res.MaxConcurrency < 0 || res.MaxModelLenFit < 0 ||
			res.MinTPFit < 0 || res.MinTPFit > 8 || !finite(res.GPUMemoryUtilization) {
			t.Fatalf("bad result %+v", res)
		}
		if res.Fits != (len(res.Reasons) == 0) {
			t.Fatalf("fits %v with reasons %q", res.Fits, res.Reasons)
		}
		if res.Fits && res.MaxModelLenFit < int64(res.MaxModelLen) {
			t.Fatalf("fits at %d but max_model_len_fit %d", res.MaxModelLen, res.MaxModelLenFit)
		}
		for _, k := range res.Ranks {
			if k.KVTokens < 0 || k.NumBlocks < 0 || !finite(k.Concurrency) || k.Concurrency < 0 || k.KVTokens < res.KVTokens {
				t.Fatalf("bad rank %+v (result tokens %d)", k, res.KVTokens)
			}
			if k.KVBudgetBytes > 0 && uint64(k.KVBudgetBytes) > in.GPUMemoryBytes && in.Overrides.KVBudgetBytes == nil {
				t.Fatalf("rank budget %d above the GPU's %d", k.KVBudgetBytes, in.GPUMemoryBytes)
			}
		}
	})
}

func BenchmarkEstimate(b *testing.B) {
	for _, c := range []struct {
		name string
		in   Input
	}{
		{"Llama-3.1-8B-H100-TP1", h100(llama31_8B.spec(), 1, 32768)},
		{"Llama-3.3-70B-FP8-H100-TP1-nofit", h100(llama33_70B_FP8.spec(), 1, 32768)},
		{"gpt-oss-120b-TP4-hybrid", h100(gptOSS120B.spec(), 4, 131072)},
		{"DeepSeek-MLA-TP2-PP2-SGLang", Input{Engine: kinds.SGLang, Model: mlaSpec(27), GPUMemoryBytes: gb(79.18), TP: 2, PP: 2, MaxModelLen: 65536}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Estimate(c.in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
