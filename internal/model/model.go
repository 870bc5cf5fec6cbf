// Package model inspects a model folder without reading its weights:
// config.json, the safetensors headers of every shard, the shard index, the
// files the air-gapped seed requires, and sha256 checksums. It imports nothing
// internal so that plan, vram and the CLI can all use it.
package model

// Severities of a Problem.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
)

// Problem is one finding of the completeness and air-gap checks. Errors stop a
// launch; warnings do not (a missing chat template only breaks tool calling).
type Problem struct {
	Severity string `json:"severity"` // "error" or "warning"
	File     string `json:"file,omitempty"`
	Summary  string `json:"summary"`
	Detail   string `json:"detail,omitempty"`
}

// Info is what Inspect learns about a model folder.
type Info struct {
	Dir    string  `json:"dir"`
	Config *Config `json:"config,omitempty"`
	// Tensors of all shards: shards in name order, each in header order.
	Tensors []Tensor `json:"tensors"`
	// Shards in file name order.
	Shards []Shard `json:"shards"`
	// TotalBytes is the size on disk of every regular file in the folder.
	TotalBytes int64     `json:"total_bytes"`
	Problems   []Problem `json:"problems"`
	// IndexTotalSize is metadata.total_size of model.safetensors.index.json (0 when absent).
	IndexTotalSize int64 `json:"index_total_size,omitempty"`

	sizes map[string]int64 // top-level regular files, from the walk
}

// Shard is one safetensors file.
type Shard struct {
	File      string            `json:"file"` // relative to Info.Dir
	Size      int64             `json:"size"` // on disk
	HeaderLen int64             `json:"header_len"`
	DataBytes int64             `json:"data_bytes"` // as the header says (largest end offset)
	Tensors   int               `json:"tensors"`
	Metadata  map[string]string `json:"metadata,omitempty"` // __metadata__
}

// Tensor is one safetensors header entry.
type Tensor struct {
	Name  string  `json:"name"`
	Dtype string  `json:"dtype"`
	Shape []int64 `json:"shape"`
	Bytes int64   `json:"bytes"`
	File  string  `json:"file"`
	// Offsets are data_offsets: begin and end relative to the data section.
	Offsets [2]int64 `json:"offsets"`
}

// Config holds the facts of config.json that memory sizing needs, with the
// many spellings of the model families normalised. For multimodal models the
// language model's facts come from the nested text_config.
type Config struct {
	Architectures         []string       `json:"architectures,omitempty"`
	ModelType             string         `json:"model_type,omitempty"`
	HiddenSize            int            `json:"hidden_size"`
	NumHiddenLayers       int            `json:"num_hidden_layers"`
	NumAttentionHeads     int            `json:"num_attention_heads"`
	NumKeyValueHeads      int            `json:"num_key_value_heads"`
	HeadDim               int            `json:"head_dim"`
	IntermediateSize      int            `json:"intermediate_size,omitempty"`
	VocabSize             int            `json:"vocab_size"`
	MaxPositionEmbeddings int            `json:"max_position_embeddings,omitempty"`
	TorchDtype            string         `json:"torch_dtype,omitempty"`
	TieWordEmbeddings     bool           `json:"tie_word_embeddings"`
	RopeScaling           map[string]any `json:"rope_scaling,omitempty"`

	// MoE (0 when dense).
	NumExperts          int `json:"num_experts,omitempty"`
	NumExpertsPerTok    int `json:"num_experts_per_tok,omitempty"`
	MoEIntermediateSize int `json:"moe_intermediate_size,omitempty"`
	NumSharedExperts    int `json:"num_shared_experts,omitempty"`
	FirstKDenseReplace  int `json:"first_k_dense_replace,omitempty"`

	// MLA (DeepSeek V2/V3); KVLoraRank > 0 means the model uses MLA.
	KVLoraRank    int `json:"kv_lora_rank,omitempty"`
	QLoraRank     int `json:"q_lora_rank,omitempty"`
	QKRopeHeadDim int `json:"qk_rope_head_dim,omitempty"`
	QKNopeHeadDim int `json:"qk_nope_head_dim,omitempty"`
	VHeadDim      int `json:"v_head_dim,omitempty"`

	// Sliding window / hybrid attention. LayerTypes has one entry per layer
	// ("sliding_attention" or "full_attention", or another type a hybrid model
	// names, such as "linear_attention") when the model mixes layer kinds; it is
	// nil when every layer is full attention.
	SlidingWindow int      `json:"sliding_window,omitempty"`
	LayerTypes    []string `json:"layer_types,omitempty"`

	Quantization *QuantConfig `json:"quantization,omitempty"`

	// Multimodal is true when the facts came from a nested text_config.
	Multimodal bool `json:"multimodal,omitempty"`

	// Raw is config.json as parsed (the outer object for multimodal models).
	Raw map[string]any `json:"-"`
}

// Layer types of Config.LayerTypes.
const (
	LayerFull    = "full_attention"
	LayerSliding = "sliding_attention"
)

// QuantConfig is config.json's quantization_config (or compression_config).
type QuantConfig struct {
	Method           string         `json:"quant_method"`         // "fp8", "awq", "gptq", "compressed-tensors", "mxfp4", "bitsandbytes", ...
	Bits             int            `json:"bits,omitempty"`       // bits / w_bit / num_bits
	GroupSize        int            `json:"group_size,omitempty"` // group_size / q_group_size
	Format           string         `json:"format,omitempty"`     // fmt / format
	WeightBlockSize  []int          `json:"weight_block_size,omitempty"`
	ActivationScheme string         `json:"activation_scheme,omitempty"`
	Raw              map[string]any `json:"-"`
}
