package sim

import (
	"errors"
	"strings"

	"github.com/roofline/roofline/internal/model"
	"github.com/roofline/roofline/internal/vram"
)

// specFromInfo turns an inspected model folder into vram's ModelSpec.
//
// Stand-in: internal/vram/fromodel (Spec) is being written beside this
// package; until it lands this covers what the rehearsal needs (dense, GQA,
// MLA and sliding-window layers; weights sharded by TP). Replace the call in
// footprint() with fromodel.Spec when it exists.
func specFromInfo(info *model.Info) (vram.ModelSpec, error) {
	c := info.Config
	if c == nil || c.NumHiddenLayers <= 0 || c.NumAttentionHeads <= 0 || c.HiddenSize <= 0 {
		return vram.ModelSpec{}, errors.New("config.json lacks num_hidden_layers, hidden_size or num_attention_heads")
	}
	headDim := c.HeadDim
	if headDim == 0 {
		headDim = c.HiddenSize / c.NumAttentionHeads
	}
	kvHeads := c.NumKeyValueHeads
	if kvHeads == 0 {
		kvHeads = c.NumAttentionHeads
	}
	s := vram.ModelSpec{Name: info.Dir, NumAttentionHeads: c.NumAttentionHeads, HeadDim: headDim,
		HiddenSize: c.HiddenSize, IntermediateSize: c.IntermediateSize, VocabSize: c.VocabSize,
		ExpertsPerToken: c.NumExpertsPerTok, MoEIntermediateSize: c.MoEIntermediateSize,
		MaxModelLen: maxPositions(c), DtypeBytes: dtypeBytes(c.TorchDtype), Multimodal: c.Multimodal}
	for i := 0; i < c.NumHiddenLayers; i++ {
		l := vram.Layer{Kind: vram.AttnFull, KVHeads: kvHeads, HeadDim: headDim}
		switch {
		case c.KVLoraRank > 0:
			l = vram.Layer{Kind: vram.AttnMLA, KVLoraRank: c.KVLoraRank, RopeDim: c.QKRopeHeadDim}
		case i < len(c.LayerTypes) && c.LayerTypes[i] == model.LayerSliding && c.SlidingWindow > 0:
			l.Kind, l.Window = vram.AttnSliding, c.SlidingWindow
		}
		s.Layers = append(s.Layers, l)
	}
	var total uint64
	for _, t := range info.Tensors {
		total += uint64(t.Bytes)
	}
	if total == 0 && info.IndexTotalSize > 0 {
		total = uint64(info.IndexTotalSize)
	}
	s.Weights = []vram.WeightPart{{Name: "all", Bytes: total, Shard: vram.ShardTP, Place: vram.PlaceEvery}}
	return s, nil
}

// maxPositions is the model's context limit as the engines derive it:
// max_position_embeddings, times the rope scaling factor for the scalings
// that extend it (YaRN, dynamic; Llama 3's scaling does not).
func maxPositions(c *model.Config) int {
	n := c.MaxPositionEmbeddings
	if n <= 0 {
		return 0
	}
	if c.RopeScaling != nil {
		typ, _ := c.RopeScaling["rope_type"].(string)
		if typ == "" {
			typ, _ = c.RopeScaling["type"].(string)
		}
		f, _ := c.RopeScaling["factor"].(float64)
		if f > 1 && (typ == "yarn" || typ == "dynamic") {
			if orig, ok := c.RopeScaling["original_max_position_embeddings"].(float64); ok && orig > 0 {
				return int(orig * f)
			}
			return int(float64(n) * f)
		}
	}
	return n
}

func dtypeBytes(d string) int {
	switch strings.ToLower(d) {
	case "float32", "fp32":
		return 4
	case "float8_e4m3fn", "fp8":
		return 1
	}
	return 2
}
