package model_test

import (
	"testing"

	"github.com/roofline/roofline/internal/model"
	"github.com/roofline/roofline/internal/model/modeltest"
)

// TestRankBytesTiny works the per-rank bytes of Tiny out from its shapes
// (hidden 128, 4 layers, 4 heads / 2 KV heads of 32, intermediate 384, vocab
// 8192, bf16, untied).
func TestRankBytesTiny(t *testing.T) {
	info := inspect(t, write(t, modeltest.Tiny))
	const (
		norms = 2 * 128 * 2                             // two norms per layer, replicated
		tp    = (2*128*128 + 3*384*128) * 2             // q, o, gate, up, down
		kv    = 2 * 64 * 128 * 2                        // k, v
		vocab = 8192 * 128 * 2                          // embed and lm_head each
		final = 128 * 2                                 // final norm
		total = 4*(norms+tp+kv) + 2*vocab + final       // everything once
		tp2   = 4*(norms+tp/2+kv/2) + 2*vocab/2 + final // TP 2
		tp4   = 4*(norms+tp/4+kv/2) + 2*vocab/4 + final // TP 4: 2 KV heads replicate
		pp0   = 2*(norms+tp+kv) + vocab                 // PP 2, first stage: layers 0-1 + embed
		pp1   = 2*(norms+tp+kv) + vocab + final         // last stage: layers 2-3 + norm + lm_head
	)
	if info.WeightsBytes() != total {
		t.Fatalf("weights %d, want %d", info.WeightsBytes(), total)
	}
	for _, tc := range []struct {
		o    model.RankOptions
		want int64
	}{
		{model.RankOptions{}, total},
		{model.RankOptions{TP: 1}, total},
		{model.RankOptions{TP: 2}, tp2},
		{model.RankOptions{TP: 4}, tp4},
		{model.RankOptions{PP: 2, PPRank: 0}, pp0},
		{model.RankOptions{PP: 2, PPRank: 1}, pp1},
	} {
		if got := info.RankBytes(tc.o); got != tc.want {
			t.Errorf("%+v: %d bytes, want %d", tc.o, got, tc.want)
		}
	}
}

func TestRankBytesProperties(t *testing.T) {
	t.Run("tied embeddings add a copy on the last PP stage", func(t *testing.T) {
		info := inspect(t, write(t, modeltest.Qwen3_0_6B))
		embed := int64(151936 * 1024 * 2)
		sum := info.RankBytes(model.RankOptions{PP: 2, PPRank: 0}) + info.RankBytes(model.RankOptions{PP: 2, PPRank: 1})
		if sum != info.WeightsBytes()+embed {
			t.Errorf("PP 2 sum %d, want %d + %d", sum, info.WeightsBytes(), embed)
		}
	})
	t.Run("MTP layer only when asked", func(t *testing.T) {
		info := inspect(t, write(t, modeltest.DeepSeekV3, modeltest.Layers(4), modeltest.Shards(3)))
		var mtp int64
		for _, x := range info.Tensors {
			if x.Kind(info.Config).Class == model.ClassMTP {
				mtp += x.Bytes
			}
		}
		if mtp == 0 {
			t.Fatal("no MTP tensors")
		}
		if got := info.RankBytes(model.RankOptions{}); got != info.WeightsBytes()-mtp {
			t.Errorf("without MTP %d, want %d", got, info.WeightsBytes()-mtp)
		}
		if got := info.RankBytes(model.RankOptions{IncludeMTP: true}); got != info.WeightsBytes() {
			t.Errorf("with MTP %d, want %d", got, info.WeightsBytes())
		}
		// MLA down projections are replicated: TP 8 holds more than an eighth.
		if r := info.RankBytes(model.RankOptions{TP: 8}); r*8 <= info.RankBytes(model.RankOptions{}) {
			t.Errorf("TP 8 rank %d x 8 is not above the whole", r)
		}
	})
	t.Run("expert parallel divides experts by EP", func(t *testing.T) {
		info := inspect(t, write(t, modeltest.Qwen3_30B_A3B, modeltest.Layers(1), modeltest.Shards(1)))
		var experts int64
		for _, x := range info.Tensors {
			if x.Kind(info.Config).Class == model.ClassExpert {
				experts += x.Bytes
			}
		}
		tp2 := info.RankBytes(model.RankOptions{TP: 2})
		ep8 := info.RankBytes(model.RankOptions{TP: 2, EP: 8})
		if tp2-ep8 != experts/2-experts/8 {
			t.Errorf("TP2 %d - EP8 %d = %d, want %d", tp2, ep8, tp2-ep8, experts/2-experts/8)
		}
	})
}
