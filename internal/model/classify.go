package model

import (
	"strconv"
	"strings"
)

// Class is what a tensor is for.
type Class string

// Tensor classes (see docs/models.md for the naming rules).
const (
	ClassEmbedding    Class = "embedding"     // token embedding
	ClassLMHead       Class = "lm_head"       // output projection
	ClassFinalNorm    Class = "final_norm"    // norm after the last layer
	ClassAttention    Class = "attention"     // q/k/v/o and MLA projections
	ClassAttnKV       Class = "attention_kv"  // k/v projections (split by KV heads)
	ClassMLP          Class = "mlp"           // dense feed-forward
	ClassExpert       Class = "expert"        // routed MoE experts
	ClassSharedExpert Class = "shared_expert" // always-active MoE experts
	ClassRouter       Class = "router"        // MoE gate
	ClassNorm         Class = "norm"          // per-layer norms
	ClassVision       Class = "vision"        // vision tower and projector
	ClassMTP          Class = "mtp"           // multi-token-prediction layers past num_hidden_layers (not loaded unless speculating)
	ClassOther        Class = "other"
)

// Split says how tensor parallelism divides a tensor among ranks.
type Split string

// Splits.
const (
	// SplitReplicated: every rank holds the whole tensor (norms, biases,
	// routers, MLA's down projections, per-tensor scales).
	SplitReplicated Split = "replicated"
	// SplitTP: divided by TP (column- and row-parallel linears).
	SplitTP Split = "tp"
	// SplitVocab: divided by TP after padding the vocabulary to a multiple of 64.
	SplitVocab Split = "vocab"
	// SplitKVHeads: divided by min(TP, KV heads); past that the heads are replicated.
	SplitKVHeads Split = "kv_heads"
	// SplitExpert: routed experts; divided by TP (tensor-parallel MoE) or
	// by the expert-parallel size.
	SplitExpert Split = "expert"
)

// Kind is the classification of one tensor.
type Kind struct {
	Class Class `json:"class"`
	Split Split `json:"split"`
	// Layer is the decoder layer index, -1 for tensors outside the layers.
	Layer int `json:"layer"`
}

// layerMarkers are the path components after which a decoder layer index
// follows. Vision towers use the same words; they are recognised first.
var layerMarkers = []string{"layers", "h", "blocks", "layer"}

var visionMarkers = []string{
	"vision_tower", "vision_model", "visual", "vision_encoder", "multi_modal_projector",
	"mm_projector", "vision_embed", "image_newline", "audio_tower", "audio_model", "embed_vision", "embed_audio",
}

// Classify classifies a tensor by its name (Hugging Face naming) and rank.
// numLayers is config.num_hidden_layers (0 when unknown); layers at or past it
// are multi-token-prediction layers.
func Classify(name string, ndim int, numLayers int) Kind {
	var buf [24]string // on the stack: RankBytes classifies 92,000 tensors per call
	parts := buf[:0]
	for rest := name; ; {
		p, r, more := strings.Cut(rest, ".")
		parts = append(parts, p)
		if !more {
			break
		}
		rest = r
	}
	for _, p := range parts {
		for _, v := range visionMarkers {
			if p == v {
				if ndim <= 1 {
					return Kind{ClassVision, SplitReplicated, -1}
				}
				return Kind{ClassVision, SplitTP, -1}
			}
		}
	}
	layer := -1
	for i := 0; i+1 < len(parts); i++ {
		for _, mk := range layerMarkers {
			if parts[i] == mk {
				if n, err := strconv.Atoi(parts[i+1]); err == nil && n >= 0 {
					layer = n
					parts = parts[i+2:]
					goto found
				}
			}
		}
	}
found:
	if layer < 0 {
		return Kind{globalClass(name, ndim), globalSplit(name, ndim), -1}
	}
	k := Kind{Layer: layer}
	if numLayers > 0 && layer >= numLayers {
		k.Class = ClassMTP
		k.Split = layerSplit(parts, ndim)
		return k
	}
	k.Class, k.Split = layerClass(parts, ndim)
	return k
}

func has(parts []string, words ...string) bool {
	for _, p := range parts {
		for _, w := range words {
			if p == w {
				return true
			}
		}
	}
	return false
}

// isLMHead recognises the output projection: lm_head (most families),
// output (Llama's original naming), embed_out (GPT-NeoX), and the
// language_model.lm_head of multimodal checkpoints.
func isLMHead(name string) bool {
	return strings.HasPrefix(name, "lm_head.") || strings.Contains(name, ".lm_head.") ||
		name == "output.weight" || strings.HasPrefix(name, "embed_out.")
}

func globalClass(name string, ndim int) Class {
	// last is the module name: "model.norm.weight" -> "norm".
	last := strings.TrimSuffix(name, ".weight")
	last = last[strings.LastIndex(last, ".")+1:]
	switch {
	case isLMHead(name):
		return ClassLMHead
	case strings.Contains(name, "embed_tokens") || strings.Contains(name, "word_embeddings") ||
		strings.Contains(name, "tok_embeddings") || last == "wte" || last == "embeddings":
		return ClassEmbedding
	case ndim <= 1 && (strings.Contains(last, "norm") || last == "ln_f"):
		return ClassFinalNorm
	}
	return ClassOther
}

func globalSplit(name string, ndim int) Split {
	switch globalClass(name, ndim) {
	case ClassEmbedding, ClassLMHead:
		if ndim >= 2 {
			return SplitVocab
		}
		return SplitReplicated
	case ClassFinalNorm:
		return SplitReplicated
	}
	if ndim <= 1 {
		return SplitReplicated
	}
	return SplitTP
}

// layerClass classifies the remainder of a layer tensor's name.
func layerClass(parts []string, ndim int) (Class, Split) {
	switch {
	case has(parts, "experts") && !has(parts, "shared_experts", "shared_expert"):
		if ndim <= 1 && !has(parts, "gate_up_proj_bias", "down_proj_bias") {
			return ClassExpert, SplitReplicated
		}
		return ClassExpert, SplitExpert
	case has(parts, "shared_experts", "shared_expert"):
		return ClassSharedExpert, layerSplit(parts, ndim)
	case has(parts, "gate", "router", "shared_expert_gate") && (has(parts, "mlp", "block_sparse_moe", "moe", "feed_forward")):
		return ClassRouter, SplitReplicated
	}
	attn := has(parts, "self_attn", "attention", "attn", "self_attention", "mixer", "linear_attn", "cross_attn")
	switch {
	case ndim <= 1 && isNorm(parts):
		return ClassNorm, SplitReplicated
	case attn:
		if has(parts, "k_proj", "v_proj", "wk", "wv", "key", "value") {
			return ClassAttnKV, SplitKVHeads // biases too: they follow their heads
		}
		return ClassAttention, layerSplit(parts, ndim)
	case has(parts, "mlp", "feed_forward", "ffn", "block_sparse_moe", "moe"):
		return ClassMLP, layerSplit(parts, ndim)
	case isNorm(parts):
		return ClassNorm, SplitReplicated
	}
	return ClassOther, layerSplit(parts, ndim)
}

func isNorm(parts []string) bool {
	for _, p := range parts {
		if strings.Contains(p, "norm") || strings.HasPrefix(p, "ln_") {
			return true
		}
	}
	return false
}

// layerSplit is the split of a non-expert layer tensor: 0-D and 1-D tensors
// (norms, biases, per-tensor scales) and the MLA down projections, which vLLM
// builds as ReplicatedLinear, are replicated; everything else is divided by TP.
func layerSplit(parts []string, ndim int) Split {
	if ndim <= 1 {
		return SplitReplicated
	}
	if has(parts, "q_a_proj", "kv_a_proj_with_mqa", "fused_qkv_a_proj_with_mqa") {
		return SplitReplicated
	}
	if has(parts, "k_proj", "v_proj") {
		return SplitKVHeads
	}
	return SplitTP
}

// Kind classifies t with the layer count of cfg (nil allowed).
func (t Tensor) Kind(cfg *Config) Kind {
	n := 0
	if cfg != nil {
		n = cfg.NumHiddenLayers
	}
	return Classify(t.Name, len(t.Shape), n)
}
