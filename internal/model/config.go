package model

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
)

// ParseConfig reads config.json. The language model's facts of a multimodal
// model come from its nested text_config (llm_config, language_config);
// architectures, quantization and the dtype fall back to the outer object.
// Spellings of the model families are normalised (see docs/models.md);
// warnings name keys whose values have the wrong type.
func ParseConfig(data []byte) (*Config, []string, error) {
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, nil, fmt.Errorf("not a JSON object: %v", err)
	}
	if raw == nil {
		return nil, nil, fmt.Errorf("null, not a JSON object")
	}
	r := &cfgReader{}
	c := &Config{Raw: raw}
	text := raw
	for _, k := range []string{"text_config", "llm_config", "language_config"} {
		if m, ok := raw[k].(map[string]any); ok {
			text = m
			c.Multimodal = true
			break
		}
	}
	both := []map[string]any{text, raw}
	if !c.Multimodal {
		both = both[:1]
	}

	c.Architectures = r.strs(both, "architectures")
	c.ModelType = r.str(both, "model_type")
	c.HiddenSize = r.int(both, "hidden_size", "n_embd", "d_model", "dim")
	c.NumHiddenLayers = r.int(both, "num_hidden_layers", "n_layer", "num_layers", "n_layers")
	c.NumAttentionHeads = r.int(both, "num_attention_heads", "n_head", "num_heads", "n_heads")
	c.NumKeyValueHeads = r.int(both, "num_key_value_heads", "num_kv_heads", "n_kv_heads", "multi_query_group_num", "n_head_kv")
	if c.NumKeyValueHeads == 0 && r.bool(both, "multi_query") {
		c.NumKeyValueHeads = 1
	}
	if c.NumKeyValueHeads == 0 {
		c.NumKeyValueHeads = c.NumAttentionHeads
	}
	c.HeadDim = r.int(both, "head_dim", "attention_head_size")
	c.IntermediateSize = r.int(both, "intermediate_size", "ffn_hidden_size", "n_inner", "ffn_dim")
	c.VocabSize = r.int(both, "vocab_size", "padded_vocab_size")
	c.MaxPositionEmbeddings = r.int(both, "max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")
	c.TorchDtype = r.str(both, "torch_dtype", "dtype")
	c.TieWordEmbeddings = r.bool(both, "tie_word_embeddings")
	if m, ok := first(both, "rope_scaling", "rope_parameters").(map[string]any); ok {
		c.RopeScaling = m
	}

	c.NumExperts = r.int(both, "num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts", "num_routed_experts")
	c.NumExpertsPerTok = r.int(both, "num_experts_per_tok", "num_experts_per_token", "experts_per_token", "moe_top_k", "moe_k")
	c.MoEIntermediateSize = r.int(both, "moe_intermediate_size", "expert_intermediate_size", "moe_ffn_hidden_size")
	c.NumSharedExperts = r.int(both, "n_shared_experts", "num_shared_experts", "moe_num_shared_experts")
	if c.NumSharedExperts == 0 && r.int(both, "shared_expert_intermediate_size") > 0 {
		c.NumSharedExperts = 1 // Qwen2-MoE: one shared expert of that size
	}
	c.FirstKDenseReplace = r.int(both, "first_k_dense_replace", "first_k_dense")
	if c.MoEIntermediateSize == 0 && c.NumExperts > 0 {
		c.MoEIntermediateSize = c.IntermediateSize // Mixtral, gpt-oss: experts use intermediate_size
	}

	c.KVLoraRank = r.int(both, "kv_lora_rank")
	c.QLoraRank = r.int(both, "q_lora_rank")
	c.QKRopeHeadDim = r.int(both, "qk_rope_head_dim")
	c.QKNopeHeadDim = r.int(both, "qk_nope_head_dim")
	c.VHeadDim = r.int(both, "v_head_dim")

	if c.HeadDim == 0 {
		switch {
		case c.KVLoraRank > 0 && c.QKNopeHeadDim+c.QKRopeHeadDim > 0:
			c.HeadDim = c.QKNopeHeadDim + c.QKRopeHeadDim
		case c.NumAttentionHeads > 0:
			c.HeadDim = c.HiddenSize / c.NumAttentionHeads
		}
	}

	c.SlidingWindow = r.int(both, "sliding_window")
	c.LayerTypes = r.strs(both, "layer_types")
	if v, ok := first(both, "use_sliding_window").(bool); ok && !v {
		c.SlidingWindow = 0 // Qwen2: the window is declared but off
		c.LayerTypes = nil
	}
	// The bound keeps a corrupt layer count from allocating gigabytes.
	if len(c.LayerTypes) == 0 && c.SlidingWindow > 0 && c.NumHiddenLayers > 0 && c.NumHiddenLayers <= maxLayers {
		c.LayerTypes = derivedLayerTypes(c, r, both)
	}
	if !slices.ContainsFunc(c.LayerTypes, func(s string) bool { return s != LayerFull }) {
		c.LayerTypes = nil
	}

	if q, ok := first([]map[string]any{raw, text}, "quantization_config", "compression_config").(map[string]any); ok {
		c.Quantization = parseQuant(q)
	}
	return c, r.warnings, nil
}

// maxLayers is far above any real model (DeepSeek-V3 has 61, Llama 3.1 405B 126).
const maxLayers = 10000

// derivedLayerTypes spells out the layer kinds of models that declare a
// window without a layer_types list, as Hugging Face's configs derive it.
func derivedLayerTypes(c *Config, r *cfgReader, both []map[string]any) []string {
	n := c.NumHiddenLayers
	out := make([]string, n)
	pattern := r.int(both, "sliding_window_pattern")
	if pattern == 0 {
		switch c.ModelType {
		case "gemma2":
			pattern = 2
		case "gemma3", "gemma3_text":
			pattern = 6
		}
	}
	mwl, hasMWL := first(both, "max_window_layers").(float64)
	_, useSW := first(both, "use_sliding_window").(bool)
	for i := range out {
		out[i] = LayerSliding
		switch {
		case pattern > 0:
			// Every pattern-th layer is global: Gemma 2 alternates, Gemma 3 has 5 local then 1 global.
			if (i+1)%pattern == 0 {
				out[i] = LayerFull
			}
		case hasMWL && useSW:
			// Qwen2: the first max_window_layers layers use full attention.
			if i < int(mwl) {
				out[i] = LayerFull
			}
		}
	}
	return out
}

func parseQuant(q map[string]any) *QuantConfig {
	r := &cfgReader{}
	m := []map[string]any{q}
	out := &QuantConfig{Raw: q}
	out.Method = r.str(m, "quant_method", "quant_algo")
	out.Bits = r.int(m, "bits", "w_bit", "num_bits", "weight_bits")
	out.GroupSize = r.int(m, "group_size", "q_group_size")
	out.Format = r.str(m, "format", "fmt")
	out.ActivationScheme = r.str(m, "activation_scheme")
	if a, ok := q["weight_block_size"].([]any); ok {
		for _, v := range a {
			if f, ok := v.(float64); ok && f == math.Trunc(f) && math.Abs(f) < 1<<31 {
				out.WeightBlockSize = append(out.WeightBlockSize, int(f))
			}
		}
	}
	// compressed-tensors keeps the weight scheme in config_groups.
	if out.Bits == 0 {
		if groups, ok := q["config_groups"].(map[string]any); ok {
			names := make([]string, 0, len(groups))
			for k := range groups {
				names = append(names, k)
			}
			slices.Sort(names)
			for _, k := range names {
				g, _ := groups[k].(map[string]any)
				w, _ := g["weights"].(map[string]any)
				if w == nil {
					continue
				}
				wm := []map[string]any{w}
				out.Bits = r.int(wm, "num_bits")
				if out.GroupSize == 0 {
					out.GroupSize = r.int(wm, "group_size")
				}
				break
			}
		}
	}
	return out
}

type cfgReader struct{ warnings []string }

// warn records a warning once per key.
func (r *cfgReader) warn(key string, v any, want string) {
	shown, _ := json.Marshal(v)
	w := fmt.Sprintf("%s is %s, not %s; ignored", key, shown, want)
	if !slices.Contains(r.warnings, w) {
		r.warnings = append(r.warnings, w)
	}
}

// first returns the value of the first key present in the first map that has one.
func first(maps []map[string]any, keys ...string) any {
	for _, m := range maps {
		for _, k := range keys {
			if v, ok := m[k]; ok && v != nil {
				return v
			}
		}
	}
	return nil
}

func (r *cfgReader) int(maps []map[string]any, keys ...string) int {
	for _, m := range maps {
		for _, k := range keys {
			v, ok := m[k]
			if !ok || v == nil {
				continue
			}
			f, ok := v.(float64)
			if !ok || f != math.Trunc(f) || f < 0 || f > math.MaxInt32 {
				r.warn(k, v, "a non-negative integer")
				continue
			}
			return int(f)
		}
	}
	return 0
}

func (r *cfgReader) str(maps []map[string]any, keys ...string) string {
	for _, m := range maps {
		for _, k := range keys {
			v, ok := m[k]
			if !ok || v == nil {
				continue
			}
			s, ok := v.(string)
			if !ok {
				r.warn(k, v, "a string")
				continue
			}
			return s
		}
	}
	return ""
}

func (r *cfgReader) bool(maps []map[string]any, keys ...string) bool {
	for _, m := range maps {
		for _, k := range keys {
			v, ok := m[k]
			if !ok || v == nil {
				continue
			}
			b, ok := v.(bool)
			if !ok {
				r.warn(k, v, "true or false")
				continue
			}
			return b
		}
	}
	return false
}

func (r *cfgReader) strs(maps []map[string]any, keys ...string) []string {
	for _, m := range maps {
		for _, k := range keys {
			v, ok := m[k]
			if !ok || v == nil {
				continue
			}
			a, ok := v.([]any)
			if !ok {
				r.warn(k, v, "a list")
				continue
			}
			out := make([]string, 0, len(a))
			for _, e := range a {
				if s, ok := e.(string); ok {
					out = append(out, s)
				}
			}
			return out
		}
	}
	return nil
}
