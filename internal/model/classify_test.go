package model

import "testing"

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ndim  int
		class Class
		split Split
		layer int
	}{
		{"model.embed_tokens.weight", 2, ClassEmbedding, SplitVocab, -1},
		{"lm_head.weight", 2, ClassLMHead, SplitVocab, -1},
		{"model.norm.weight", 1, ClassFinalNorm, SplitReplicated, -1},
		{"model.layers.7.self_attn.q_proj.weight", 2, ClassAttention, SplitTP, 7},
		{"model.layers.7.self_attn.k_proj.weight", 2, ClassAttnKV, SplitKVHeads, 7},
		{"model.layers.7.self_attn.v_proj.bias", 1, ClassAttnKV, SplitKVHeads, 7},
		{"model.layers.7.self_attn.o_proj.weight", 2, ClassAttention, SplitTP, 7},
		{"model.layers.7.self_attn.q_norm.weight", 1, ClassNorm, SplitReplicated, 7},
		{"model.layers.12.input_layernorm.weight", 1, ClassNorm, SplitReplicated, 12},
		{"model.layers.0.mlp.down_proj.weight", 2, ClassMLP, SplitTP, 0},
		{"model.layers.0.mlp.down_proj.weight_scale_inv", 2, ClassMLP, SplitTP, 0},
		{"model.layers.0.mlp.down_proj.weight_scale", 0, ClassMLP, SplitReplicated, 0},
		// MoE
		{"model.layers.3.mlp.gate.weight", 2, ClassRouter, SplitReplicated, 3},
		{"model.layers.3.mlp.gate.e_score_correction_bias", 1, ClassRouter, SplitReplicated, 3},
		{"model.layers.3.mlp.experts.17.gate_proj.weight", 2, ClassExpert, SplitExpert, 3},
		{"model.layers.3.mlp.experts.17.down_proj.weight_scale_inv", 2, ClassExpert, SplitExpert, 3},
		{"model.layers.3.mlp.shared_experts.up_proj.weight", 2, ClassSharedExpert, SplitTP, 3},
		{"model.layers.3.mlp.shared_expert.up_proj.weight", 2, ClassSharedExpert, SplitTP, 3},
		{"model.layers.3.mlp.shared_expert_gate.weight", 2, ClassRouter, SplitReplicated, 3}, // vLLM: ReplicatedLinear
		{"model.layers.1.block_sparse_moe.gate.weight", 2, ClassRouter, SplitReplicated, 1},
		{"model.layers.1.block_sparse_moe.experts.3.w1.weight", 2, ClassExpert, SplitExpert, 1},
		{"model.layers.1.mlp.router.weight", 2, ClassRouter, SplitReplicated, 1},
		{"model.layers.1.mlp.experts.gate_up_proj_blocks", 4, ClassExpert, SplitExpert, 1},
		{"model.layers.1.mlp.experts.gate_up_proj_bias", 2, ClassExpert, SplitExpert, 1},
		// MLA
		{"model.layers.5.self_attn.q_a_proj.weight", 2, ClassAttention, SplitReplicated, 5},
		{"model.layers.5.self_attn.kv_a_proj_with_mqa.weight", 2, ClassAttention, SplitReplicated, 5},
		{"model.layers.5.self_attn.kv_a_layernorm.weight", 1, ClassNorm, SplitReplicated, 5},
		{"model.layers.5.self_attn.kv_b_proj.weight", 2, ClassAttention, SplitTP, 5},
		{"model.layers.5.self_attn.q_b_proj.weight", 2, ClassAttention, SplitTP, 5},
		// MTP layer of DeepSeek-V3 (num_hidden_layers 61)
		{"model.layers.61.eh_proj.weight", 2, ClassMTP, SplitTP, 61},
		{"model.layers.61.shared_head.head.weight", 2, ClassMTP, SplitTP, 61},
		// Multimodal
		{"language_model.model.layers.4.self_attn.k_proj.weight", 2, ClassAttnKV, SplitKVHeads, 4},
		{"model.language_model.layers.4.mlp.up_proj.weight", 2, ClassMLP, SplitTP, 4},
		{"language_model.model.embed_tokens.weight", 2, ClassEmbedding, SplitVocab, -1},
		{"language_model.lm_head.weight", 2, ClassLMHead, SplitVocab, -1},
		{"language_model.model.norm.weight", 1, ClassFinalNorm, SplitReplicated, -1},
		{"vision_tower.vision_model.encoder.layers.3.self_attn.q_proj.weight", 2, ClassVision, SplitTP, -1},
		{"vision_tower.vision_model.encoder.layers.3.layer_norm1.bias", 1, ClassVision, SplitReplicated, -1},
		{"model.visual.blocks.3.attn.qkv.weight", 2, ClassVision, SplitTP, -1},
		{"multi_modal_projector.mm_input_projection_weight", 2, ClassVision, SplitTP, -1},
		// Other spellings
		{"transformer.h.3.attn.c_attn.weight", 2, ClassAttention, SplitTP, 3},
		{"transformer.wte.weight", 2, ClassEmbedding, SplitVocab, -1},
		{"transformer.ln_f.weight", 1, ClassFinalNorm, SplitReplicated, -1},
		{"output.weight", 2, ClassLMHead, SplitVocab, -1},
		{"model.layers.2.self_attn.rotary_emb.inv_freq", 1, ClassAttention, SplitReplicated, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Classify(tc.name, tc.ndim, 61)
			want := Kind{tc.class, tc.split, tc.layer}
			if got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}
}

func TestPPLayers(t *testing.T) {
	// vLLM tests/distributed/test_pipeline_partition.py goldens.
	for _, tc := range []struct{ n, pp, rank, start, end int }{
		{2, 2, 0, 0, 1}, {2, 2, 1, 1, 2},
		{3, 2, 0, 0, 2}, {3, 2, 1, 2, 3},
		{3, 3, 0, 0, 1}, {3, 3, 1, 1, 2}, {3, 3, 2, 2, 3},
		{4, 3, 0, 0, 1}, {4, 3, 1, 1, 3}, {4, 3, 2, 3, 4},
		{5, 3, 0, 0, 2}, {5, 3, 1, 2, 4}, {5, 3, 2, 4, 5},
		{36, 1, 0, 0, 36}, {61, 4, 2, 30, 46}, {61, 4, 3, 46, 61},
	} {
		if s, e := PPLayers(tc.n, tc.pp, tc.rank); s != tc.start || e != tc.end {
			t.Errorf("PPLayers(%d, %d, %d) = %d, %d; want %d, %d", tc.n, tc.pp, tc.rank, s, e, tc.start, tc.end)
		}
	}
}

func TestSplitBytesVocabPadding(t *testing.T) {
	// 100 rows pad to 128; TP 2 holds 64 rows of 10 bytes each.
	tt := Tensor{Shape: []int64{100, 5}, Bytes: 1000, Dtype: "BF16"}
	if got := splitBytes(tt, SplitVocab, 2, 0, 0); got != 640 {
		t.Errorf("got %d, want 640", got)
	}
	// KV heads: 2 heads at TP 4 replicate, each rank holds one head.
	kv := Tensor{Shape: []int64{64, 128}, Bytes: 16384}
	if got := splitBytes(kv, SplitKVHeads, 4, 2, 0); got != 8192 {
		t.Errorf("got %d, want 8192", got)
	}
	if got := splitBytes(kv, SplitExpert, 2, 2, 8); got != 2048 {
		t.Errorf("EP 8: got %d, want 2048", got)
	}
}
