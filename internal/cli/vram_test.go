package cli

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/gpu/gputest"
	"github.com/roofline/roofline/internal/model/modeltest"
)

// TestVRAMVerdicts covers the three verdicts the issue asks for on
// synthetic model folders: fits; does not fit at TP 1 but does at TP 2; the
// context is too long. Each human output is a golden file.
func TestVRAMVerdicts(t *testing.T) {
	qwen := synthModel(t, modeltest.Qwen3_8B)
	llama70 := synthModel(t, modeltest.Llama31_70B)
	for _, c := range []struct {
		name     string
		args     []string
		code     int
		contains []string
	}{
		{"qwen3-8b-h100-fits", []string{"-model", qwen, "-gpu", "H100", "-tp", "1", "-ctx", "32768"}, 0,
			[]string{"Fits: "}},
		{"llama70b-h200-tp1-nofit", []string{"-model", llama70, "-gpu", "H200", "-tp", "1", "-ctx", "32768"}, 1,
			[]string{"Does not fit:", "No available memory for the cache blocks", "Raise TP to 2 (-tp 2)"}},
		{"llama70b-h200-tp2-fits", []string{"-model", llama70, "-gpu", "H200", "-tp", "2", "-ctx", "32768"}, 0,
			[]string{"Fits: "}},
		{"qwen3-8b-l4-ctx-too-long", []string{"-model", qwen, "-gpu", "L4", "-ctx", "40960"}, 1,
			[]string{"Does not fit:", "To serve at least one request", "Lower the context to", "fp8 KV cache"}},
		{"qwen3-8b-h100-sglang", []string{"-model", qwen, "-gpu", "H100", "-ctx", "32768", "-engine", "sglang"}, 0,
			[]string{"SGLang", "mem_fraction_static 0.835"}},
		{"qwen3-8b-h100x8-inventory-tp2", []string{"-model", qwen, "-inventory", "../gpu/testdata/h100x8.json", "-gpus", "2,3", "-tp", "2", "-ctx", "40960", "-concurrency", "16"}, 0,
			[]string{"(16 required)"}},
		{"qwen3-8b-h100-concurrency-short", []string{"-model", qwen, "-gpu", "H100", "-ctx", "40960", "-concurrency", "64"}, 1,
			[]string{"fewer than the 64 required", "to hold 64 requests"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runMain(t, append([]string{"vram"}, c.args...)...)
			if code != c.code {
				t.Errorf("exit %d, want %d; stderr %s", code, c.code, errOut)
			}
			for _, s := range c.contains {
				if !strings.Contains(out, s) {
					t.Errorf("output lacks %q:\n%s", s, out)
				}
			}
			assertGolden(t, filepath.Join("testdata", "vram", c.name+".golden"), out)
		})
	}
}

// TestVRAMBusyGPU: a foreign process on one GPU of a snapshot makes vLLM
// refuse to start, and the output says which rank and what to do.
func TestVRAMBusyGPU(t *testing.T) {
	qwen := synthModel(t, modeltest.Qwen3_8B)
	snap := gputest.H100s(2, gputest.WithProcess(1, 4242, 30*gputest.GiB, "python3", "train.py"))
	var buf bytes.Buffer
	if err := gpu.WriteSnapshot(&buf, snap); err != nil {
		t.Fatal(err)
	}
	path := writeFile(t, filepath.Join(t.TempDir(), "busy.json"), buf.String())
	code, out, _ := runMain(t, "vram", "-model", qwen, "-inventory", path, "-tp", "2", "-ctx", "32768")
	if code != ExitError || !strings.Contains(out, "rank 1: vLLM refuses to start") || !strings.Contains(out, "Lower -util") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	assertGolden(t, filepath.Join("testdata", "vram", "qwen3-8b-busy-gpu.golden"), strings.ReplaceAll(out, path, "$SNAPSHOT"))

	// SGLang starts on unequal GPUs only when they are within 10 %.
	code, out, _ = runMain(t, "vram", "-model", qwen, "-inventory", path, "-tp", "2", "-ctx", "32768", "-engine", "sglang")
	if code != ExitError || !strings.Contains(out, "unbalanced") {
		t.Errorf("sglang: exit %d:\n%s", code, out)
	}
}

func TestVRAMJSON(t *testing.T) {
	qwen := synthModel(t, modeltest.Qwen3_8B)
	code, out, errOut := runMain(t, "vram", "-model", qwen, "-gpu", "L4", "-ctx", "40960", "-json")
	if code != ExitError {
		t.Errorf("exit %d, want 1 (does not fit); stderr %s", code, errOut)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(out), &obj); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	for _, k := range []string{"fits", "kv_tokens", "kv_budget_bytes", "weights_bytes", "kv_bytes_per_token",
		"max_concurrency", "max_model_len_fit", "min_tp_fit", "ranks", "reasons", "suggestions", "model", "gpu"} {
		if _, ok := obj[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	if obj["fits"] != false {
		t.Errorf("fits = %v", obj["fits"])
	}
	ranks, _ := obj["ranks"].([]any)
	if len(ranks) != 1 {
		t.Fatalf("ranks %v", obj["ranks"])
	}
	r0 := ranks[0].(map[string]any)
	if r0["weights_bytes"] != obj["weights_bytes"] || r0["kv_tokens"] != obj["kv_tokens"] {
		t.Errorf("rank 0 %v does not match the totals", r0)
	}
	// The JSON and the human view come from the same estimate.
	_, human, _ := runMain(t, "vram", "-model", qwen, "-gpu", "L4", "-ctx", "40960")
	fit := int64(obj["max_model_len_fit"].(float64))
	if !strings.Contains(human, "Longest context that fits: "+itoa(fit)+" tokens") {
		t.Errorf("human view disagrees with max_model_len_fit %d:\n%s", fit, human)
	}
}

func itoa(v int64) string { b, _ := json.Marshal(v); return string(b) }

func TestVRAMUsageErrors(t *testing.T) {
	qwen := synthModel(t, modeltest.Tiny)
	withNVML(t, gpu.NewFile(filepath.Join(t.TempDir(), "absent.json")))
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no model", []string{"-gpu", "H100"}, "-model DIR is required"},
		{"two GPU sources", []string{"-model", qwen, "-gpu", "H100", "-gpu-gib", "80"}, "give one of -gpu-gib, -gpu and -inventory"},
		{"unknown GPU", []string{"-model", qwen, "-gpu", "H10O"}, `Did you mean "H100"?`},
		{"bad engine", []string{"-model", qwen, "-gpu", "H100", "-engine", "sglan"}, `Did you mean "sglang"?`},
		{"gpus with preset", []string{"-model", qwen, "-gpu", "H100", "-gpus", "0"}, "leave it out"},
		{"gpus count", []string{"-model", qwen, "-inventory", "../gpu/testdata/h100x8.json", "-gpus", "0,1", "-tp", "4"}, "-gpus lists 2 GPUs but TP 4 x PP 1 needs 4"},
		{"gpus index", []string{"-model", qwen, "-inventory", "../gpu/testdata/h100x8.json", "-gpus", "9"}, "there is no GPU 9"},
		{"too few GPUs", []string{"-model", qwen, "-inventory", "../gpu/testdata/h200x1.json", "-tp", "2"}, "needs 2 GPUs"},
		{"no NVML", []string{"-model", qwen}, "give -gpu NAME, -gpu-gib F or -inventory FILE"},
		{"missing folder", []string{"-model", "/nonexistent/model", "-gpu", "H100"}, "/nonexistent/model"},
		{"bad ctx", []string{"-model", qwen, "-gpu", "H100", "-ctx", "0"}, "-ctx 0"},
		{"bad dtype", []string{"-model", qwen, "-gpu", "H100", "-kv-cache-dtype", "int4"}, "unknown KV cache dtype"},
		{"bad util", []string{"-model", qwen, "-gpu", "H100", "-util", "1.2"}, "outside (0, 1]"},
		{"bad version", []string{"-model", qwen, "-gpu", "H100", "-engine-version", "nightly"}, "does not start with a number"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runMain(t, append([]string{"vram"}, c.args...)...)
			if code != ExitError || out != "" || !strings.Contains(errOut, c.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and %q", code, out, errOut, c.want)
			}
		})
	}
}
