package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/model/modeltest"
)

func TestModelInspectGolden(t *testing.T) {
	for _, tc := range []struct {
		golden string
		arch   modeltest.Arch
		opts   []modeltest.Option
		code   int
	}{
		{"inspect_qwen3_8b.golden", modeltest.Qwen3_8B, nil, ExitOK},
		{"inspect_deepseek_v3_4layers.golden", modeltest.DeepSeekV3, []modeltest.Option{modeltest.Layers(4), modeltest.Shards(5)}, ExitOK},
		{"inspect_gemma3_4b.golden", modeltest.Gemma3_4B, nil, ExitOK},
		{"inspect_broken.golden", modeltest.Tiny, []modeltest.Option{modeltest.Shards(3), modeltest.TruncateShard(2, 100),
			modeltest.DropFile("tokenizer.json"), modeltest.NoChatTemplate(), modeltest.AddBinFile("pytorch_model.bin")}, ExitError},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			dir := synthModel(t, tc.arch, tc.opts...)
			code, out, errs := runMain(t, "model", "inspect", dir)
			if code != tc.code || errs != "" {
				t.Errorf("exit %d, stderr %q", code, errs)
			}
			assertGolden(t, filepath.Join("testdata", "model", tc.golden), strings.ReplaceAll(out, dir, "DIR"))
		})
	}
}

func TestModelInspectJSON(t *testing.T) {
	dir := synthModel(t, modeltest.Qwen3_30B_A3B, modeltest.Layers(2), modeltest.Shards(2))
	code, out, _ := runMain(t, "model", "inspect", "-json", dir)
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	var got struct {
		OK     bool `json:"ok"`
		Config struct {
			NumExperts int `json:"num_experts"`
		} `json:"config"`
		WeightsBytes int64            `json:"weights_bytes"`
		BytesByClass map[string]int64 `json:"bytes_by_class"`
		Shards       []any            `json:"shards"`
		Tensors      []any            `json:"tensors"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if !got.OK || got.Config.NumExperts != 128 || len(got.Shards) != 2 || got.Tensors != nil || got.BytesByClass["expert"] == 0 {
		t.Errorf("json %+v", got)
	}
	_, out, _ = runMain(t, "model", "inspect", "--json", "-tensors", dir)
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Tensors) != 2*(9+128*3)+3 {
		t.Errorf("%d tensors, %v", len(got.Tensors), err)
	}
}

func TestModelManifestVerify(t *testing.T) {
	dir := synthModel(t, modeltest.Tiny, modeltest.Shards(2))
	code, out, errs := runMainWith(t, Streams{ErrTerminal: true}, "model", "manifest", dir)
	sums := dir + ".sha256"
	if code != ExitOK || !strings.Contains(out, "Wrote 7 checksums to "+sums) {
		t.Fatalf("exit %d, out %q, err %q", code, out, errs)
	}
	if !strings.Contains(errs, "hashing [") || !strings.Contains(errs, "100.0%") {
		t.Errorf("no progress bar on a terminal: %q", errs)
	}
	// -o - writes the same list to stdout, without a progress bar.
	code, stdout, errs := runMain(t, "model", "manifest", dir, "-o", "-")
	want, _ := os.ReadFile(sums)
	if code != ExitOK || stdout != string(want) || errs != "" {
		t.Errorf("-o -: exit %d, err %q, out differs: %v", code, errs, stdout != string(want))
	}

	code, out, errs = runMain(t, "model", "verify", dir)
	if code != ExitOK || !strings.HasPrefix(out, "OK: 7 files") || errs != "" {
		t.Errorf("verify: exit %d, out %q, err %q", code, out, errs)
	}

	if err := os.Remove(filepath.Join(dir, "tokenizer.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runMainWith(t, Streams{ErrTerminal: true}, "model", "verify", dir, "-checksums", sums)
	if code != ExitError || !strings.Contains(out, "MISMATCH  config.json") || !strings.Contains(out, "MISSING   tokenizer.json") ||
		!strings.Contains(out, "FAILED: 1 mismatched, 1 missing, 0 extra") {
		t.Errorf("exit %d, out:\n%s", code, out)
	}
	code, out, _ = runMain(t, "model", "verify", "-json", dir)
	var res struct {
		OK      bool     `json:"ok"`
		Missing []string `json:"missing"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != ExitError || res.OK || len(res.Missing) != 1 {
		t.Errorf("json: exit %d, %+v, %v", code, res, err)
	}
}

func TestModelErrors(t *testing.T) {
	tiny := synthModel(t, modeltest.Tiny)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"model"}, "Subcommands:"},
		{[]string{"model", "inspekt"}, `Did you mean "inspect"?`},
		{[]string{"model", "inspect"}, "missing the model folder"},
		{[]string{"model", "inspect", "a", "b"}, "unexpected argument b"},
		{[]string{"model", "inspect", "/nonexistent/model"}, "no such file"},
		{[]string{"model", "verify", tiny}, "no checksum file at " + tiny + ".sha256"},
		{[]string{"model", "verify", tiny, "-checksums", "/nonexistent.sha256"}, "/nonexistent.sha256"},
		{[]string{"model", "synth", filepath.Join(t.TempDir(), "x")}, "-arch is required"},
		{[]string{"model", "synth", "-arch", "Qwen3_8b", filepath.Join(t.TempDir(), "x")}, `Did you mean "Qwen3_8B"?`},
		{[]string{"model", "synth", "-arch", "Tiny", tiny}, "is not empty"},
		{[]string{"model", "synth", "-arch", "Tiny", "-dtype", "int4", filepath.Join(t.TempDir(), "x")}, "want bf16 or fp8"},
		{[]string{"model", "manifest", "-x", tiny}, "unknown flag"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errs := runMain(t, tc.args...)
			if code != ExitError || !strings.Contains(out+errs, tc.want) {
				t.Errorf("exit %d, want %q in\n%s%s", code, tc.want, out, errs)
			}
		})
	}
}

func TestModelSynth(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	code, out, errs := runMain(t, "model", "synth", "-arch", "Llama31_8B", "-shards", "2", "-dtype", "fp8", dir)
	if code != ExitOK || !strings.Contains(out, "synthetic Llama31_8B (meta-llama/Llama-3.1-8B-Instruct)") || !strings.Contains(out, "in 2 shard(s)") {
		t.Fatalf("exit %d, out %q, err %q", code, out, errs)
	}
	code, out, _ = runMain(t, "model", "inspect", dir)
	if code != ExitOK || !strings.Contains(out, "Quantization    fp8 (e4m3, blocks 128x128)") || !strings.Contains(out, "No problems found.") {
		t.Errorf("inspect: exit %d\n%s", code, out)
	}
	for _, name := range []string{"model inspect", "model manifest", "model verify", "model synth"} {
		if c := commands[name]; c == nil || c.Hidden {
			t.Errorf("%s: %+v", name, c)
		}
	}
	if !strings.Contains(commands["model synth"].Usage, "rehearsals and tests") {
		t.Error("synth help does not say what it is for")
	}
}
