package vram

// Model specs built from config.json facts (../shared/reference/vram.md §5)
// for the worked checks. Weights are computed from the shapes; the published
// safetensors total_size is checked where vram.md has it.

type denseCfg struct {
	name                          string
	layers, hidden, heads, kvh    int
	headDim, inter, vocab, maxPos int
	tied, qkvBias, qkNorm         bool
	linearBytes                   uint64 // 1 for FP8 checkpoints, 2 otherwise
	extraFirst                    uint64 // vision tower and projector bytes (first stage, TP)
	window                        int    // sliding window of the layers in slidingEvery
	slidingEvery                  int    // layer i is sliding when i%slidingEvery == 0 (0: none)
	experts, topK, moeInter       int
}

func (c denseCfg) spec() ModelSpec {
	lb := c.linearBytes
	if lb == 0 {
		lb = 2
	}
	h, hd := uint64(c.hidden), uint64(c.headDim)
	q, kv := uint64(c.heads)*hd, uint64(c.kvh)*hd
	s := ModelSpec{
		Name: c.name, NumAttentionHeads: c.heads, HeadDim: c.headDim, HiddenSize: c.hidden,
		IntermediateSize: c.inter, VocabSize: c.vocab, MaxModelLen: c.maxPos, DtypeBytes: 2,
		ExpertsPerToken: c.topK, MoEIntermediateSize: c.moeInter, Multimodal: c.extraFirst > 0,
	}
	for i := 0; i < c.layers; i++ {
		l := Layer{Kind: AttnFull, KVHeads: c.kvh, HeadDim: c.headDim}
		if c.slidingEvery > 0 && i%c.slidingEvery == 0 {
			l.Kind, l.Window = AttnSliding, c.window
		}
		s.Layers = append(s.Layers, l)
		part := func(name string, bytes uint64, sh Sharding) {
			w := WeightPart{Name: name, Bytes: bytes, Shard: sh, Place: PlaceLayer, Layer: i}
			if sh == ShardKVHeads {
				w.Heads = c.kvh
			}
			s.Weights = append(s.Weights, w)
		}
		part("q_proj", h*q*lb, ShardTP)
		part("kv_proj", 2*h*kv*lb, ShardKVHeads)
		part("o_proj", q*h*lb, ShardTP)
		if c.experts > 0 {
			part("experts", uint64(c.experts)*3*h*uint64(c.moeInter)*lb, ShardTP)
			part("router", uint64(c.experts)*h*2, Replicated)
		} else {
			part("mlp", 3*h*uint64(c.inter)*lb, ShardTP)
		}
		part("norms", 2*h*2, Replicated)
		if c.qkvBias {
			part("q_bias", q*2, ShardTP)
			part("kv_bias", 2*kv*2, ShardKVHeads)
		}
		if c.qkNorm {
			part("qk_norm", 2*hd*2, Replicated)
		}
	}
	emb := uint64(c.vocab) * h * 2
	s.Weights = append(s.Weights,
		WeightPart{Name: "embed_tokens", Bytes: emb, Shard: ShardTP, Place: PlaceFirst},
		WeightPart{Name: "norm", Bytes: h * 2, Shard: Replicated, Place: PlaceLast},
		// vLLM's rotary cos/sin cache: max_position x rotary_dim in the model dtype.
		WeightPart{Name: "rotary_emb.cos_sin_cache", Bytes: uint64(c.maxPos) * hd * 2, Shard: Replicated, Place: PlaceEvery},
	)
	if c.tied {
		s.Weights = append(s.Weights, WeightPart{Name: "lm_head(tied)", Bytes: emb, Shard: ShardTP, Place: PlaceLastIfSplit})
	} else {
		s.Weights = append(s.Weights, WeightPart{Name: "lm_head", Bytes: emb, Shard: ShardTP, Place: PlaceLast})
	}
	if c.extraFirst > 0 {
		s.Weights = append(s.Weights, WeightPart{Name: "vision_tower", Bytes: c.extraFirst, Shard: ShardTP, Place: PlaceFirst})
	}
	return s
}

var (
	llama31_8B = denseCfg{name: "Llama-3.1-8B", layers: 32, hidden: 4096, heads: 32, kvh: 8, headDim: 128,
		inter: 14336, vocab: 128256, maxPos: 131072}
	llama3_8B = denseCfg{name: "Meta-Llama-3-8B", layers: 32, hidden: 4096, heads: 32, kvh: 8, headDim: 128,
		inter: 14336, vocab: 128256, maxPos: 8192}
	llama33_70B_FP8 = denseCfg{name: "Llama-3.3-70B-FP8", layers: 80, hidden: 8192, heads: 64, kvh: 8, headDim: 128,
		inter: 28672, vocab: 128256, maxPos: 131072, linearBytes: 1}
	qwen2_7B = denseCfg{name: "Qwen2-7B", layers: 28, hidden: 3584, heads: 28, kvh: 4, headDim: 128,
		inter: 18944, vocab: 152064, maxPos: 32768, qkvBias: true}
	qwq32B = denseCfg{name: "QwQ-32B", layers: 64, hidden: 5120, heads: 40, kvh: 8, headDim: 128,
		inter: 27648, vocab: 152064, maxPos: 131072, qkvBias: true}
	qwen3_06B = denseCfg{name: "Qwen3-0.6B", layers: 28, hidden: 1024, heads: 16, kvh: 8, headDim: 128,
		inter: 3072, vocab: 151936, maxPos: 40960, tied: true, qkNorm: true}
	qwen3_32B = denseCfg{name: "Qwen3-32B", layers: 64, hidden: 5120, heads: 64, kvh: 8, headDim: 128,
		inter: 25600, vocab: 151936, maxPos: 40960, qkNorm: true}
	qwen3_235B = denseCfg{name: "Qwen3-235B-A22B", layers: 94, hidden: 4096, heads: 64, kvh: 4, headDim: 128,
		inter: 12288, vocab: 151936, maxPos: 40960, qkNorm: true, experts: 128, topK: 8, moeInter: 1536}
	// Pixtral vision tower + projector of Mistral-Small-3.1/3.2: about 0.44 B
	// parameters (24 layers of width 1024 plus a 1024->5120->5120 projector);
	// an approximation, the checkpoint's total_size is not in vram.md.
	mistralSmall32 = denseCfg{name: "Mistral-Small-3.2-24B", layers: 40, hidden: 5120, heads: 32, kvh: 8, headDim: 128,
		inter: 32768, vocab: 131072, maxPos: 131072, extraFirst: 440e6 * 2}
	// gpt-oss-120b attention: 36 layers alternating sliding (128) and full,
	// 8 KV heads of 64 (weights are not modelled; the check uses the logged budget).
	gptOSS120B = denseCfg{name: "gpt-oss-120b", layers: 36, hidden: 2880, heads: 64, kvh: 8, headDim: 64,
		inter: 2880, vocab: 201088, maxPos: 131072, window: 128, slidingEvery: 2, experts: 128, topK: 4, moeInter: 2880}
)

// mlaSpec is a DeepSeek-V2-Lite-shaped MLA model (27 layers, latent 512+64).
func mlaSpec(layers int) ModelSpec {
	s := ModelSpec{Name: "DeepSeek-V2-Lite", NumAttentionHeads: 16, HeadDim: 192, HiddenSize: 2048,
		IntermediateSize: 10944, VocabSize: 102400, MaxModelLen: 163840, DtypeBytes: 2,
		ExpertsPerToken: 6, MoEIntermediateSize: 1408}
	for i := 0; i < layers; i++ {
		s.Layers = append(s.Layers, Layer{Kind: AttnMLA, KVLoraRank: 512, RopeDim: 64})
		s.Weights = append(s.Weights,
			WeightPart{Name: "kv_a_proj_with_mqa", Bytes: 2048 * 576 * 2, Shard: Replicated, Place: PlaceLayer, Layer: i},
			WeightPart{Name: "attn+moe", Bytes: 1_000_000_000, Shard: ShardTP, Place: PlaceLayer, Layer: i})
	}
	s.Weights = append(s.Weights,
		WeightPart{Name: "embed", Bytes: 102400 * 2048 * 2, Shard: ShardTP, Place: PlaceFirst},
		WeightPart{Name: "lm_head", Bytes: 102400 * 2048 * 2, Shard: ShardTP, Place: PlaceLast})
	return s
}
