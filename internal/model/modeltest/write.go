package modeltest

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Option changes what Write produces.
type Option func(*options)

type options struct {
	shards     int
	dtype      string // "bf16" or "fp8"; "" = the model's own
	layers     int
	truncate   map[int]int64 // shard index (0-based) -> bytes to cut off its end
	drop       []string
	bin        []string
	noTemplate bool
}

// Shards sets the shard count (1 writes model.safetensors without an index).
func Shards(n int) Option { return func(o *options) { o.shards = n } }

// Dtype sets the weight dtype: "bf16", or "fp8" (F8_E4M3 linear weights
// with 128x128 block scales, as Qwen3-FP8 and DeepSeek-V3 ship them).
func Dtype(d string) Option { return func(o *options) { o.dtype = d } }

// Layers reduces (or raises) the decoder layer count; per-layer shapes stay real.
func Layers(n int) Option { return func(o *options) { o.layers = n } }

// TruncateShard cuts n bytes off the end of shard i (0-based), as an
// interrupted transfer does.
func TruncateShard(i int, n int64) Option {
	return func(o *options) {
		if o.truncate == nil {
			o.truncate = map[int]int64{}
		}
		o.truncate[i] = n
	}
}

// DropFile leaves a file out ("tokenizer.json", or a shard's name).
func DropFile(name string) Option { return func(o *options) { o.drop = append(o.drop, name) } }

// AddBinFile adds a pickle file of that name ("pytorch_model.bin").
func AddBinFile(name string) Option { return func(o *options) { o.bin = append(o.bin, name) } }

// NoChatTemplate writes tokenizer_config.json without a chat template.
func NoChatTemplate() Option { return func(o *options) { o.noTemplate = true } }

// TensorSpec is one tensor Write lays out.
type TensorSpec struct {
	Name  string
	Dtype string
	Shape []int64
}

// Bytes is the tensor's size.
func (t TensorSpec) Bytes() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	switch t.Dtype {
	case "F32", "I32", "U32":
		return n * 4
	case "F8_E4M3", "U8", "I8":
		return n
	}
	return n * 2
}

func buildOptions(a Arch, opts []Option) options {
	o := options{shards: a.s.defaultShards}
	for _, f := range opts {
		f(&o)
	}
	return o
}

func (a Arch) effective(o options) spec {
	s := a.s
	if o.layers > 0 {
		s.layers = o.layers
		s.firstDense = min(s.firstDense, s.layers)
	}
	return s
}

func fp8(s spec, o options) bool {
	return o.dtype == "fp8" || o.dtype == "" && s.nativeFP8
}

// Tensors returns the tensors Write would lay out with opts.
func (a Arch) Tensors(opts ...Option) []TensorSpec {
	o := buildOptions(a, opts)
	return tensors(a.effective(o), fp8(a.effective(o), o))
}

func tensors(s spec, q bool) []TensorSpec {
	var out []TensorSpec
	bf := "BF16"
	vec := func(name string, n int) {
		out = append(out, TensorSpec{name, bf, []int64{int64(n)}})
	}
	mat := func(name string, rows, cols int) {
		out = append(out, TensorSpec{name, bf, []int64{int64(rows), int64(cols)}})
	}
	// lin is a linear layer's weight, with 128x128 block scales when quantised.
	lin := func(name string, rows, cols int) {
		if !q {
			mat(name+".weight", rows, cols)
			return
		}
		out = append(out, TensorSpec{name + ".weight", "F8_E4M3", []int64{int64(rows), int64(cols)}})
		out = append(out, TensorSpec{name + ".weight_scale_inv", "F32", []int64{int64((rows + 127) / 128), int64((cols + 127) / 128)}})
	}
	lm := "model."
	switch s.fam {
	case famGemma3:
		lm = "language_model.model."
	}
	mat(lm+"embed_tokens.weight", s.vocab, s.hidden)
	total := s.layers + s.mtpLayers
	for l := 0; l < total; l++ {
		p := fmt.Sprintf("%slayers.%d.", lm, l)
		if l >= s.layers { // DeepSeek MTP module
			mat(p+"embed_tokens.weight", s.vocab, s.hidden)
			vec(p+"enorm.weight", s.hidden)
			vec(p+"hnorm.weight", s.hidden)
			lin(p+"eh_proj", s.hidden, 2*s.hidden)
			vec(p+"shared_head.norm.weight", s.hidden)
			mat(p+"shared_head.head.weight", s.vocab, s.hidden)
		}
		vec(p+"input_layernorm.weight", s.hidden)
		switch s.fam {
		case famDeepSeek:
			a := p + "self_attn."
			lin(a+"q_a_proj", s.qLora, s.hidden)
			vec(a+"q_a_layernorm.weight", s.qLora)
			lin(a+"q_b_proj", s.heads*(s.nope+s.rope), s.qLora)
			lin(a+"kv_a_proj_with_mqa", s.kvLora+s.rope, s.hidden)
			vec(a+"kv_a_layernorm.weight", s.kvLora)
			lin(a+"kv_b_proj", s.heads*(s.nope+s.vHead), s.kvLora)
			lin(a+"o_proj", s.hidden, s.heads*s.vHead)
		default:
			a := p + "self_attn."
			lin(a+"q_proj", s.heads*s.headDim, s.hidden)
			lin(a+"k_proj", s.kvHeads*s.headDim, s.hidden)
			lin(a+"v_proj", s.kvHeads*s.headDim, s.hidden)
			lin(a+"o_proj", s.hidden, s.heads*s.headDim)
			if s.fam != famLlama {
				vec(a+"q_norm.weight", s.headDim)
				vec(a+"k_norm.weight", s.headDim)
			}
		}
		vec(p+"post_attention_layernorm.weight", s.hidden)
		if s.fam == famGemma3 || s.fam == famGemma3Txt {
			vec(p+"pre_feedforward_layernorm.weight", s.hidden)
			vec(p+"post_feedforward_layernorm.weight", s.hidden)
		}
		m := p + "mlp."
		if s.experts == 0 || l < s.firstDense {
			lin(m+"gate_proj", s.inter, s.hidden)
			lin(m+"up_proj", s.inter, s.hidden)
			lin(m+"down_proj", s.hidden, s.inter)
			continue
		}
		mat(m+"gate.weight", s.experts, s.hidden)
		if s.fam == famDeepSeek {
			out = append(out, TensorSpec{m + "gate.e_score_correction_bias", "F32", []int64{int64(s.experts)}})
		}
		for e := 0; e < s.experts; e++ {
			ep := fmt.Sprintf("%sexperts.%d.", m, e)
			lin(ep+"gate_proj", s.moeInter, s.hidden)
			lin(ep+"up_proj", s.moeInter, s.hidden)
			lin(ep+"down_proj", s.hidden, s.moeInter)
		}
		if s.shared > 0 {
			lin(m+"shared_experts.gate_proj", s.shared*s.moeInter, s.hidden)
			lin(m+"shared_experts.up_proj", s.shared*s.moeInter, s.hidden)
			lin(m+"shared_experts.down_proj", s.hidden, s.shared*s.moeInter)
		}
	}
	vec(lm+"norm.weight", s.hidden)
	if !s.tied {
		mat("lm_head.weight", s.vocab, s.hidden)
	}
	if s.vision {
		out = append(out, siglip(s.hidden)...)
	}
	return out
}

// siglip is Gemma 3's SigLIP vision tower (896 px, patch 14, 27 layers) and projector.
func siglip(textHidden int) []TensorSpec {
	const h, inter, layers = 1152, 4304, 27
	var out []TensorSpec
	add := func(name string, shape ...int64) { out = append(out, TensorSpec{name, "BF16", shape}) }
	v := "vision_tower.vision_model."
	add(v+"embeddings.patch_embedding.weight", h, 3, 14, 14)
	add(v+"embeddings.patch_embedding.bias", h)
	add(v+"embeddings.position_embedding.weight", 4096, h)
	for l := 0; l < layers; l++ {
		p := fmt.Sprintf("%sencoder.layers.%d.", v, l)
		for _, n := range []string{"layer_norm1", "layer_norm2"} {
			add(p+n+".weight", h)
			add(p+n+".bias", h)
		}
		for _, n := range []string{"q_proj", "k_proj", "v_proj", "out_proj"} {
			add(p+"self_attn."+n+".weight", h, h)
			add(p+"self_attn."+n+".bias", h)
		}
		add(p+"mlp.fc1.weight", inter, h)
		add(p+"mlp.fc1.bias", inter)
		add(p+"mlp.fc2.weight", h, inter)
		add(p+"mlp.fc2.bias", h)
	}
	add(v+"post_layernorm.weight", h)
	add(v+"post_layernorm.bias", h)
	add("multi_modal_projector.mm_input_projection_weight", h, int64(textHidden))
	add("multi_modal_projector.mm_soft_emb_norm.weight", h)
	return out
}

// WriteNew is Write into a new or empty folder only (roofline model synth),
// so that it never overwrites a real model.
func WriteNew(dir string, arch Arch, opts ...Option) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s is not empty; synth writes only into a new or empty folder, so that it never overwrites a real model", dir)
	}
	return Write(dir, arch, opts...)
}

// Write creates a model folder for arch in dir (created if needed).
func Write(dir string, arch Arch, opts ...Option) error {
	if arch.Name == "" {
		return fmt.Errorf("modeltest: empty architecture")
	}
	o := buildOptions(arch, opts)
	s := arch.effective(o)
	q := fp8(s, o)
	if o.dtype != "" && o.dtype != "bf16" && o.dtype != "fp8" {
		return fmt.Errorf("modeltest: dtype %q: want bf16 or fp8", o.dtype)
	}
	ts := tensors(s, q)
	if o.shards < 1 || o.shards > len(ts) {
		return fmt.Errorf("modeltest: %d shards for %d tensors", o.shards, len(ts))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := map[string][]byte{}
	cfg, err := json.MarshalIndent(configJSON(s, q), "", "  ")
	if err != nil {
		return err
	}
	files["config.json"] = cfg
	files["generation_config.json"] = mustJSON(map[string]any{
		"bos_token_id": s.bos, "eos_token_id": s.eos, "do_sample": true,
		"temperature": 0.6, "top_p": 0.95, "transformers_version": "4.51.0",
	})
	files["tokenizer.json"] = tokenizerJSON()
	tc := map[string]any{
		"bos_token": "<|begin|>", "eos_token": "<|end|>", "model_max_length": s.maxPos,
		"tokenizer_class": "PreTrainedTokenizerFast", "clean_up_tokenization_spaces": false,
	}
	if !o.noTemplate {
		tc["chat_template"] = s.templ
	}
	files["tokenizer_config.json"] = mustJSON(tc)
	for _, b := range o.bin {
		// A pickle protocol-2 header and STOP opcode: enough to be recognisably pickle.
		files[b] = []byte{0x80, 0x02, '}', 'q', 0x00, '.'}
	}

	groups := split(ts, o.shards)
	weightMap := map[string]string{}
	var total int64
	for i, g := range groups {
		name := "model.safetensors"
		if o.shards > 1 {
			name = fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, o.shards)
		}
		for _, t := range g {
			weightMap[t.Name] = name
			total += t.Bytes()
		}
		if dropped(o, name) {
			continue
		}
		if err := writeShard(filepath.Join(dir, name), g, o.truncate[i]); err != nil {
			return err
		}
	}
	if o.shards > 1 {
		files["model.safetensors.index.json"] = mustJSON(map[string]any{
			"metadata": map[string]any{"total_size": total}, "weight_map": weightMap,
		})
	}
	for name, data := range files {
		if dropped(o, name) {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func dropped(o options, name string) bool {
	for _, d := range o.drop {
		if d == name {
			return true
		}
	}
	return false
}

// split cuts the tensors into n consecutive groups of about equal bytes, as
// Hugging Face's save_pretrained fills shards in model order.
func split(ts []TensorSpec, n int) [][]TensorSpec {
	var total int64
	for _, t := range ts {
		total += t.Bytes()
	}
	groups := make([][]TensorSpec, n)
	var done int64
	for _, t := range ts {
		i := min(int(float64(done)/float64(total)*float64(n)), n-1)
		groups[i] = append(groups[i], t)
		done += t.Bytes()
	}
	for _, g := range groups {
		if len(g) == 0 { // large tensors left a shard empty: split by count instead
			groups = make([][]TensorSpec, n)
			for i, t := range ts {
				groups[i*n/len(ts)] = append(groups[i*n/len(ts)], t)
			}
			break
		}
	}
	return groups
}

// writeShard writes the header and extends the file to its full size without
// writing the data, so the data reads as zeros and takes no disk.
func writeShard(path string, ts []TensorSpec, cut int64) error {
	var b strings.Builder
	b.WriteString(`{"__metadata__":{"format":"pt"}`)
	var off int64
	for _, t := range ts {
		shape, _ := json.Marshal(t.Shape)
		fmt.Fprintf(&b, `,%q:{"dtype":%q,"shape":%s,"data_offsets":[%d,%d]}`, t.Name, t.Dtype, shape, off, off+t.Bytes())
		off += t.Bytes()
	}
	b.WriteString("}")
	for b.Len()%8 != 0 {
		b.WriteByte(' ')
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(b.Len()))
	_, err = f.Write(append(n[:], b.String()...))
	if err == nil {
		err = f.Truncate(8 + int64(b.Len()) + off - cut)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func mustJSON(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err) // only our own maps are marshalled
	}
	return b
}
