// Package fromodel turns what internal/model learns about a model folder
// (config facts and safetensors headers) into vram's ModelSpec. It is glue:
// vram stays free of model's types, model free of vram's.
package fromodel

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"

	"github.com/roofline/roofline/internal/model"
	"github.com/roofline/roofline/internal/vram"
)

// Spec builds the memory model's view of a model: one vram.Layer per decoder
// layer from config.json, and the weights from the tensor headers grouped by
// layer, sharding and pipeline placement. Multi-token-prediction layers are
// left out (engines load them only for speculative decoding).
func Spec(info *model.Info) (vram.ModelSpec, error) {
	var s vram.ModelSpec
	if info == nil || info.Config == nil {
		return s, errors.New("the model has no config.json facts: inspect the folder first (roofline model verify DIR)")
	}
	c := info.Config
	n := c.NumHiddenLayers
	if n <= 0 {
		return s, errors.New("config.json has no num_hidden_layers: cannot size the KV cache")
	}
	if n > 1<<12 {
		return s, fmt.Errorf("config.json says %d layers: not a model this estimate handles", n)
	}
	if len(info.Tensors) == 0 {
		return s, errors.New("the model folder has no safetensors weights")
	}
	s.Name = filepath.Base(info.Dir)
	s.NumAttentionHeads = c.NumAttentionHeads
	s.HeadDim = c.HeadDim
	s.HiddenSize = c.HiddenSize
	s.IntermediateSize = c.IntermediateSize
	s.VocabSize = c.VocabSize
	if c.NumExperts > 0 {
		s.ExpertsPerToken = c.NumExpertsPerTok
		s.MoEIntermediateSize = c.MoEIntermediateSize
	}
	s.MaxModelLen = DerivedMaxLen(c)
	s.DtypeBytes = 2 // vLLM and SGLang run fp32 checkpoints in bf16
	s.Multimodal = c.Multimodal

	layers, err := layerSpecs(c)
	if err != nil {
		return s, err
	}
	s.Layers = layers
	s.Weights = weightParts(info)
	return s, nil
}

// layerSpecs is one vram.Layer per decoder layer.
func layerSpecs(c *model.Config) ([]vram.Layer, error) {
	n := c.NumHiddenLayers
	kvh := c.NumKeyValueHeads
	if kvh == 0 {
		kvh = c.NumAttentionHeads
	}
	if c.KVLoraRank == 0 && (kvh <= 0 || c.HeadDim <= 0) {
		return nil, fmt.Errorf("config.json gives %d KV heads of size %d: cannot size the KV cache", kvh, c.HeadDim)
	}
	if len(c.LayerTypes) > 0 && len(c.LayerTypes) != n {
		return nil, fmt.Errorf("config.json layer_types has %d entries for %d layers", len(c.LayerTypes), n)
	}
	state := linearStateBytes(c.Raw)
	out := make([]vram.Layer, n)
	for i := range out {
		full := vram.Layer{Kind: vram.AttnFull, KVHeads: kvh, HeadDim: c.HeadDim}
		if c.KVLoraRank > 0 {
			out[i] = vram.Layer{Kind: vram.AttnMLA, KVLoraRank: c.KVLoraRank, RopeDim: c.QKRopeHeadDim}
			continue
		}
		kind := model.LayerFull
		if len(c.LayerTypes) > 0 {
			kind = c.LayerTypes[i]
		}
		switch {
		case kind == model.LayerFull || kind == "attention" || kind == "full":
			out[i] = full
		case kind == model.LayerSliding || kind == "sliding" || kind == "chunked_attention":
			if c.SlidingWindow <= 0 {
				return nil, fmt.Errorf("layer %d slides but config.json gives no sliding_window", i)
			}
			full.Kind, full.Window = vram.AttnSliding, c.SlidingWindow
			out[i] = full
		default:
			// linear_attention, mamba, ...: a fixed state per request.
			out[i] = vram.Layer{Kind: vram.AttnLinear, StateBytes: state}
		}
	}
	return out, nil
}

// linearStateBytes is the per-request state of one linear-attention layer
// in bf16 (Qwen3-Next's gated delta net: value heads x key dim x value dim,
// plus the convolution window), or of one Mamba-2 layer. 0 when the config
// names neither.
func linearStateBytes(raw map[string]any) uint64 {
	get := func(keys ...string) uint64 {
		for _, k := range keys {
			if f, ok := raw[k].(float64); ok && f > 0 && f < 1<<20 && f == math.Trunc(f) {
				return uint64(f)
			}
		}
		return 0
	}
	if nv, dk, dv := get("linear_num_value_heads"), get("linear_key_head_dim"), get("linear_value_head_dim"); nv > 0 && dk > 0 && dv > 0 {
		nk, conv := get("linear_num_key_heads"), get("linear_conv_kernel_dim")
		convState := uint64(0)
		if conv > 1 {
			convState = (conv - 1) * (2*nk*dk + nv*dv)
		}
		return 2 * (nv*dk*dv + convState)
	}
	if heads, dim, st := get("mamba_n_heads", "mamba_num_heads"), get("mamba_head_dim", "mamba_d_head"), get("mamba_d_state", "ssm_state_size", "state_size"); heads > 0 && dim > 0 && st > 0 {
		conv := get("mamba_d_conv", "conv_kernel")
		groups := max(get("mamba_n_groups", "n_groups"), 1)
		convState := uint64(0)
		if conv > 1 {
			convState = (conv - 1) * (heads*dim + 2*groups*st)
		}
		return 2 * (heads*dim*st + convState)
	}
	return 0
}

// DerivedMaxLen is the longest context vLLM allows without an override
// (_get_and_verify_max_len): max_position_embeddings, scaled by the rope
// factor except for the su/longrope/llama3 types and Gemma 3 (which already
// count it), and for YaRN from original_max_position_embeddings.
func DerivedMaxLen(c *model.Config) int {
	l := float64(c.MaxPositionEmbeddings)
	if l <= 0 {
		return 0
	}
	// vLLM skips the factor for Gemma 3, whose max_position_embeddings is
	// already the scaled length.
	if rs := c.RopeScaling; rs != nil && !strings.Contains(c.ModelType, "gemma3") {
		typ, _ := rs["rope_type"].(string)
		if typ == "" {
			typ, _ = rs["type"].(string)
		}
		switch typ {
		case "su", "longrope", "llama3", "", "default", "mrope":
		default:
			f, _ := rs["factor"].(float64)
			if f <= 0 || math.IsNaN(f) || f > 1024 {
				f = 1
			}
			if typ == "yarn" {
				if o, ok := rs["original_max_position_embeddings"].(float64); ok && o > 0 {
					l = o
				}
			}
			l *= f
		}
	}
	return int(min(l, 1<<28))
}

// weightParts groups the tensors by (layer, sharding, placement).
func weightParts(info *model.Info) []vram.WeightPart {
	c := info.Config
	type key struct {
		layer int
		shard vram.Sharding
		place vram.Placement
		name  string
	}
	sums := map[key]uint64{}
	hasLMHead := false
	var embed uint64
	for _, t := range info.Tensors {
		if t.Kind(c).Class == model.ClassLMHead {
			hasLMHead = true
		}
	}
	for _, t := range info.Tensors {
		if t.Bytes <= 0 {
			continue
		}
		k := t.Kind(c)
		if k.Class == model.ClassMTP {
			continue
		}
		bytes := uint64(t.Bytes)
		var sh vram.Sharding
		switch k.Split {
		case model.SplitKVHeads:
			sh = vram.ShardKVHeads
		case model.SplitReplicated:
			sh = vram.Replicated
		case model.SplitVocab:
			sh = vram.ShardTP
			// Vocabulary-parallel layers pad the rows to a multiple of 64.
			if len(t.Shape) > 0 && t.Shape[0] > 0 {
				rows := uint64(t.Shape[0])
				bytes = bytes / rows * ((rows + 63) / 64 * 64)
			}
		default:
			sh = vram.ShardTP
		}
		if sh == vram.ShardKVHeads && c.NumKeyValueHeads <= 0 {
			sh = vram.ShardTP
		}
		kk := key{layer: k.Layer, shard: sh, name: string(k.Class)}
		switch {
		case k.Layer >= 0:
			if k.Layer >= c.NumHiddenLayers {
				continue
			}
			kk.place, kk.name = vram.PlaceLayer, "layer"
		case k.Class == model.ClassEmbedding:
			kk.place = vram.PlaceFirst
			if len(t.Shape) >= 2 {
				embed += bytes
			}
		case k.Class == model.ClassLMHead || k.Class == model.ClassFinalNorm:
			kk.place = vram.PlaceLast
		default:
			kk.place = vram.PlaceFirst
		}
		sums[kk] += bytes
	}
	var out []vram.WeightPart
	for k, b := range sums {
		w := vram.WeightPart{Name: k.name, Bytes: b, Shard: k.shard, Place: k.place, Layer: max(k.layer, 0)}
		if k.shard == vram.ShardKVHeads {
			w.Heads = c.NumKeyValueHeads
		}
		out = append(out, w)
	}
	// Tied embeddings: a last stage of its own loads the embedding as lm_head.
	if !hasLMHead && embed > 0 {
		out = append(out, vram.WeightPart{Name: "lm_head (tied)", Bytes: embed, Shard: vram.ShardTP, Place: vram.PlaceLastIfSplit})
	}
	// vLLM's rotary cos/sin cache: positions x rotary dim in the model dtype
	// (it accounts for the 0.01-0.03 GiB between total_size and "Model loading took").
	if rot := rotaryBytes(c); rot > 0 {
		out = append(out, vram.WeightPart{Name: "rotary_emb.cos_sin_cache", Bytes: rot, Shard: vram.Replicated, Place: vram.PlaceEvery})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Place != b.Place {
			return a.Place < b.Place
		}
		if a.Layer != b.Layer {
			return a.Layer < b.Layer
		}
		if a.Shard != b.Shard {
			return a.Shard < b.Shard
		}
		return a.Name < b.Name
	})
	return out
}

func rotaryBytes(c *model.Config) uint64 {
	dim := c.HeadDim
	if c.KVLoraRank > 0 {
		dim = c.QKRopeHeadDim
	}
	if f, ok := c.Raw["partial_rotary_factor"].(float64); ok && f > 0 && f <= 1 {
		dim = int(float64(dim) * f)
	}
	pos := c.MaxPositionEmbeddings
	if dim <= 0 || pos <= 0 || strings.HasPrefix(c.ModelType, "mamba") {
		return 0
	}
	return uint64(pos) * uint64(dim) * 2
}
