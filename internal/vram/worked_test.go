package vram

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/engine/kinds"
)

// gb converts a logged GiB figure (two decimals) to bytes.
func gb(v float64) uint64 { return uint64(math.Round(v * GiB)) }

func one(v float64) []uint64 { return []uint64{gb(v)} }

// worked is a launch whose figures were logged (vram.md §2.5, §3.2; the
// llm-d H100 table that vram.md §2.2 quotes).
type worked struct {
	name   string
	in     Input
	tokens int64   // logged KV tokens (0: not logged)
	budget float64 // logged "Available KV cache memory", GiB (0: not logged)
	conc   float64 // logged maximum concurrency (0: not logged)
	fits   bool
	// own is the largest relative error roofline's own estimate (overrides
	// removed) may have against the logged figure; 0 = no own estimate (the
	// row lacks the utilization or the model's weights).
	own float64
	// fitted marks rows whose activation or overhead figures were used to
	// fit roofline's constants: their own error is in-sample.
	fitted bool
}

func workedChecks() []worked {
	h100 := func(m denseCfg, tp, ctx int, w, act, nt float64) Input {
		return Input{Engine: kinds.VLLM, EngineVersion: "0.11.0", Model: m.spec(), GPUMemoryBytes: gb(79.18),
			GPUName: "NVIDIA H100 80GB HBM3", TP: tp, MaxModelLen: ctx, BlockSize: 128,
			Overrides: Overrides{WeightsBytes: one(w), ActivationBytes: one(act), NonTorchBytes: one(nt)}}
	}
	gptOSS := gptOSS120B.spec()
	dsPP := mlaSpec(27)
	return []worked{
		{name: "V01 V0 Llama-3.1-8B RTX3090 u0.90 20k", fits: true, tokens: 1952 * 16, own: 0.06,
			in: Input{Engine: kinds.VLLM, EngineVersion: "0.6.4", Model: llama31_8B.spec(), GPUMemoryBytes: gb(23.58),
				GPUName: "NVIDIA GeForce RTX 3090", MaxModelLen: 20000, GPUMemoryUtilization: 0.90,
				Overrides: Overrides{WeightsBytes: one(14.99), ActivationBytes: one(2.07), NonTorchBytes: one(0.35)}}},
		{name: "V03 V0 Llama-3-8B A100-40GB u0.90", fits: true, tokens: 91056, own: 0.80,
			in: Input{Engine: kinds.VLLM, EngineVersion: "0.6.4", Model: llama3_8B.spec(), GPUMemoryBytes: gb(39.50),
				GPUName: "NVIDIA A100-SXM4-40GB", MaxModelLen: 8192, GPUMemoryUtilization: 0.90,
				Overrides: Overrides{WeightsBytes: one(14.96), ActivationBytes: one(9.37), NonTorchBytes: one(0.10)}}},
		{name: "V18 V1 Llama-3.1-8B H100", fits: true, budget: 51.38, own: 0.01, fitted: true,
			in: h100(llama31_8B, 1, 16000, 14.99, 4.76, 0.13)},
		{name: "V24 V1 Mistral-Small-3.2-24B H100 u0.95", fits: true, tokens: 184832, conc: 11.55, own: 0.12,
			in: func() Input {
				in := h100(mistralSmall32, 1, 16000, 44.76, 2.12, 0.14)
				in.GPUMemoryBytes, in.GPUMemoryUtilization = gb(79.19), 0.95
				return in
			}()},
		{name: "V11 V1 0.10.1.1 Qwen2-7B A100-80GB u0.50", fits: true, tokens: 464848, conc: 28.37, own: 0.01, fitted: true,
			in: Input{Engine: kinds.VLLM, EngineVersion: "0.10.1.1", Model: qwen2_7B.spec(), GPUMemoryBytes: gb(79.28),
				GPUName: "NVIDIA A100-SXM4-80GB", MaxModelLen: 16384, GPUMemoryUtilization: 0.50,
				Overrides: Overrides{KVBudgetBytes: one(24.83)}}},
		{name: "V13 V1 0.10.1.1 gpt-oss-120b TP4 hybrid", fits: true, tokens: 2640144, conc: 284.25,
			in: Input{Engine: kinds.VLLM, EngineVersion: "0.10.1.1", Model: gptOSS, GPUMemoryBytes: gb(79.18), TP: 4,
				MaxModelLen: 16384, MaxNumBatchedTokens: 2048, Overrides: Overrides{KVBudgetBytes: one(45.32)}}},
		{name: "V09 V1 DeepSeek-V2-Lite TP2 PP2 L4", fits: true, tokens: 807792,
			in: Input{Engine: kinds.VLLM, EngineVersion: "0.9.2", Model: dsPP, GPUMemoryBytes: gb(22.03),
				GPUName: "NVIDIA L4", ComputeCapability: "8.9", TP: 2, PP: 2, MaxModelLen: 8192,
				Overrides: Overrides{KVBudgetBytes: []uint64{gb(12.1334), gb(12.1334), gb(11.33), gb(11.33)}}}},
		{name: "llm-d Qwen3-0.6B H100 16000", fits: true, budget: 64.45, own: 0.01, fitted: true,
			in: h100(qwen3_06B, 1, 16000, 1.12, 5.56, 0.13)},
		{name: "llm-d Qwen3-0.6B H100 32000", fits: true, budget: 64.45, own: 0.01, fitted: true,
			in: h100(qwen3_06B, 1, 32000, 1.12, 5.56, 0.13)},
		{name: "llm-d Qwen3-32B H100 16000", fits: true, budget: 4.45, own: 0.01, fitted: true,
			in: h100(qwen3_32B, 1, 16000, 61.03, 5.64, 0.14)},
		{name: "llm-d Qwen3-32B H100 32000 (failed)", fits: false, budget: 4.45, own: 0.01, fitted: true,
			in: h100(qwen3_32B, 1, 32000, 61.03, 5.64, 0.14)},
		{name: "llm-d Llama-3.3-70B-FP8 H100 TP1 (failed)", fits: false, budget: -1.44, own: 0.05, fitted: true,
			in: h100(llama33_70B_FP8, 1, 16000, 67.72, 4.84, 0.14)},
		{name: "llm-d Llama-3.3-70B-FP8 H100 TP2", fits: true, budget: 32.0, own: 0.01, fitted: true,
			in: h100(llama33_70B_FP8, 2, 16000, 33.88, 4.84, 0.55)},
		{name: "S02 SGLang QwQ-32B TP4 L4 mfs0.85", fits: true, tokens: 46611, own: 0.10,
			in: Input{Engine: kinds.SGLang, EngineVersion: "0.4.3", Model: qwq32B.spec(), GPUMemoryBytes: gb(22.03),
				NVMLTotalBytes: 23034 << 20, GPUName: "NVIDIA L4", TP: 4, MaxModelLen: 32768, GPUMemoryUtilization: 0.85,
				Overrides: Overrides{InitFreeBytes: one(21.63), WeightsBytes: one(21.63 - 6.09)}}},
	}
}

func relErr(got, want float64) float64 { return math.Abs(got-want) / math.Abs(want) }

// TestWorkedChecks reproduces the logged figures from the logged inputs
// (within 0.5 %) and prints roofline's own estimate for the same launch.
func TestWorkedChecks(t *testing.T) {
	var table strings.Builder
	fmt.Fprintf(&table, "\n| check | logged | from logged inputs | own estimate | own error | fitted on it |\n|---|---|---|---|---|---|\n")
	for _, c := range workedChecks() {
		t.Run(c.name, func(t *testing.T) {
			res, err := Estimate(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if res.Fits != c.fits {
				t.Errorf("fits = %v, want %v; reasons %q", res.Fits, c.fits, res.Reasons)
			}
			logged, got, unit := 0.0, 0.0, ""
			if c.tokens > 0 {
				logged, got, unit = float64(c.tokens), float64(res.KVTokens), "tokens"
				if e := relErr(got, logged); e > 0.005 {
					t.Errorf("KV tokens %d, logged %d: %.3f%% off", res.KVTokens, c.tokens, 100*e)
				}
			}
			if c.budget != 0 {
				b := float64(res.KVBudgetBytes) / GiB
				if e := relErr(b, c.budget); e > 0.005 {
					t.Errorf("KV budget %.3f GiB, logged %.2f: %.3f%% off", b, c.budget, 100*e)
				}
				if unit == "" {
					logged, got, unit = c.budget, b, "GiB"
				}
			}
			if c.conc > 0 {
				if e := relErr(res.MaxConcurrency, c.conc); e > 0.005 {
					t.Errorf("max concurrency %.3f, logged %.2f", res.MaxConcurrency, c.conc)
				}
			}
			ownCell, errCell := "—", "—"
			if c.own > 0 {
				in := c.in
				in.Overrides = Overrides{}
				own, err := Estimate(in)
				if err != nil {
					t.Fatal(err)
				}
				o := float64(own.KVTokens)
				if unit == "GiB" {
					o = float64(own.KVBudgetBytes) / GiB
				}
				e := (o - logged) / math.Abs(logged)
				t.Logf("own estimate: %.2f %s vs logged %.2f (%+.1f%%); weights %.2f GiB, activation %.2f GiB, fits %v",
					o, unit, logged, 100*e, float64(own.WeightsBytes)/GiB, float64(own.Ranks[0].ActivationBytes)/GiB, own.Fits)
				if math.Abs(e) > c.own {
					t.Errorf("own estimate is %.1f%% off, more than the %.0f%% docs/vram.md records", 100*e, 100*c.own)
				}
				if own.Fits != c.fits {
					t.Errorf("own estimate: fits = %v, want %v (%q)", own.Fits, c.fits, own.Reasons)
				}
				ownCell, errCell = fmt.Sprintf("%.2f", o), fmt.Sprintf("%+.1f %%", 100*e)
			}
			fitted := ""
			if c.fitted {
				fitted = "yes"
			}
			fmt.Fprintf(&table, "| %s | %.2f %s | %.2f | %s | %s | %s |\n", c.name, logged, unit, got, ownCell, errCell, fitted)
		})
	}
	t.Log(table.String())
}

// TestWorkedDetails checks the intermediate figures vram.md derives.
func TestWorkedDetails(t *testing.T) {
	t.Run("V09 stage 1 alone would allow 812k tokens; the minimum wins", func(t *testing.T) {
		c := workedChecks()[6]
		res, err := Estimate(c.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Ranks[0].KVBytesPerToken; got != 14*576*2 {
			t.Errorf("stage 0 bytes/token = %d, want 16128", got)
		}
		if got := res.Ranks[2].KVTokens; got < 812000 || got > 812400 {
			t.Errorf("stage 1 tokens = %d, want about 812k", got)
		}
		if res.KVTokens != res.Ranks[0].KVTokens {
			t.Errorf("KV tokens %d is not the stage-0 minimum %d", res.KVTokens, res.Ranks[0].KVTokens)
		}
	})
	t.Run("V08 DeepSeek-V2-Lite-Chat: 0.95 GiB KV cache is needed", func(t *testing.T) {
		in := Input{Engine: kinds.VLLM, EngineVersion: "0.9.2", Model: mlaSpec(27), GPUMemoryBytes: gb(22.03),
			GPUName: "NVIDIA L4", MaxModelLen: 32768, Overrides: Overrides{KVBudgetBytes: one(0.5)}}
		res, err := Estimate(in)
		if err != nil {
			t.Fatal(err)
		}
		if res.NeededBytes != 32768*27*576*2 {
			t.Errorf("needed %d bytes, want %d", res.NeededBytes, 32768*27*576*2)
		}
		if res.Fits || len(res.Reasons) != 1 || !strings.Contains(res.Reasons[0], "0.95 GiB KV cache is needed") {
			t.Errorf("reasons %q, want vLLM's 0.95 GiB error", res.Reasons)
		}
		// vLLM's "estimated maximum model length": the longest whole-block
		// request that fits in 0.5 GiB.
		want := int64(gb(0.5)/(16*27*1152)) * 16
		if res.MaxModelLenFit != want {
			t.Errorf("max_model_len_fit %d, want %d", res.MaxModelLenFit, want)
		}
	})
	t.Run("S01 Qwen3-235B TP4: one KV head per rank, K size 8.23 GiB", func(t *testing.T) {
		in := Input{Engine: kinds.SGLang, Model: qwen3_235B.spec(), GPUMemoryBytes: gb(79.18), TP: 4, MaxModelLen: 40960}
		res, err := Estimate(in)
		if err != nil {
			t.Fatal(err)
		}
		if res.KVBytesPerToken != 94*1*256*2 {
			t.Errorf("cell %d bytes, want %d", res.KVBytesPerToken, 94*256*2)
		}
		// K is half the cell; SGLang allocates one padded page more.
		k := float64(367404+1) * float64(res.KVBytesPerToken) / 2 / GiB
		if math.Abs(k-8.23) > 0.005 {
			t.Errorf("K size %.3f GiB, logged 8.23", k)
		}
	})
	t.Run("S02 K size 1.42 GiB", func(t *testing.T) {
		c := workedChecks()[len(workedChecks())-1]
		res, err := Estimate(c.in)
		if err != nil {
			t.Fatal(err)
		}
		k := float64(res.KVTokens+1) * float64(res.KVBytesPerToken) / 2 / GiB
		if math.Abs(k-1.42) > 0.005 {
			t.Errorf("K size %.3f GiB, logged 1.42", k)
		}
	})
	t.Run("V13 hybrid grouping: 2 groups of 18, 1161 blocks per request", func(t *testing.T) {
		c := workedChecks()[5]
		r, err := resolve(c.in)
		if err != nil {
			t.Fatal(err)
		}
		kv := r.vllmKV(c.in.Model.Layers, int64(gb(45.32)))
		if kv.blocks < 330000 || kv.blocks > 330020 {
			t.Errorf("num_blocks %d, logged 330,018", kv.blocks)
		}
		if got := kv.tokens; got != kv.blocks/2*16 {
			t.Errorf("tokens %d, want num_blocks // 2 x 16", got)
		}
		if per := float64(kv.blocks) / kv.conc; math.Abs(per-1161) > 0.01 {
			t.Errorf("blocks per request %.2f, want 1024 + 137 = 1161", per)
		}
	})
}
