package modeltest

// configJSON is config.json as the model family writes it.
func configJSON(s spec, q bool) map[string]any {
	c := map[string]any{
		"architectures":           []string{s.arch},
		"model_type":              s.modelType,
		"hidden_size":             s.hidden,
		"intermediate_size":       s.inter,
		"num_hidden_layers":       s.layers,
		"num_attention_heads":     s.heads,
		"num_key_value_heads":     s.kvHeads,
		"vocab_size":              s.vocab,
		"max_position_embeddings": s.maxPos,
		"rope_theta":              s.ropeTheta,
		"rms_norm_eps":            1e-6,
		"tie_word_embeddings":     s.tied,
		"torch_dtype":             "bfloat16",
		"bos_token_id":            s.bos,
		"eos_token_id":            s.eos,
		"hidden_act":              "silu",
		"attention_bias":          false,
		"transformers_version":    "4.51.0",
		"use_cache":               true,
	}
	if s.headDim > 0 {
		c["head_dim"] = s.headDim
	}
	if s.ropeScaling != nil {
		c["rope_scaling"] = s.ropeScaling
	}
	switch s.fam {
	case famQwen3, famQwen3MoE:
		c["sliding_window"] = nil
		c["use_sliding_window"] = false
		c["max_window_layers"] = s.layers
	}
	if s.fam == famQwen3MoE {
		c["num_experts"] = s.experts
		c["num_experts_per_tok"] = s.topK
		c["moe_intermediate_size"] = s.moeInter
		c["decoder_sparse_step"] = 1
		c["norm_topk_prob"] = true
		c["mlp_only_layers"] = []int{}
	}
	if s.fam == famDeepSeek {
		delete(c, "head_dim")
		delete(c, "attention_bias")
		c["n_routed_experts"] = s.experts
		c["n_shared_experts"] = s.shared
		c["num_experts_per_tok"] = s.topK
		c["moe_intermediate_size"] = s.moeInter
		c["first_k_dense_replace"] = s.firstDense
		c["moe_layer_freq"] = 1
		c["n_group"] = 8
		c["topk_group"] = 4
		c["topk_method"] = "noaux_tc"
		c["scoring_func"] = "sigmoid"
		c["routed_scaling_factor"] = 2.5
		c["norm_topk_prob"] = true
		c["q_lora_rank"] = s.qLora
		c["kv_lora_rank"] = s.kvLora
		c["qk_nope_head_dim"] = s.nope
		c["qk_rope_head_dim"] = s.rope
		c["v_head_dim"] = s.vHead
		c["num_nextn_predict_layers"] = s.mtpLayers
	}
	if s.sliding > 0 {
		c["sliding_window"] = s.sliding
		c["sliding_window_pattern"] = s.pattern
		c["query_pre_attn_scalar"] = s.headDim
		c["hidden_activation"] = "gelu_pytorch_tanh"
		delete(c, "hidden_act")
		c["rope_local_base_freq"] = 10000.0
	}
	if q {
		c["quantization_config"] = map[string]any{
			"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
			"weight_block_size": []int{128, 128},
		}
	}
	if s.fam != famGemma3 {
		return c
	}
	// Multimodal: the language model's facts move into text_config.
	text := map[string]any{}
	for k, v := range c {
		switch k {
		case "architectures", "transformers_version", "quantization_config", "torch_dtype":
		default:
			text[k] = v
		}
	}
	text["model_type"] = "gemma3_text"
	return map[string]any{
		"architectures":        c["architectures"],
		"model_type":           "gemma3",
		"text_config":          text,
		"torch_dtype":          "bfloat16",
		"transformers_version": "4.51.0",
		"boi_token_index":      255999,
		"eoi_token_index":      256000,
		"image_token_index":    262144,
		"mm_tokens_per_image":  256,
		"quantization_config":  c["quantization_config"],
		"vision_config": map[string]any{
			"model_type": "siglip_vision_model", "hidden_size": 1152, "intermediate_size": 4304,
			"num_hidden_layers": 27, "num_attention_heads": 16, "image_size": 896, "patch_size": 14,
		},
	}
}

// tokenizerJSON is a small but well-formed tokenizers file (byte-level BPE
// over a handful of tokens): enough for tools that parse it, not for text.
func tokenizerJSON() []byte {
	vocab := map[string]int{"<|begin|>": 0, "<|end|>": 1, "<|im_start|>": 2, "<|im_end|>": 3}
	for i, c := range "abcdefghijklmnopqrstuvwxyz" {
		vocab[string(c)] = 4 + i
	}
	return mustJSON(map[string]any{
		"version":    "1.0",
		"truncation": nil,
		"padding":    nil,
		"added_tokens": []map[string]any{
			{"id": 0, "content": "<|begin|>", "special": true, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false},
			{"id": 1, "content": "<|end|>", "special": true, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false},
		},
		"normalizer":     nil,
		"pre_tokenizer":  map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
		"post_processor": nil,
		"decoder":        map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
		"model":          map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "vocab": vocab, "merges": []string{}},
	})
}

// Chat templates with tool support, shortened from the families' own.
const chatML = `{%- if tools %}<|im_start|>system
You may call one or more functions. Function signatures:
<tools>
{%- for tool in tools %}
{{ tool | tojson }}
{%- endfor %}
</tools>
Return a JSON object inside <tool_call></tool_call> tags.<|im_end|>
{% endif %}
{%- for message in messages %}<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}`

const llama3Template = `{{- bos_token }}
{%- for message in messages %}<|start_header_id|>{{ message.role }}<|end_header_id|>

{{ message.content | trim }}<|eot_id|>
{%- endfor %}
{%- if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>

{% endif %}`

const gemmaTemplate = `{{ bos_token }}
{%- for message in messages %}<start_of_turn>{{ 'model' if message.role == 'assistant' else message.role }}
{{ message.content | trim }}<end_of_turn>
{% endfor %}
{%- if add_generation_prompt %}<start_of_turn>model
{% endif %}`
