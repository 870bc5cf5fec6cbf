package model_test

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/model"
	"github.com/roofline/roofline/internal/model/modeltest"
)

func write(t *testing.T, a modeltest.Arch, opts ...modeltest.Option) string {
	t.Helper()
	dir := t.TempDir()
	if err := modeltest.Write(dir, a, opts...); err != nil {
		t.Fatal(err)
	}
	return dir
}

func inspect(t *testing.T, dir string) *model.Info {
	t.Helper()
	info, err := model.Inspect(dir)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func TestInspectQwen3_8B(t *testing.T) {
	info := inspect(t, write(t, modeltest.Qwen3_8B))
	if len(info.Problems) > 0 {
		t.Fatalf("problems: %+v", info.Problems)
	}
	c := info.Config
	if c.NumHiddenLayers != 36 || c.HiddenSize != 4096 || c.NumAttentionHeads != 32 || c.NumKeyValueHeads != 8 ||
		c.HeadDim != 128 || c.VocabSize != 151936 || c.TieWordEmbeddings || c.TorchDtype != "bfloat16" {
		t.Errorf("config %+v", c)
	}
	if len(info.Shards) != 5 {
		t.Errorf("%d shards, want 5", len(info.Shards))
	}
	// 36 layers x 11 tensors + embed + norm + lm_head.
	if len(info.Tensors) != 36*11+3 {
		t.Errorf("%d tensors", len(info.Tensors))
	}
	// Qwen3-8B has 8.19 B parameters (its model card); all bf16.
	b := info.Breakdown()
	if b.Params < 8_190_000_000 || b.Params > 8_191_000_000 || b.ByDtype["BF16"] != 2*b.Params {
		t.Errorf("params %d, by dtype %v", b.Params, b.ByDtype)
	}
	if info.IndexTotalSize != info.WeightsBytes() {
		t.Errorf("index total %d, headers %d", info.IndexTotalSize, info.WeightsBytes())
	}
	if info.TotalBytes <= info.WeightsBytes() {
		t.Errorf("folder %d bytes, weights %d", info.TotalBytes, info.WeightsBytes())
	}
}

func TestInspectArchitectures(t *testing.T) {
	for _, tc := range []struct {
		arch   modeltest.Arch
		opts   []modeltest.Option
		check  func(*model.Config) bool
		layers int
	}{
		{modeltest.Qwen3_0_6B, nil, func(c *model.Config) bool { return c.TieWordEmbeddings && c.NumKeyValueHeads == 8 }, 28},
		{modeltest.Qwen3_30B_A3B, []modeltest.Option{modeltest.Layers(2), modeltest.Shards(3)}, func(c *model.Config) bool {
			return c.NumExperts == 128 && c.NumExpertsPerTok == 8 && c.MoEIntermediateSize == 768 && c.NumKeyValueHeads == 4
		}, 2},
		{modeltest.DeepSeekV3, []modeltest.Option{modeltest.Layers(4), modeltest.Shards(7)}, func(c *model.Config) bool {
			return c.KVLoraRank == 512 && c.QKRopeHeadDim == 64 && c.NumExperts == 256 && c.NumSharedExperts == 1 &&
				c.FirstKDenseReplace == 3 && c.Quantization != nil && c.Quantization.Method == "fp8"
		}, 5}, // 4 layers + the MTP layer
		{modeltest.Gemma3_4B, nil, func(c *model.Config) bool {
			return c.Multimodal && c.SlidingWindow == 1024 && len(c.LayerTypes) == 34 && c.LayerTypes[5] == model.LayerFull &&
				c.LayerTypes[4] == model.LayerSliding && c.HeadDim == 256 && c.TieWordEmbeddings
		}, 34},
		{modeltest.Gemma3_1B, nil, func(c *model.Config) bool { return !c.Multimodal && c.SlidingWindow == 512 && c.NumKeyValueHeads == 1 }, 26},
		{modeltest.Llama31_8B, []modeltest.Option{modeltest.Dtype("fp8")}, func(c *model.Config) bool {
			return c.Quantization != nil && len(c.Quantization.WeightBlockSize) == 2 && c.RopeScaling["rope_type"] == "llama3"
		}, 32},
		{modeltest.Tiny, nil, func(c *model.Config) bool { return c.NumHiddenLayers == 4 }, 4},
	} {
		t.Run(tc.arch.Name, func(t *testing.T) {
			info := inspect(t, write(t, tc.arch, tc.opts...))
			if len(info.Problems) > 0 {
				t.Fatalf("problems: %+v", info.Problems)
			}
			if !tc.check(info.Config) {
				t.Errorf("config %+v", info.Config)
			}
			if got := len(info.Breakdown().Layers); got != tc.layers {
				t.Errorf("%d layers in the weights, want %d", got, tc.layers)
			}
			var want int64
			for _, s := range tc.arch.Tensors(tc.opts...) {
				want += s.Bytes()
			}
			if info.WeightsBytes() != want {
				t.Errorf("weights %d, want %d", info.WeightsBytes(), want)
			}
		})
	}
}

// problem returns the first problem about file whose summary contains s.
func problem(info *model.Info, file, s string) *model.Problem {
	for i, p := range info.Problems {
		if p.File == file && strings.Contains(p.Summary, s) {
			return &info.Problems[i]
		}
	}
	return nil
}

func TestInspectProblems(t *testing.T) {
	shard1 := "model-00001-of-00004.safetensors"
	shard2 := "model-00002-of-00004.safetensors"
	for _, tc := range []struct {
		name     string
		opts     []modeltest.Option
		edit     func(t *testing.T, dir string)
		severity string
		file     string
		summary  string
	}{
		{"no config", []modeltest.Option{modeltest.DropFile("config.json")}, nil, "error", "config.json", "required file config.json is missing"},
		{"no tokenizer", []modeltest.Option{modeltest.DropFile("tokenizer.json")}, nil, "error", "tokenizer.json", "is missing"},
		{"no tokenizer config", []modeltest.Option{modeltest.DropFile("tokenizer_config.json")}, nil, "error", "tokenizer_config.json", "is missing"},
		{"no generation config", []modeltest.Option{modeltest.DropFile("generation_config.json")}, nil, "error", "generation_config.json", "is missing"},
		{"no chat template", []modeltest.Option{modeltest.NoChatTemplate()}, nil, "warning", "tokenizer_config.json", "no chat template"},
		{"pickle", []modeltest.Option{modeltest.AddBinFile("pytorch_model.bin")}, nil, "error", "pytorch_model.bin", "pickle weights are refused: convert to safetensors"},
		{"pth", []modeltest.Option{modeltest.AddBinFile("consolidated.00.pth")}, nil, "error", "consolidated.00.pth", "pickle weights are refused"},
		{"pickle in a subfolder", nil, func(t *testing.T, dir string) {
			mkfile(t, filepath.Join(dir, "original", "consolidated.00.pth"), "x")
		}, "warning", "original/consolidated.00.pth", "pickle file"},
		{"truncated shard", []modeltest.Option{modeltest.TruncateShard(1, 1000)}, nil, "error", shard2, "is truncated"},
		{"missing shard", []modeltest.Option{modeltest.DropFile(shard2)}, nil, "error", shard2, "is listed in model.safetensors.index.json but missing"},
		{"corrupt header", nil, func(t *testing.T, dir string) {
			f, err := os.OpenFile(filepath.Join(dir, shard1), os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			var n [8]byte
			binary.LittleEndian.PutUint64(n[:], 1<<63)
			_, _ = f.WriteAt(n[:], 0)
			f.Close()
		}, "error", shard1, "unreadable safetensors header"},
		{"leftover shard", nil, func(t *testing.T, dir string) {
			copyFile(t, filepath.Join(dir, shard1), filepath.Join(dir, "model-00001-of-00009.safetensors"))
		}, "warning", "model-00001-of-00009.safetensors", "is not listed in"},
		{"index from another layout", nil, func(t *testing.T, dir string) {
			p := filepath.Join(dir, model.IndexFile)
			data, _ := os.ReadFile(p)
			data = []byte(strings.Replace(string(data), `"model.layers.0.mlp.down_proj.weight": "model-00001`, `"model.layers.0.mlp.down_proj.weight": "model-00002`, 1))
			mkfile(t, p, string(data))
		}, "error", model.IndexFile, "does not match the shards' headers"},
		{"no weights", []modeltest.Option{modeltest.Shards(1), modeltest.DropFile("model.safetensors")}, nil, "error", "", "no safetensors weights"},
		{"bad config", nil, func(t *testing.T, dir string) { mkfile(t, filepath.Join(dir, "config.json"), "{") }, "error", "config.json", "config.json is not valid"},
		{"longer shard", nil, func(t *testing.T, dir string) {
			p := filepath.Join(dir, shard1)
			st, _ := os.Stat(p)
			if err := os.Truncate(p, st.Size()+10); err != nil {
				t.Fatal(err)
			}
		}, "warning", shard1, "10 bytes past the data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := append([]modeltest.Option{modeltest.Shards(4)}, tc.opts...)
			dir := write(t, modeltest.Tiny, opts...)
			if tc.edit != nil {
				tc.edit(t, dir)
			}
			info := inspect(t, dir)
			p := problem(info, tc.file, tc.summary)
			if p == nil {
				t.Fatalf("no problem about %q %q in %+v", tc.file, tc.summary, info.Problems)
			}
			if p.Severity != tc.severity {
				t.Errorf("severity %s, want %s", p.Severity, tc.severity)
			}
			if info.HasErrors() != (tc.severity == "error") {
				t.Errorf("HasErrors = %v with %+v", info.HasErrors(), info.Problems)
			}
			if len(info.Problems) != 1 {
				t.Errorf("want one problem, got %+v", info.Problems)
			}
		})
	}
}

// TestTruncatedMessage pins the message an operator sees after a cut transfer.
func TestTruncatedMessage(t *testing.T) {
	dir := write(t, modeltest.Tiny, modeltest.Shards(2), modeltest.TruncateShard(0, 4096))
	info := inspect(t, dir)
	f := "model-00001-of-00002.safetensors"
	st, _ := os.Stat(filepath.Join(dir, f))
	p := problem(info, f, "truncated")
	if p == nil {
		t.Fatalf("problems %+v", info.Problems)
	}
	want := f + " is truncated: " + itoa(st.Size()) + " bytes on disk, its header says " + itoa(st.Size()+4096)
	if p.Summary != want || !strings.Contains(p.Detail, "4096 bytes are missing") {
		t.Errorf("got %q / %q\nwant %q", p.Summary, p.Detail, want)
	}
}

func TestChatTemplateFile(t *testing.T) {
	dir := write(t, modeltest.Tiny, modeltest.NoChatTemplate())
	mkfile(t, filepath.Join(dir, "chat_template.jinja"), "{{ messages }}")
	if info := inspect(t, dir); len(info.Problems) != 0 {
		t.Errorf("problems %+v", info.Problems)
	}
}

func TestInspectNotAFolder(t *testing.T) {
	dir := t.TempDir()
	if _, err := model.Inspect(filepath.Join(dir, "absent")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("err = %v", err)
	}
	f := filepath.Join(dir, "file")
	mkfile(t, f, "x")
	if _, err := model.Inspect(f); err == nil || !strings.Contains(err.Error(), "is a file, not a folder") {
		t.Errorf("err = %v", err)
	}
}

func mkfile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	mkfile(t, to, string(data))
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// A Hugging Face cache snapshot is a folder of symlinks into blobs/.
func TestInspectSymlinkedSnapshot(t *testing.T) {
	blobs := write(t, modeltest.Tiny, modeltest.Shards(2))
	snap := t.TempDir()
	entries, err := os.ReadDir(blobs)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Symlink(filepath.Join(blobs, e.Name()), filepath.Join(snap, e.Name())); err != nil {
			t.Skip("no symlinks here:", err)
		}
	}
	a, b := inspect(t, blobs), inspect(t, snap)
	if len(b.Problems) != 0 || len(b.Shards) != 2 || b.TotalBytes != a.TotalBytes || b.WeightsBytes() != a.WeightsBytes() {
		t.Errorf("snapshot: %d shards, %d bytes (want %d), problems %+v", len(b.Shards), b.TotalBytes, a.TotalBytes, b.Problems)
	}
}

func TestInfoErrorSummaries(t *testing.T) {
	for _, c := range []struct {
		name  string
		probs []model.Problem
		want  []string
	}{
		{"none", nil, nil},
		{"warnings only", []model.Problem{{Severity: model.SeverityWarning, Summary: "w"}}, nil},
		{"errors in order", []model.Problem{
			{Severity: model.SeverityError, Summary: "a"},
			{Severity: model.SeverityWarning, Summary: "w"},
			{Severity: model.SeverityError, Summary: "b"},
		}, []string{"a", "b"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			info := &model.Info{Problems: c.probs}
			if got := info.ErrorSummaries(); !slices.Equal(got, c.want) {
				t.Errorf("ErrorSummaries() = %q, want %q", got, c.want)
			}
		})
	}
}
