package model

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseConfig(t *testing.T) {
	rep := func(s string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = s
		}
		return out
	}
	gemma3 := rep(LayerSliding, 12)
	gemma3[5], gemma3[11] = LayerFull, LayerFull
	qwen2SW := rep(LayerSliding, 4)
	qwen2SW[0], qwen2SW[1] = LayerFull, LayerFull

	for _, tc := range []struct {
		name string
		json string
		want Config // compared field by field where set (Raw ignored)
	}{
		{"llama defaults head_dim and tie", `{"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":4096,
			"num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,"intermediate_size":14336,
			"vocab_size":128256,"max_position_embeddings":131072,"torch_dtype":"bfloat16",
			"rope_scaling":{"rope_type":"llama3","factor":8.0}}`,
			Config{Architectures: []string{"LlamaForCausalLM"}, ModelType: "llama", HiddenSize: 4096, NumHiddenLayers: 32,
				NumAttentionHeads: 32, NumKeyValueHeads: 8, HeadDim: 128, IntermediateSize: 14336, VocabSize: 128256,
				MaxPositionEmbeddings: 131072, TorchDtype: "bfloat16", RopeScaling: map[string]any{"rope_type": "llama3", "factor": 8.0}}},
		{"kv heads default to heads", `{"hidden_size":2048,"num_hidden_layers":2,"num_attention_heads":16}`,
			Config{HiddenSize: 2048, NumHiddenLayers: 2, NumAttentionHeads: 16, NumKeyValueHeads: 16, HeadDim: 128}},
		{"qwen3 explicit head_dim, window off", `{"model_type":"qwen3","hidden_size":1024,"num_hidden_layers":28,"num_attention_heads":16,
			"num_key_value_heads":8,"head_dim":128,"tie_word_embeddings":true,"sliding_window":null,"use_sliding_window":false,"max_window_layers":28}`,
			Config{ModelType: "qwen3", HiddenSize: 1024, NumHiddenLayers: 28, NumAttentionHeads: 16, NumKeyValueHeads: 8, HeadDim: 128, TieWordEmbeddings: true}},
		{"qwen2 window declared but off", `{"hidden_size":3584,"num_hidden_layers":28,"num_attention_heads":28,"num_key_value_heads":4,
			"sliding_window":131072,"use_sliding_window":false,"max_window_layers":28}`,
			Config{HiddenSize: 3584, NumHiddenLayers: 28, NumAttentionHeads: 28, NumKeyValueHeads: 4, HeadDim: 128}},
		{"qwen2 window on past max_window_layers", `{"hidden_size":64,"num_hidden_layers":4,"num_attention_heads":4,
			"sliding_window":4096,"use_sliding_window":true,"max_window_layers":2}`,
			Config{HiddenSize: 64, NumHiddenLayers: 4, NumAttentionHeads: 4, NumKeyValueHeads: 4, HeadDim: 16, SlidingWindow: 4096, LayerTypes: qwen2SW}},
		{"mistral v0.1 every layer sliding", `{"model_type":"mistral","hidden_size":4096,"num_hidden_layers":3,"num_attention_heads":32,"num_key_value_heads":8,"sliding_window":4096}`,
			Config{ModelType: "mistral", HiddenSize: 4096, NumHiddenLayers: 3, NumAttentionHeads: 32, NumKeyValueHeads: 8, HeadDim: 128,
				SlidingWindow: 4096, LayerTypes: rep(LayerSliding, 3)}},
		{"gemma2 alternates", `{"model_type":"gemma2","hidden_size":3584,"num_hidden_layers":4,"num_attention_heads":16,"num_key_value_heads":8,"head_dim":256,"sliding_window":4096}`,
			Config{ModelType: "gemma2", HiddenSize: 3584, NumHiddenLayers: 4, NumAttentionHeads: 16, NumKeyValueHeads: 8, HeadDim: 256,
				SlidingWindow: 4096, LayerTypes: []string{LayerSliding, LayerFull, LayerSliding, LayerFull}}},
		{"gemma3 multimodal text_config, pattern 6", `{"architectures":["Gemma3ForConditionalGeneration"],"model_type":"gemma3","torch_dtype":"bfloat16",
			"text_config":{"model_type":"gemma3_text","hidden_size":2560,"num_hidden_layers":12,"num_attention_heads":8,"num_key_value_heads":4,
			"head_dim":256,"sliding_window":1024,"sliding_window_pattern":6,"vocab_size":262208},
			"vision_config":{"hidden_size":1152,"num_hidden_layers":27}}`,
			Config{Architectures: []string{"Gemma3ForConditionalGeneration"}, ModelType: "gemma3_text", HiddenSize: 2560, NumHiddenLayers: 12,
				NumAttentionHeads: 8, NumKeyValueHeads: 4, HeadDim: 256, VocabSize: 262208, TorchDtype: "bfloat16",
				SlidingWindow: 1024, LayerTypes: gemma3, Multimodal: true}},
		{"explicit layer_types win (gpt-oss), mxfp4", `{"model_type":"gpt_oss","hidden_size":2880,"num_hidden_layers":4,"num_attention_heads":64,
			"num_key_value_heads":8,"head_dim":64,"num_local_experts":32,"experts_per_token":4,"intermediate_size":2880,"sliding_window":128,
			"layer_types":["sliding_attention","full_attention","sliding_attention","full_attention"],
			"quantization_config":{"quant_method":"mxfp4","modules_to_not_convert":["model.layers.*.self_attn"]}}`,
			Config{ModelType: "gpt_oss", HiddenSize: 2880, NumHiddenLayers: 4, NumAttentionHeads: 64, NumKeyValueHeads: 8, HeadDim: 64,
				IntermediateSize: 2880, NumExperts: 32, NumExpertsPerTok: 4, MoEIntermediateSize: 2880, SlidingWindow: 128,
				LayerTypes: []string{LayerSliding, LayerFull, LayerSliding, LayerFull}, Quantization: &QuantConfig{Method: "mxfp4"}}},
		{"all-full layer_types is nil", `{"hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"layer_types":["full_attention","full_attention"]}`,
			Config{HiddenSize: 64, NumHiddenLayers: 2, NumAttentionHeads: 4, NumKeyValueHeads: 4, HeadDim: 16}},
		{"deepseek v3 MLA and experts, fp8 blocks", `{"model_type":"deepseek_v3","hidden_size":7168,"num_hidden_layers":61,"num_attention_heads":128,
			"num_key_value_heads":128,"n_routed_experts":256,"n_shared_experts":1,"num_experts_per_tok":8,"moe_intermediate_size":2048,
			"first_k_dense_replace":3,"q_lora_rank":1536,"kv_lora_rank":512,"qk_nope_head_dim":128,"qk_rope_head_dim":64,"v_head_dim":128,
			"intermediate_size":18432,"vocab_size":129280,
			"quantization_config":{"quant_method":"fp8","fmt":"e4m3","activation_scheme":"dynamic","weight_block_size":[128,128]}}`,
			Config{ModelType: "deepseek_v3", HiddenSize: 7168, NumHiddenLayers: 61, NumAttentionHeads: 128, NumKeyValueHeads: 128, HeadDim: 192,
				IntermediateSize: 18432, VocabSize: 129280, NumExperts: 256, NumExpertsPerTok: 8, MoEIntermediateSize: 2048, NumSharedExperts: 1,
				FirstKDenseReplace: 3, KVLoraRank: 512, QLoraRank: 1536, QKRopeHeadDim: 64, QKNopeHeadDim: 128, VHeadDim: 128,
				Quantization: &QuantConfig{Method: "fp8", Format: "e4m3", ActivationScheme: "dynamic", WeightBlockSize: []int{128, 128}}}},
		{"deepseek v2 lite: no q_lora", `{"hidden_size":2048,"num_hidden_layers":27,"num_attention_heads":16,"kv_lora_rank":512,"q_lora_rank":null,
			"qk_nope_head_dim":128,"qk_rope_head_dim":64,"v_head_dim":128,"n_routed_experts":64,"n_shared_experts":2,"num_experts_per_tok":6,"first_k_dense_replace":1,"moe_intermediate_size":1408}`,
			Config{HiddenSize: 2048, NumHiddenLayers: 27, NumAttentionHeads: 16, NumKeyValueHeads: 16, HeadDim: 192, NumExperts: 64, NumExpertsPerTok: 6,
				MoEIntermediateSize: 1408, NumSharedExperts: 2, FirstKDenseReplace: 1, KVLoraRank: 512, QKRopeHeadDim: 64, QKNopeHeadDim: 128, VHeadDim: 128}},
		{"mixtral experts use intermediate_size", `{"hidden_size":4096,"num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,
			"num_local_experts":8,"num_experts_per_tok":2,"intermediate_size":14336}`,
			Config{HiddenSize: 4096, NumHiddenLayers: 32, NumAttentionHeads: 32, NumKeyValueHeads: 8, HeadDim: 128, IntermediateSize: 14336,
				NumExperts: 8, NumExpertsPerTok: 2, MoEIntermediateSize: 14336}},
		{"qwen2-moe shared expert", `{"hidden_size":2048,"num_hidden_layers":24,"num_attention_heads":16,"num_experts":60,"num_experts_per_tok":4,
			"moe_intermediate_size":1408,"shared_expert_intermediate_size":5632}`,
			Config{HiddenSize: 2048, NumHiddenLayers: 24, NumAttentionHeads: 16, NumKeyValueHeads: 16, HeadDim: 128, NumExperts: 60,
				NumExpertsPerTok: 4, MoEIntermediateSize: 1408, NumSharedExperts: 1}},
		{"gpt2 spellings", `{"n_embd":768,"n_layer":12,"n_head":12,"n_positions":1024,"vocab_size":50257}`,
			Config{HiddenSize: 768, NumHiddenLayers: 12, NumAttentionHeads: 12, NumKeyValueHeads: 12, HeadDim: 64, VocabSize: 50257, MaxPositionEmbeddings: 1024}},
		{"chatglm kv groups", `{"hidden_size":4096,"num_layers":40,"num_attention_heads":32,"multi_query_group_num":2,"kv_channels":128,"padded_vocab_size":151552,"seq_length":131072}`,
			Config{HiddenSize: 4096, NumHiddenLayers: 40, NumAttentionHeads: 32, NumKeyValueHeads: 2, HeadDim: 128, VocabSize: 151552, MaxPositionEmbeddings: 131072}},
		{"falcon multi_query", `{"hidden_size":4544,"num_hidden_layers":32,"num_attention_heads":71,"multi_query":true}`,
			Config{HiddenSize: 4544, NumHiddenLayers: 32, NumAttentionHeads: 71, NumKeyValueHeads: 1, HeadDim: 64}},
		{"awq", `{"hidden_size":64,"num_hidden_layers":1,"num_attention_heads":4,"quantization_config":{"quant_method":"awq","bits":4,"group_size":128,"version":"gemm"}}`,
			Config{HiddenSize: 64, NumHiddenLayers: 1, NumAttentionHeads: 4, NumKeyValueHeads: 4, HeadDim: 16, Quantization: &QuantConfig{Method: "awq", Bits: 4, GroupSize: 128}}},
		{"compressed-tensors bits in config_groups", `{"hidden_size":64,"num_hidden_layers":1,"num_attention_heads":4,"dtype":"bfloat16",
			"quantization_config":{"quant_method":"compressed-tensors","format":"pack-quantized","config_groups":{"group_0":{"weights":{"num_bits":4,"group_size":128}}}}}`,
			Config{HiddenSize: 64, NumHiddenLayers: 1, NumAttentionHeads: 4, NumKeyValueHeads: 4, HeadDim: 16, TorchDtype: "bfloat16",
				Quantization: &QuantConfig{Method: "compressed-tensors", Format: "pack-quantized", Bits: 4, GroupSize: 128}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, warns, err := ParseConfig([]byte(tc.json))
			if err != nil {
				t.Fatal(err)
			}
			if len(warns) > 0 {
				t.Errorf("warnings %v", warns)
			}
			got.Raw = nil
			if got.Quantization != nil {
				got.Quantization.Raw = nil
			}
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", *got, tc.want)
				if got.Quantization != nil && tc.want.Quantization != nil {
					t.Errorf("quant got %+v want %+v", *got.Quantization, *tc.want.Quantization)
				}
			}
		})
	}
}

func TestParseConfigBad(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`[1]`, "not a JSON object"},
		{`null`, "null"},
		{`{"hidden_size":`, "not a JSON object"},
	} {
		if _, _, err := ParseConfig([]byte(tc.json)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.json, err, tc.want)
		}
	}
	c, warns, err := ParseConfig([]byte(`{"hidden_size":"4096","num_hidden_layers":1.5,"num_attention_heads":-2,"tie_word_embeddings":"yes","architectures":"X"}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.HiddenSize != 0 || c.NumHiddenLayers != 0 || c.NumAttentionHeads != 0 || len(warns) != 5 {
		t.Errorf("config %+v, warnings %q", c, warns)
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"text_config":{"hidden_size":64,"num_hidden_layers":4,"num_attention_heads":4,"sliding_window":8,"sliding_window_pattern":2}}`))
	f.Add([]byte(`{"num_hidden_layers":3,"sliding_window":4096,"use_sliding_window":true,"max_window_layers":1e9}`))
	f.Add([]byte(`{"quantization_config":{"config_groups":{"a":{"weights":{"num_bits":8}}},"weight_block_size":[128,1e30]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, _, err := ParseConfig(data)
		if err != nil {
			return
		}
		if len(c.LayerTypes) > 0 && c.NumHiddenLayers > 0 && len(c.LayerTypes) != c.NumHiddenLayers && c.Raw["layer_types"] == nil {
			t.Fatalf("derived %d layer types for %d layers", len(c.LayerTypes), c.NumHiddenLayers)
		}
	})
}

func TestParseConfigHugeLayerCount(t *testing.T) {
	c, _, err := ParseConfig([]byte(`{"num_hidden_layers":2000000000,"sliding_window":4096,"hidden_size":64,"num_attention_heads":4}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.LayerTypes) != 0 {
		t.Errorf("derived %d layer types", len(c.LayerTypes))
	}
}
