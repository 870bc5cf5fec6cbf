package model

// RankOptions describe how an engine spreads a model over GPUs.
type RankOptions struct {
	TP     int // tensor parallel size (0 means 1)
	PP     int // pipeline parallel size (0 means 1)
	PPRank int // which pipeline stage, 0..PP-1
	// EP > 1 divides the routed experts by EP instead of TP (vLLM
	// --enable-expert-parallel, where EP = TP x DP).
	EP int
	// IncludeMTP counts the multi-token-prediction layers (speculative decoding
	// with the model's own MTP head); engines skip them otherwise.
	IncludeMTP bool
}

// Breakdown sums tensor bytes by class, split, dtype and layer.
type Breakdown struct {
	ByClass map[Class]int64  `json:"by_class"`
	BySplit map[Split]int64  `json:"by_split"`
	ByDtype map[string]int64 `json:"by_dtype"`
	// Layers[n] is the bytes of decoder layer n (MTP layers included).
	Layers []int64 `json:"layers"`
	// Global is the bytes outside the decoder layers (embeddings, lm_head, final norm, vision).
	Global int64 `json:"global"`
	// Params counts elements; packed quantized tensors count their storage
	// elements, not the weights they pack.
	Params int64 `json:"params"`
}

// Breakdown classifies every tensor.
func (i *Info) Breakdown() *Breakdown {
	b := &Breakdown{ByClass: map[Class]int64{}, BySplit: map[Split]int64{}, ByDtype: map[string]int64{}}
	for _, t := range i.Tensors {
		k := t.Kind(i.Config)
		b.ByClass[k.Class] += t.Bytes
		b.BySplit[k.Split] += t.Bytes
		b.ByDtype[t.Dtype] += t.Bytes
		b.Params += numel(t.Shape)
		if k.Layer >= 0 {
			for len(b.Layers) <= k.Layer {
				b.Layers = append(b.Layers, 0)
			}
			b.Layers[k.Layer] += t.Bytes
		} else {
			b.Global += t.Bytes
		}
	}
	return b
}

func numel(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

// WeightsBytes is the sum of all tensor bytes, as the headers say.
func (i *Info) WeightsBytes() int64 {
	var n int64
	for _, t := range i.Tensors {
		n += t.Bytes
	}
	return n
}

// PPLayers returns the half-open range of decoder layers pipeline stage rank
// of pp holds, as vLLM's get_pp_indices splits them without
// VLLM_PP_LAYER_PARTITION: equal parts, the remainder going one layer each
// to the stages before the last, from the second-to-last backwards.
func PPLayers(numLayers, pp, rank int) (start, end int) {
	if pp <= 1 {
		return 0, numLayers
	}
	if rank < 0 || rank >= pp {
		return 0, 0
	}
	parts := make([]int, pp)
	for j := range parts {
		parts[j] = numLayers / pp
	}
	for j := 2; j < numLayers%pp+2; j++ {
		parts[pp-j]++
	}
	for j := 0; j < rank; j++ {
		start += parts[j]
	}
	return start, start + parts[rank]
}

// RankBytes is the weight bytes one GPU holds under o: replicated tensors in
// full, TP-split ones divided by TP, the vocabulary padded to a multiple of 64
// rows before dividing, k/v projections divided by min(TP, KV heads), routed
// experts divided by EP when set and by TP otherwise. With PP > 1 only the
// stage's layers count; the first stage holds the embedding (and vision
// tower), the last the final norm and lm_head (and, for tied embeddings, a
// copy of the embedding). It is the size on GPU of the checkpoint's tensors:
// engines that convert weights at load time (dequantise, repack) can differ.
func (i *Info) RankBytes(o RankOptions) int64 {
	tp := max(o.TP, 1)
	pp := max(o.PP, 1)
	kv := 0
	n := 0
	tied := false
	if i.Config != nil {
		kv = i.Config.NumKeyValueHeads
		n = i.Config.NumHiddenLayers
		tied = i.Config.TieWordEmbeddings
	}
	if n == 0 { // no config: the layers the weights hold
		for _, t := range i.Tensors {
			if k := t.Kind(nil); k.Layer >= n {
				n = k.Layer + 1
			}
		}
	}
	start, end := PPLayers(n, pp, o.PPRank)
	first, last := o.PPRank == 0, o.PPRank == pp-1
	lmHead := hasLMHead(i.Tensors)
	var total int64
	for _, t := range i.Tensors {
		k := t.Kind(i.Config)
		switch {
		case k.Class == ClassMTP:
			if !o.IncludeMTP || !last {
				continue
			}
		case k.Layer >= 0:
			if k.Layer < start || k.Layer >= end {
				continue
			}
		case k.Class == ClassEmbedding:
			// Tied weights share the embedding; a separate last stage loads its own copy.
			if !first && !(last && tied && !lmHead) {
				continue
			}
		case k.Class == ClassLMHead || k.Class == ClassFinalNorm:
			if !last {
				continue
			}
		default:
			if !first {
				continue
			}
		}
		total += splitBytes(t, k.Split, tp, kv, o.EP)
	}
	return total
}

func splitBytes(t Tensor, s Split, tp, kv, ep int) int64 {
	switch s {
	case SplitTP:
		return ceilDiv(t.Bytes, int64(tp))
	case SplitVocab:
		if len(t.Shape) == 0 || t.Shape[0] <= 0 {
			return ceilDiv(t.Bytes, int64(tp))
		}
		rows := t.Shape[0]
		padded := ceilDiv(rows, 64) * 64
		return t.Bytes / rows * ceilDiv(padded, int64(tp))
	case SplitKVHeads:
		if kv <= 0 {
			return ceilDiv(t.Bytes, int64(tp))
		}
		return ceilDiv(t.Bytes, int64(min(tp, kv)))
	case SplitExpert:
		if ep > 1 {
			return ceilDiv(t.Bytes, int64(ep))
		}
		return ceilDiv(t.Bytes, int64(tp))
	}
	return t.Bytes
}

func ceilDiv(a, b int64) int64 {
	if b <= 1 {
		return a
	}
	return (a + b - 1) / b
}
