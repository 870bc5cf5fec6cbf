package vram

import (
	"errors"
	"fmt"
)

// AttentionKind is how one decoder layer keeps its per-request state.
type AttentionKind string

// Attention kinds.
const (
	// AttnFull keeps K and V for every token of the request (MHA, GQA, MQA).
	AttnFull AttentionKind = "full"
	// AttnSliding keeps K and V for the last Window tokens only (also used for
	// Llama 4's chunked local attention, Window = attention_chunk_size).
	AttnSliding AttentionKind = "sliding"
	// AttnMLA keeps one compressed latent of KVLoraRank+RopeDim values per
	// token (DeepSeek V2/V3, Kimi K2); it is not divided by TP.
	AttnMLA AttentionKind = "mla"
	// AttnLinear is a linear-attention or Mamba layer of a hybrid model: a
	// fixed state per request (StateBytes), nothing per token.
	AttnLinear AttentionKind = "linear"
)

// Layer is the KV facts of one decoder layer.
type Layer struct {
	Kind AttentionKind `json:"kind"`
	// KVHeads is the model's number of KV heads (before TP).
	KVHeads int `json:"kv_heads,omitempty"`
	// HeadDim is the K head size; VHeadDim the V head size (0 = HeadDim).
	HeadDim  int `json:"head_dim,omitempty"`
	VHeadDim int `json:"v_head_dim,omitempty"`
	// Window is the sliding window in tokens (AttnSliding).
	Window int `json:"window,omitempty"`
	// KVLoraRank and RopeDim size the MLA latent (512 + 64 for DeepSeek V3).
	KVLoraRank int `json:"kv_lora_rank,omitempty"`
	RopeDim    int `json:"rope_dim,omitempty"`
	// StateBytes is the recurrent state of one request for the whole layer
	// (AttnLinear), divided by TP like the heads it belongs to.
	StateBytes uint64 `json:"state_bytes,omitempty"`
}

// Sharding says how tensor parallelism divides a weight part.
type Sharding string

// Shardings.
const (
	// ShardTP: column- or row-parallel weights, vocabulary-parallel
	// embeddings, routed experts (TP or EP: the same bytes per rank).
	ShardTP Sharding = "tp"
	// ShardKVHeads: k/v projections, divided by TP while TP <= KVHeads, one
	// head per rank (replicated) beyond that.
	ShardKVHeads Sharding = "kv_heads"
	// Replicated: every rank holds all of it (norms, biases, routers, MLA
	// down projections, rotary caches).
	Replicated Sharding = "replicated"
)

// Placement says which pipeline stage holds a weight part.
type Placement string

// Placements.
const (
	// PlaceLayer: the stage that holds decoder layer Layer.
	PlaceLayer Placement = "layer"
	// PlaceFirst: the first stage (token embedding, vision tower).
	PlaceFirst Placement = "first"
	// PlaceLast: the last stage (final norm, lm_head).
	PlaceLast Placement = "last"
	// PlaceLastIfSplit: the last stage, only when PP > 1 (the copy of a tied
	// embedding the last stage needs for its lm_head).
	PlaceLastIfSplit Placement = "last_if_split"
	// PlaceEvery: every stage (rotary cos/sin caches).
	PlaceEvery Placement = "every"
)

// WeightPart is a group of weights that shard and place alike.
type WeightPart struct {
	Name  string    `json:"name"`
	Bytes uint64    `json:"bytes"`
	Shard Sharding  `json:"shard"`
	Place Placement `json:"place"`
	// Layer is the decoder layer of a PlaceLayer part.
	Layer int `json:"layer,omitempty"`
	// Heads is the KV head count of a ShardKVHeads part.
	Heads int `json:"heads,omitempty"`
}

// ModelSpec is what the memory model needs to know about a model.
type ModelSpec struct {
	Name string `json:"name,omitempty"`
	// Layers has one entry per decoder layer the engine loads, in order
	// (pipeline stages take contiguous runs).
	Layers []Layer `json:"layers"`
	// Weights are the tensors as (bytes, sharding, placement) parts.
	Weights []WeightPart `json:"weights"`

	// NumAttentionHeads must be divisible by TP (vLLM and SGLang refuse otherwise).
	NumAttentionHeads int `json:"num_attention_heads"`
	// HeadDim is the query head size (for the activation estimate).
	HeadDim          int `json:"head_dim"`
	HiddenSize       int `json:"hidden_size"`
	IntermediateSize int `json:"intermediate_size"`
	VocabSize        int `json:"vocab_size"`
	// MoE: ExpertsPerToken > 0 with MoEIntermediateSize.
	ExpertsPerToken     int `json:"experts_per_token,omitempty"`
	MoEIntermediateSize int `json:"moe_intermediate_size,omitempty"`
	// MaxModelLen is the longest context the model allows (derived from
	// max_position_embeddings and rope scaling as vLLM derives it); 0 = unknown.
	MaxModelLen int `json:"max_model_len,omitempty"`
	// DtypeBytes is the size of the model's activations and of the "auto" KV
	// cache dtype (2 for bf16/fp16; 0 means 2).
	DtypeBytes int  `json:"dtype_bytes,omitempty"`
	Multimodal bool `json:"multimodal,omitempty"`
}

// Limits that keep every product below 2^63 (and reject nonsense input).
const (
	maxDim       = 1 << 16 // heads, head sizes, hidden sizes
	maxLayers    = 1 << 12
	maxVocab     = 1 << 24
	maxTokens    = 1 << 28 // context lengths, batch sizes
	maxRanks     = 1 << 10
	maxBytes     = 1 << 50 // one GPU, one weight part
	maxBlockSize = 1 << 16
)

// Validate reports the first fact that makes the spec unusable.
func (s *ModelSpec) Validate() error {
	if s == nil {
		return errors.New("no model spec")
	}
	if len(s.Layers) == 0 {
		return errors.New("the model has no decoder layers (config.json num_hidden_layers)")
	}
	if len(s.Layers) > maxLayers {
		return fmt.Errorf("the model has %d layers, more than the %d this estimate handles", len(s.Layers), maxLayers)
	}
	for _, v := range []struct {
		name string
		v    int
	}{
		{"num_attention_heads", s.NumAttentionHeads}, {"head_dim", s.HeadDim}, {"hidden_size", s.HiddenSize},
		{"intermediate_size", s.IntermediateSize}, {"moe_intermediate_size", s.MoEIntermediateSize},
		{"num_experts_per_tok", s.ExpertsPerToken}, {"dtype bytes", s.DtypeBytes},
	} {
		if v.v < 0 || v.v > maxDim {
			return fmt.Errorf("model %s is %d, outside 0..%d", v.name, v.v, maxDim)
		}
	}
	if s.VocabSize < 0 || s.VocabSize > maxVocab {
		return fmt.Errorf("model vocab_size is %d, outside 0..%d", s.VocabSize, maxVocab)
	}
	if s.MaxModelLen < 0 || s.MaxModelLen > maxTokens {
		return fmt.Errorf("model max length is %d, outside 0..%d", s.MaxModelLen, maxTokens)
	}
	if s.DtypeBytes > 8 {
		return fmt.Errorf("model dtype of %d bytes is not a float type", s.DtypeBytes)
	}
	for i, l := range s.Layers {
		if err := l.validate(); err != nil {
			return fmt.Errorf("layer %d: %w", i, err)
		}
	}
	var total uint64
	for _, w := range s.Weights {
		if w.Bytes > maxBytes {
			return fmt.Errorf("weight part %q of %d bytes is larger than any GPU", w.Name, w.Bytes)
		}
		total += w.Bytes
		if total > maxBytes*16 {
			return errors.New("the weights add up to more than 16 PiB")
		}
		switch w.Shard {
		case ShardTP, Replicated:
		case ShardKVHeads:
			if w.Heads <= 0 || w.Heads > maxDim {
				return fmt.Errorf("weight part %q is split by KV heads but has %d heads", w.Name, w.Heads)
			}
		default:
			return fmt.Errorf("weight part %q has unknown sharding %q", w.Name, w.Shard)
		}
		switch w.Place {
		case PlaceFirst, PlaceLast, PlaceLastIfSplit, PlaceEvery:
		case PlaceLayer:
			if w.Layer < 0 || w.Layer >= len(s.Layers) {
				return fmt.Errorf("weight part %q belongs to layer %d of %d", w.Name, w.Layer, len(s.Layers))
			}
		default:
			return fmt.Errorf("weight part %q has unknown placement %q", w.Name, w.Place)
		}
	}
	return nil
}

func (l Layer) validate() error {
	inRange := func(name string, v, lo, hi int) error {
		if v < lo || v > hi {
			return fmt.Errorf("%s %s is %d, outside %d..%d", l.Kind, name, v, lo, hi)
		}
		return nil
	}
	switch l.Kind {
	case AttnFull, AttnSliding:
		// The bounds keep block x layers x bytes per token below 2^63.
		for _, e := range []error{inRange("kv heads", l.KVHeads, 1, 4096), inRange("head_dim", l.HeadDim, 1, 8192), inRange("v_head_dim", l.VHeadDim, 0, 8192)} {
			if e != nil {
				return e
			}
		}
		if l.Kind == AttnSliding && (l.Window < 1 || l.Window > maxTokens) {
			return fmt.Errorf("sliding window of %d tokens", l.Window)
		}
	case AttnMLA:
		if l.KVLoraRank+l.RopeDim < 1 || l.KVLoraRank < 0 || l.RopeDim < 0 || l.KVLoraRank+l.RopeDim > maxDim {
			return fmt.Errorf("MLA latent of %d+%d values", l.KVLoraRank, l.RopeDim)
		}
	case AttnLinear:
		if l.StateBytes > maxBytes {
			return fmt.Errorf("linear-attention state of %d bytes", l.StateBytes)
		}
	default:
		return fmt.Errorf("unknown attention kind %q", l.Kind)
	}
	return nil
}

// kvHeadsPerRank is max(1, heads / tp): KV heads are replicated once TP
// exceeds their number (vLLM and SGLang both).
func kvHeadsPerRank(heads, tp int) int {
	return max(1, heads/tp)
}

// tokenBytes is the KV bytes one token needs in layer l on one TP rank
// (0 for linear layers). elem is the KV element size; dsMLA selects vLLM's
// fp8_ds_mla layout (656 bytes per token).
func (l Layer) tokenBytes(tp int, elem kvElem) uint64 {
	switch l.Kind {
	case AttnFull, AttnSliding:
		v := l.VHeadDim
		if v == 0 {
			v = l.HeadDim
		}
		return uint64(kvHeadsPerRank(l.KVHeads, tp)) * uint64(l.HeadDim+v) * elem.bytes()
	case AttnMLA:
		if elem.dsMLA {
			return 656
		}
		return uint64(l.KVLoraRank+l.RopeDim) * elem.bytes()
	}
	return 0
}

// stateBytes is the fixed per-request state of a linear layer on one TP rank.
func (l Layer) stateBytes(tp int) uint64 {
	if l.Kind != AttnLinear {
		return 0
	}
	return ceilDiv(l.StateBytes, uint64(tp))
}

// stageLayers returns the half-open range of layers pipeline stage rank of pp
// holds, as vLLM's get_pp_indices splits them (SGLang copies it): equal
// parts, the remainder one layer each to the stages before the last, from
// the second-to-last backwards.
// (model.PPLayers is the same rule; vram imports nothing internal.)
func stageLayers(n, pp, rank int) (start, end int) {
	if pp <= 1 {
		return 0, n
	}
	parts := make([]int, pp)
	for j := range parts {
		parts[j] = n / pp
	}
	for j := 2; j < n%pp+2; j++ {
		parts[pp-j]++
	}
	for j := 0; j < rank; j++ {
		start += parts[j]
	}
	return start, start + parts[rank]
}

// rankWeights is the weight bytes one rank of stage `stage` holds.
func (s *ModelSpec) rankWeights(tp, pp, stage int) uint64 {
	start, end := stageLayers(len(s.Layers), pp, stage)
	first, last := stage == 0, stage == pp-1
	var total uint64
	for _, w := range s.Weights {
		switch w.Place {
		case PlaceLayer:
			if w.Layer < start || w.Layer >= end {
				continue
			}
		case PlaceFirst:
			if !first {
				continue
			}
		case PlaceLast:
			if !last {
				continue
			}
		case PlaceLastIfSplit:
			if !last || pp == 1 {
				continue
			}
		}
		switch w.Shard {
		case ShardTP:
			total += ceilDiv(w.Bytes, uint64(tp))
		case ShardKVHeads:
			per := kvHeadsPerRank(w.Heads, tp)
			total += w.Bytes / uint64(w.Heads) * uint64(per)
		default:
			total += w.Bytes
		}
	}
	return total
}

func (s *ModelSpec) dtypeBytes() int {
	if s.DtypeBytes <= 0 {
		return 2
	}
	return s.DtypeBytes
}

func ceilDiv(a, b uint64) uint64 {
	if b <= 1 {
		return a
	}
	return a/b + min(a%b, 1)
}
