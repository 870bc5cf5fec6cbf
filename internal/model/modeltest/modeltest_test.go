package modeltest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/model"
	"github.com/roofline/roofline/internal/model/modeltest"
)

// Sizes from the models' published model.safetensors.index.json total_size
// (vram.md §5); the generators must reproduce them from config values alone.
func TestPublishedTotals(t *testing.T) {
	for _, tc := range []struct {
		arch modeltest.Arch
		want int64
	}{
		{modeltest.Llama31_8B, 16_060_522_496},
		{modeltest.Llama31_70B, 141_107_412_992},
		{modeltest.Qwen3_32B, 65_524_246_528},
	} {
		t.Run(tc.arch.Name, func(t *testing.T) {
			dir := t.TempDir()
			if err := modeltest.Write(dir, tc.arch); err != nil {
				t.Fatal(err)
			}
			info, err := model.Inspect(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range info.Problems {
				t.Errorf("problem: %+v", p)
			}
			if got := info.WeightsBytes(); got != tc.want {
				t.Errorf("weights %d bytes, want %d", got, tc.want)
			}
		})
	}
}

func TestWriteOptions(t *testing.T) {
	dir := t.TempDir()
	err := modeltest.Write(dir, modeltest.Qwen3_30B_A3B, modeltest.Layers(1), modeltest.Shards(9), modeltest.Dtype("fp8"))
	if err != nil {
		t.Fatal(err)
	}
	info, err := model.Inspect(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Problems) > 0 || len(info.Shards) != 9 || info.Config.NumHiddenLayers != 1 || info.Config.Quantization == nil {
		t.Fatalf("shards %d, config %+v, problems %+v", len(info.Shards), info.Config, info.Problems)
	}
	for i, s := range info.Shards {
		if want := fmt.Sprintf("model-%05d-of-00009.safetensors", i+1); s.File != want || s.Tensors == 0 {
			t.Errorf("shard %d: %+v", i, s)
		}
	}
	b := info.Breakdown()
	// fp8: linear weights in F8_E4M3 with F32 block scales; embeddings, norms, router stay BF16.
	if b.ByDtype["F8_E4M3"] == 0 || b.ByDtype["F32"] == 0 || b.ByDtype["BF16"] == 0 {
		t.Errorf("by dtype %v", b.ByDtype)
	}
	for _, x := range info.Tensors {
		if strings.HasSuffix(x.Name, "_scale_inv") {
			w := info.Tensors[0]
			for _, y := range info.Tensors {
				if y.Name == strings.TrimSuffix(x.Name, "_scale_inv") {
					w = y
				}
			}
			if x.Shape[0] != (w.Shape[0]+127)/128 || x.Shape[1] != (w.Shape[1]+127)/128 {
				t.Fatalf("%s %v for weight %v", x.Name, x.Shape, w.Shape)
			}
		}
	}
}

func TestWriteErrors(t *testing.T) {
	for _, tc := range []struct {
		arch modeltest.Arch
		opts []modeltest.Option
		want string
	}{
		{modeltest.Tiny, []modeltest.Option{modeltest.Shards(0)}, "0 shards"},
		{modeltest.Tiny, []modeltest.Option{modeltest.Shards(10000)}, "10000 shards"},
		{modeltest.Tiny, []modeltest.Option{modeltest.Dtype("int4")}, "want bf16 or fp8"},
		{modeltest.Arch{}, nil, "empty architecture"},
	} {
		if err := modeltest.Write(t.TempDir(), tc.arch, tc.opts...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
}

func TestArches(t *testing.T) {
	names := modeltest.ArchNames()
	for _, want := range []string{"Qwen3_8B", "Qwen3_0_6B", "Llama31_8B", "Llama31_70B", "Qwen3_30B_A3B", "DeepSeekV3", "Gemma3_4B", "Tiny"} {
		if a, ok := modeltest.Arches()[want]; !ok || a.Name != want || a.Repo == "" {
			t.Errorf("%s missing from %v", want, names)
		}
	}
}
