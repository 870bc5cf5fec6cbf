package fromodel

import (
	"path/filepath"
	"testing"

	"github.com/roofline/roofline/internal/model"
	"github.com/roofline/roofline/internal/model/modeltest"
	"github.com/roofline/roofline/internal/vram"
)

func inspect(t *testing.T, arch modeltest.Arch, opts ...modeltest.Option) *model.Info {
	t.Helper()
	dir := filepath.Join(t.TempDir(), arch.Name)
	if err := modeltest.Write(dir, arch, opts...); err != nil {
		t.Fatal(err)
	}
	info, err := model.Inspect(dir)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func rotary(s vram.ModelSpec) uint64 {
	for _, w := range s.Weights {
		if w.Name == "rotary_emb.cos_sin_cache" {
			return w.Bytes
		}
	}
	return 0
}

// TestSpec checks the layer facts and that every rank's weights agree with
// internal/model's own per-rank sum (written independently), at several TP
// and PP sizes, plus the rotary cache vram adds.
func TestSpec(t *testing.T) {
	for _, c := range []struct {
		arch       modeltest.Arch
		opts       []modeltest.Option
		layers     int
		kinds      map[vram.AttentionKind]int
		window     int
		maxLen     int
		experts    int
		tokenBytes uint64 // KV bytes per token at TP1, bf16
	}{
		{arch: modeltest.Llama31_8B, layers: 32, kinds: map[vram.AttentionKind]int{vram.AttnFull: 32}, maxLen: 131072, tokenBytes: 131072},
		{arch: modeltest.Qwen3_8B, layers: 36, kinds: map[vram.AttentionKind]int{vram.AttnFull: 36}, maxLen: 40960, tokenBytes: 147456},
		{arch: modeltest.Qwen3_0_6B, layers: 28, kinds: map[vram.AttentionKind]int{vram.AttnFull: 28}, maxLen: 40960, tokenBytes: 114688},
		{arch: modeltest.Qwen3_30B_A3B, layers: 48, kinds: map[vram.AttentionKind]int{vram.AttnFull: 48}, maxLen: 40960, experts: 8, tokenBytes: 98304},
		{arch: modeltest.DeepSeekV3, opts: []modeltest.Option{modeltest.Layers(5), modeltest.Shards(3)}, layers: 5,
			kinds: map[vram.AttentionKind]int{vram.AttnMLA: 5}, maxLen: 163840, experts: 8, tokenBytes: 5 * 576 * 2},
		{arch: modeltest.Gemma3_1B, layers: 26, kinds: map[vram.AttentionKind]int{vram.AttnSliding: 22, vram.AttnFull: 4},
			window: 512, maxLen: 32768, tokenBytes: 26 * 512 * 2},
		{arch: modeltest.Gemma3_4B, layers: 34, kinds: map[vram.AttentionKind]int{vram.AttnSliding: 29, vram.AttnFull: 5},
			window: 1024, maxLen: 131072, tokenBytes: 34 * 4 * 512 * 2},
	} {
		t.Run(c.arch.Name, func(t *testing.T) {
			info := inspect(t, c.arch, c.opts...)
			spec, err := Spec(info)
			if err != nil {
				t.Fatal(err)
			}
			if err := spec.Validate(); err != nil {
				t.Fatal(err)
			}
			kinds := map[vram.AttentionKind]int{}
			for _, l := range spec.Layers {
				kinds[l.Kind]++
				if l.Kind == vram.AttnSliding && l.Window != c.window {
					t.Errorf("window %d, want %d", l.Window, c.window)
				}
			}
			if len(spec.Layers) != c.layers || len(kinds) != len(c.kinds) {
				t.Errorf("layers %v, want %v", kinds, c.kinds)
			}
			for k, n := range c.kinds {
				if kinds[k] != n {
					t.Errorf("%d %s layers, want %d", kinds[k], k, n)
				}
			}
			if spec.MaxModelLen != c.maxLen || spec.ExpertsPerToken != c.experts {
				t.Errorf("max len %d experts/token %d; want %d %d", spec.MaxModelLen, spec.ExpertsPerToken, c.maxLen, c.experts)
			}
			rot := rotary(spec)
			if rot == 0 {
				t.Errorf("no rotary cache part")
			}
			for _, pp := range []int{1, 2} {
				for _, tp := range []int{1, 2, 4, 8} {
					in := vram.Input{Model: spec, GPUMemoryBytes: 80 << 30, TP: tp, PP: pp, MaxModelLen: 4096}
					in.Model.NumAttentionHeads = 0 // sizes only; head divisibility is tested in vram
					res, err := vram.Estimate(in)
					if err != nil {
						t.Fatal(err)
					}
					for _, k := range res.Ranks {
						want := uint64(info.RankBytes(model.RankOptions{TP: tp, PP: pp, PPRank: k.PPStage})) + rot
						if k.WeightsBytes != want {
							t.Errorf("TP%d PP%d rank %d: %d weight bytes, internal/model says %d", tp, pp, k.Rank, k.WeightsBytes, want)
						}
					}
					if tp == 1 && pp == 1 && res.KVBytesPerToken != c.tokenBytes {
						t.Errorf("KV bytes per token %d, want %d", res.KVBytesPerToken, c.tokenBytes)
					}
				}
			}
		})
	}
}

func TestPublishedTotal(t *testing.T) {
	// Llama-3.1-8B: total_size 16,060,522,496 B; vLLM logged 14.99 GiB loaded
	// (vram.md §4): the checkpoint plus a 32 MiB rotary cache.
	info := inspect(t, modeltest.Llama31_8B)
	spec, err := Spec(info)
	if err != nil {
		t.Fatal(err)
	}
	res, err := vram.Estimate(vram.Input{Model: spec, GPUMemoryBytes: 80 << 30, MaxModelLen: 8192})
	if err != nil {
		t.Fatal(err)
	}
	if res.WeightsBytes != 16060522496+131072*128*2 {
		t.Errorf("weights %d bytes", res.WeightsBytes)
	}
	if got := float64(res.WeightsBytes) / vram.GiB; got < 14.985 || got > 14.995 {
		t.Errorf("weights %.3f GiB, vLLM logged 14.99", got)
	}
}

func TestDerivedMaxLen(t *testing.T) {
	for _, c := range []struct {
		name string
		pos  int
		rs   map[string]any
		want int
	}{
		{"none", 40960, nil, 40960},
		{"llama3 counts it already", 131072, map[string]any{"rope_type": "llama3", "factor": 8.0}, 131072},
		{"yarn from the original length", 40960, map[string]any{"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768.0}, 131072},
		{"old 'type' key, linear", 4096, map[string]any{"type": "linear", "factor": 2.0}, 8192},
		{"longrope", 131072, map[string]any{"type": "longrope", "factor": 32.0}, 131072},
		{"absurd factor ignored", 4096, map[string]any{"type": "dynamic", "factor": 1e9}, 4096},
		{"unknown length", 0, nil, 0},
	} {
		if got := DerivedMaxLen(&model.Config{MaxPositionEmbeddings: c.pos, RopeScaling: c.rs}); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

func TestLinearState(t *testing.T) {
	// Qwen3-Next-80B-A3B: 32 value heads of 128, 16 key heads of 128, conv 4.
	raw := map[string]any{"linear_num_value_heads": 32.0, "linear_key_head_dim": 128.0, "linear_value_head_dim": 128.0,
		"linear_num_key_heads": 16.0, "linear_conv_kernel_dim": 4.0}
	want := uint64(2 * (32*128*128 + 3*(2*16*128+32*128)))
	if got := linearStateBytes(raw); got != want {
		t.Errorf("state %d, want %d", got, want)
	}
	c := &model.Config{NumHiddenLayers: 4, NumAttentionHeads: 16, NumKeyValueHeads: 2, HeadDim: 256, Raw: raw,
		LayerTypes: []string{"linear_attention", "linear_attention", "linear_attention", "full_attention"}}
	layers, err := layerSpecs(c)
	if err != nil {
		t.Fatal(err)
	}
	if layers[0].Kind != vram.AttnLinear || layers[0].StateBytes != want || layers[3].Kind != vram.AttnFull {
		t.Errorf("layers %+v", layers)
	}
}

func TestSpecErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		info *model.Info
	}{
		{"nil", nil},
		{"no config", &model.Info{}},
		{"no layers", &model.Info{Config: &model.Config{}}},
		{"no tensors", &model.Info{Config: &model.Config{NumHiddenLayers: 2, NumAttentionHeads: 2, NumKeyValueHeads: 2, HeadDim: 64}}},
		{"no head size", &model.Info{Config: &model.Config{NumHiddenLayers: 2}, Tensors: []model.Tensor{{Name: "x", Bytes: 2, Shape: []int64{1}}}}},
		{"layer types mismatch", &model.Info{Config: &model.Config{NumHiddenLayers: 2, NumKeyValueHeads: 2, HeadDim: 64, LayerTypes: []string{"full_attention"}},
			Tensors: []model.Tensor{{Name: "x", Bytes: 2, Shape: []int64{1}}}}},
		{"window missing", &model.Info{Config: &model.Config{NumHiddenLayers: 1, NumKeyValueHeads: 2, HeadDim: 64, LayerTypes: []string{"sliding_attention"}},
			Tensors: []model.Tensor{{Name: "x", Bytes: 2, Shape: []int64{1}}}}},
	} {
		if _, err := Spec(c.info); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
}
