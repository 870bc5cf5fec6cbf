// Package modeltest writes synthetic model folders: real config.json values,
// real Hugging Face tensor names and shapes, valid safetensors headers, and
// sparse data (the files are truncated to their real size, so a 16 GB model
// costs no disk). Tests of other packages, the rehearsal engine and
// `roofline model synth` use them as stand-ins for real checkpoints.
package modeltest

import "sort"

// Arch is an architecture Write can produce.
type Arch struct {
	Name string // Go-style name, as Arches() keys it: "Qwen3_8B"
	Repo string // the model it stands in for: "Qwen/Qwen3-8B"
	s    spec
}

type family int

const (
	famLlama     family = iota // Llama 3.x
	famQwen3                   // dense Qwen3: q_norm/k_norm
	famQwen3MoE                // Qwen3 MoE
	famDeepSeek                // DeepSeek V3: MLA, shared + routed experts, MTP layer
	famGemma3                  // Gemma 3: sliding window 5:1, multimodal
	famGemma3Txt               // Gemma 3 1B: text only
)

// spec holds the config.json facts the tensor shapes follow from.
type spec struct {
	fam                     family
	arch, modelType         string
	hidden, layers, inter   int
	heads, kvHeads, headDim int
	vocab, maxPos           int
	tied                    bool
	ropeTheta               float64
	ropeScaling             map[string]any
	experts, topK, moeInter int
	shared, firstDense      int
	qLora, kvLora, nope     int
	rope, vHead, mtpLayers  int
	sliding, pattern        int
	vision                  bool
	nativeFP8               bool
	defaultShards           int
	bos, eos                int
	templ                   string
}

// The architectures. Values are those of the models' config.json files.
var (
	// Qwen3_8B is Qwen/Qwen3-8B: dense, GQA 32/8, 36 layers.
	Qwen3_8B = Arch{"Qwen3_8B", "Qwen/Qwen3-8B", spec{
		fam: famQwen3, arch: "Qwen3ForCausalLM", modelType: "qwen3",
		hidden: 4096, layers: 36, inter: 12288, heads: 32, kvHeads: 8, headDim: 128,
		vocab: 151936, maxPos: 40960, ropeTheta: 1e6, defaultShards: 5,
		bos: 151643, eos: 151645, templ: chatML,
	}}
	// Qwen3_0_6B is Qwen/Qwen3-0.6B: tied embeddings, one shard.
	Qwen3_0_6B = Arch{"Qwen3_0_6B", "Qwen/Qwen3-0.6B", spec{
		fam: famQwen3, arch: "Qwen3ForCausalLM", modelType: "qwen3",
		hidden: 1024, layers: 28, inter: 3072, heads: 16, kvHeads: 8, headDim: 128,
		vocab: 151936, maxPos: 40960, tied: true, ropeTheta: 1e6, defaultShards: 1,
		bos: 151643, eos: 151645, templ: chatML,
	}}
	// Qwen3_32B is Qwen/Qwen3-32B: dense, GQA 64/8, 64 layers, 17 shards.
	Qwen3_32B = Arch{"Qwen3_32B", "Qwen/Qwen3-32B", spec{
		fam: famQwen3, arch: "Qwen3ForCausalLM", modelType: "qwen3",
		hidden: 5120, layers: 64, inter: 25600, heads: 64, kvHeads: 8, headDim: 128,
		vocab: 151936, maxPos: 40960, ropeTheta: 1e6, defaultShards: 17,
		bos: 151643, eos: 151645, templ: chatML,
	}}
	// Llama31_8B is meta-llama/Llama-3.1-8B-Instruct.
	Llama31_8B = Arch{"Llama31_8B", "meta-llama/Llama-3.1-8B-Instruct", spec{
		fam: famLlama, arch: "LlamaForCausalLM", modelType: "llama",
		hidden: 4096, layers: 32, inter: 14336, heads: 32, kvHeads: 8, headDim: 128,
		vocab: 128256, maxPos: 131072, ropeTheta: 500000, ropeScaling: llama3Rope(), defaultShards: 4,
		bos: 128000, eos: 128009, templ: llama3Template,
	}}
	// Llama31_70B is meta-llama/Llama-3.1-70B-Instruct.
	Llama31_70B = Arch{"Llama31_70B", "meta-llama/Llama-3.1-70B-Instruct", spec{
		fam: famLlama, arch: "LlamaForCausalLM", modelType: "llama",
		hidden: 8192, layers: 80, inter: 28672, heads: 64, kvHeads: 8, headDim: 128,
		vocab: 128256, maxPos: 131072, ropeTheta: 500000, ropeScaling: llama3Rope(), defaultShards: 30,
		bos: 128000, eos: 128009, templ: llama3Template,
	}}
	// Qwen3_30B_A3B is Qwen/Qwen3-30B-A3B: 128 experts, 8 active.
	Qwen3_30B_A3B = Arch{"Qwen3_30B_A3B", "Qwen/Qwen3-30B-A3B", spec{
		fam: famQwen3MoE, arch: "Qwen3MoeForCausalLM", modelType: "qwen3_moe",
		hidden: 2048, layers: 48, inter: 6144, heads: 32, kvHeads: 4, headDim: 128,
		vocab: 151936, maxPos: 40960, ropeTheta: 1e6, experts: 128, topK: 8, moeInter: 768,
		defaultShards: 16, bos: 151643, eos: 151645, templ: chatML,
	}}
	// DeepSeekV3 is deepseek-ai/DeepSeek-V3: MLA, 256 routed + 1 shared
	// expert, 3 dense layers, one MTP layer, FP8 block-quantised weights, 163
	// shards. Layers(n) makes a reduced variant with the same per-layer shapes.
	DeepSeekV3 = Arch{"DeepSeekV3", "deepseek-ai/DeepSeek-V3", spec{
		fam: famDeepSeek, arch: "DeepseekV3ForCausalLM", modelType: "deepseek_v3",
		hidden: 7168, layers: 61, inter: 18432, heads: 128, kvHeads: 128,
		vocab: 129280, maxPos: 163840, ropeTheta: 10000,
		ropeScaling: map[string]any{"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096,
			"beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0},
		experts: 256, topK: 8, moeInter: 2048, shared: 1, firstDense: 3,
		qLora: 1536, kvLora: 512, nope: 128, rope: 64, vHead: 128, mtpLayers: 1,
		nativeFP8: true, defaultShards: 163, bos: 0, eos: 1, templ: chatML,
	}}
	// Gemma3_4B is google/gemma-3-4b-it: multimodal (text_config, SigLIP
	// vision tower), sliding window 1024 on 5 of every 6 layers.
	Gemma3_4B = Arch{"Gemma3_4B", "google/gemma-3-4b-it", spec{
		fam: famGemma3, arch: "Gemma3ForConditionalGeneration", modelType: "gemma3",
		hidden: 2560, layers: 34, inter: 10240, heads: 8, kvHeads: 4, headDim: 256,
		vocab: 262208, maxPos: 131072, tied: true, ropeTheta: 1e6,
		ropeScaling: map[string]any{"rope_type": "linear", "factor": 8.0},
		sliding:     1024, pattern: 6, vision: true, defaultShards: 2, bos: 2, eos: 106, templ: gemmaTemplate,
	}}
	// Gemma3_1B is google/gemma-3-1b-it: text only, sliding window 512.
	Gemma3_1B = Arch{"Gemma3_1B", "google/gemma-3-1b-it", spec{
		fam: famGemma3Txt, arch: "Gemma3ForCausalLM", modelType: "gemma3_text",
		hidden: 1152, layers: 26, inter: 6912, heads: 4, kvHeads: 1, headDim: 256,
		vocab: 262144, maxPos: 32768, tied: true, ropeTheta: 1e6,
		sliding: 512, pattern: 6, defaultShards: 1, bos: 2, eos: 106, templ: gemmaTemplate,
	}}
	// Tiny is a 4-layer Llama-shaped model of about 5 MB for examples.
	Tiny = Arch{"Tiny", "roofline/tiny-llama", spec{
		fam: famLlama, arch: "LlamaForCausalLM", modelType: "llama",
		hidden: 128, layers: 4, inter: 384, heads: 4, kvHeads: 2, headDim: 32,
		vocab: 8192, maxPos: 4096, ropeTheta: 10000, defaultShards: 1,
		bos: 1, eos: 2, templ: chatML,
	}}
)

func llama3Rope() map[string]any {
	return map[string]any{"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
		"high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
}

// Arches returns the architectures by name.
func Arches() map[string]Arch {
	m := map[string]Arch{}
	for _, a := range []Arch{Qwen3_8B, Qwen3_0_6B, Qwen3_32B, Llama31_8B, Llama31_70B, Qwen3_30B_A3B, DeepSeekV3, Gemma3_4B, Gemma3_1B, Tiny} {
		m[a.Name] = a
	}
	return m
}

// ArchNames returns the names of Arches, sorted.
func ArchNames() []string {
	var out []string
	for k := range Arches() {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
