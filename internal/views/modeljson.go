package views

import "github.com/roofline/roofline/internal/model"

// model inspect -json and model verify -json are roofline's own types,
// converted here from the model reader's records field by field
// (docs/json.md).

// ModelInspectDocument is model inspect -json.
type ModelInspectDocument struct {
	Dir            string           `json:"dir"`
	OK             bool             `json:"ok"` // no error-level problems
	Config         *ModelConfig     `json:"config"`
	Params         int64            `json:"params"`
	WeightsBytes   int64            `json:"weights_bytes"`
	TotalBytes     int64            `json:"total_bytes"`
	IndexTotalSize int64            `json:"index_total_size,omitempty"`
	BytesByDtype   map[string]int64 `json:"bytes_by_dtype"`
	BytesByClass   map[string]int64 `json:"bytes_by_class"`
	BytesBySplit   map[string]int64 `json:"bytes_by_split"`
	LayerBytes     []int64          `json:"layer_bytes"`
	Shards         []ModelShard     `json:"shards"`
	Problems       []ModelProblem   `json:"problems"`
	Tensors        []ModelTensor    `json:"tensors,omitempty"`
}

// ModelConfig is what roofline read from config.json (the language model's
// facts, from text_config for a multimodal model).
type ModelConfig struct {
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
	RopeScaling           map[string]any `json:"rope_scaling,omitempty"` // config.json's own object, verbatim
	NumExperts            int            `json:"num_experts,omitempty"`
	NumExpertsPerTok      int            `json:"num_experts_per_tok,omitempty"`
	MoEIntermediateSize   int            `json:"moe_intermediate_size,omitempty"`
	NumSharedExperts      int            `json:"num_shared_experts,omitempty"`
	FirstKDenseReplace    int            `json:"first_k_dense_replace,omitempty"`
	KVLoraRank            int            `json:"kv_lora_rank,omitempty"`
	QLoraRank             int            `json:"q_lora_rank,omitempty"`
	QKRopeHeadDim         int            `json:"qk_rope_head_dim,omitempty"`
	QKNopeHeadDim         int            `json:"qk_nope_head_dim,omitempty"`
	VHeadDim              int            `json:"v_head_dim,omitempty"`
	SlidingWindow         int            `json:"sliding_window,omitempty"`
	LayerTypes            []string       `json:"layer_types,omitempty"`
	Quantization          *ModelQuant    `json:"quantization,omitempty"`
	Multimodal            bool           `json:"multimodal,omitempty"`
}

// ModelQuant is config.json's quantization_config (or compression_config).
type ModelQuant struct {
	Method           string `json:"quant_method"`
	Bits             int    `json:"bits,omitempty"`
	GroupSize        int    `json:"group_size,omitempty"`
	Format           string `json:"format,omitempty"`
	WeightBlockSize  []int  `json:"weight_block_size,omitempty"`
	ActivationScheme string `json:"activation_scheme,omitempty"`
}

// ModelShard is one safetensors file.
type ModelShard struct {
	File      string            `json:"file"`
	Size      int64             `json:"size"`
	HeaderLen int64             `json:"header_len"`
	DataBytes int64             `json:"data_bytes"`
	Tensors   int               `json:"tensors"`
	Metadata  map[string]string `json:"metadata,omitempty"`
}

// ModelProblem is something wrong or doubtful in the folder.
type ModelProblem struct {
	Severity string `json:"severity"` // error, warning
	File     string `json:"file,omitempty"`
	Summary  string `json:"summary"`
	Detail   string `json:"detail,omitempty"`
}

// ModelTensor is one safetensors header entry (-tensors).
type ModelTensor struct {
	Name    string   `json:"name"`
	Dtype   string   `json:"dtype"`
	Shape   []int64  `json:"shape"`
	Bytes   int64    `json:"bytes"`
	File    string   `json:"file"`
	Offsets [2]int64 `json:"offsets"`
}

// ModelVerifyDocument is model verify -json.
type ModelVerifyDocument struct {
	OK         bool            `json:"ok"`
	Checked    int             `json:"checked"`
	Bytes      int64           `json:"bytes"`
	Missing    []string        `json:"missing,omitempty"`
	Extra      []string        `json:"extra,omitempty"`
	Mismatched []ModelMismatch `json:"mismatched,omitempty"`
}

// ModelMismatch is a file whose checksum differs from the list's.
type ModelMismatch struct {
	File string `json:"file"`
	Want string `json:"want"`
	Got  string `json:"got"`
}

// ModelInspectDocumentOf converts what model.Inspect found; tensors adds
// every tensor.
func ModelInspectDocumentOf(info *model.Info, tensors bool) *ModelInspectDocument {
	b := info.Breakdown()
	d := &ModelInspectDocument{
		Dir: info.Dir, OK: !info.HasErrors(), Config: modelConfigOf(info.Config), Params: b.Params,
		WeightsBytes: info.WeightsBytes(), TotalBytes: info.TotalBytes, IndexTotalSize: info.IndexTotalSize,
		BytesByDtype: b.ByDtype, BytesByClass: map[string]int64{}, BytesBySplit: map[string]int64{},
		LayerBytes: b.Layers, Shards: []ModelShard{}, Problems: []ModelProblem{},
	}
	for k, v := range b.ByClass {
		d.BytesByClass[string(k)] = v
	}
	for k, v := range b.BySplit {
		d.BytesBySplit[string(k)] = v
	}
	for _, s := range info.Shards {
		d.Shards = append(d.Shards, ModelShard{File: s.File, Size: s.Size, HeaderLen: s.HeaderLen, DataBytes: s.DataBytes, Tensors: s.Tensors, Metadata: s.Metadata})
	}
	for _, p := range info.Problems {
		d.Problems = append(d.Problems, ModelProblem{Severity: p.Severity, File: p.File, Summary: p.Summary, Detail: p.Detail})
	}
	if tensors && info.Tensors != nil {
		d.Tensors = make([]ModelTensor, len(info.Tensors))
		for i, t := range info.Tensors {
			d.Tensors[i] = ModelTensor{Name: t.Name, Dtype: t.Dtype, Shape: t.Shape, Bytes: t.Bytes, File: t.File, Offsets: t.Offsets}
		}
	}
	return d
}

func modelConfigOf(c *model.Config) *ModelConfig {
	if c == nil {
		return nil
	}
	out := &ModelConfig{
		Architectures: c.Architectures, ModelType: c.ModelType, HiddenSize: c.HiddenSize, NumHiddenLayers: c.NumHiddenLayers,
		NumAttentionHeads: c.NumAttentionHeads, NumKeyValueHeads: c.NumKeyValueHeads, HeadDim: c.HeadDim,
		IntermediateSize: c.IntermediateSize, VocabSize: c.VocabSize, MaxPositionEmbeddings: c.MaxPositionEmbeddings,
		TorchDtype: c.TorchDtype, TieWordEmbeddings: c.TieWordEmbeddings, RopeScaling: c.RopeScaling,
		NumExperts: c.NumExperts, NumExpertsPerTok: c.NumExpertsPerTok, MoEIntermediateSize: c.MoEIntermediateSize,
		NumSharedExperts: c.NumSharedExperts, FirstKDenseReplace: c.FirstKDenseReplace,
		KVLoraRank: c.KVLoraRank, QLoraRank: c.QLoraRank, QKRopeHeadDim: c.QKRopeHeadDim, QKNopeHeadDim: c.QKNopeHeadDim, VHeadDim: c.VHeadDim,
		SlidingWindow: c.SlidingWindow, LayerTypes: c.LayerTypes, Multimodal: c.Multimodal,
	}
	if q := c.Quantization; q != nil {
		out.Quantization = &ModelQuant{Method: q.Method, Bits: q.Bits, GroupSize: q.GroupSize, Format: q.Format,
			WeightBlockSize: q.WeightBlockSize, ActivationScheme: q.ActivationScheme}
	}
	return out
}

// ModelVerifyDocumentOf converts what model.Verify found.
func ModelVerifyDocumentOf(res *model.VerifyResult) *ModelVerifyDocument {
	d := &ModelVerifyDocument{OK: res.OK(), Checked: res.Checked, Bytes: res.Bytes, Missing: res.Missing, Extra: res.Extra}
	for _, m := range res.Mismatched {
		d.Mismatched = append(d.Mismatched, ModelMismatch{File: m.File, Want: m.Want, Got: m.Got})
	}
	return d
}
