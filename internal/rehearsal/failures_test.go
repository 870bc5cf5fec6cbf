package rehearsal

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/engine/logdiag"
	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/model/modeltest"
)

// engineArgs is the command line of a server on port for kind.
func engineArgs(kind, model string, port int, extra ...string) []string {
	if kind == KindSGLang {
		return append([]string{"-m", "sglang.launch_server", "--model-path", model, "--port", strconv.Itoa(port)}, extra...)
	}
	return append([]string{"serve", model, "--port", strconv.Itoa(port)}, extra...)
}

// writeInventory writes a snapshot of n H100s; busy GiB are used on GPU 0.
func writeInventory(t *testing.T, n int, busyGiB float64, cudaDriver string) string {
	t.Helper()
	snap := &gpu.Snapshot{FormatVersion: gpu.FormatVersion, Source: "file", Host: "test", TakenAt: time.Now().UTC(),
		DriverVersion: "550.54.15", CUDADriverVersion: cudaDriver}
	for i := 0; i < n; i++ {
		g, _ := gpu.Preset("H100")
		g.Index, g.UUID = i, fmt.Sprintf("GPU-%08d-0000-0000-0000-000000000000", i)
		g.PCIBusID = fmt.Sprintf("00000000:%02x:00.0", 0x18+i)
		if i == 0 && busyGiB > 0 {
			busy := uint64(busyGiB * (1 << 30))
			g.MemoryUsedBytes, g.MemoryFreeBytes = busy, g.MemoryFreeBytes-busy
		}
		snap.GPUs = append(snap.GPUs, g)
	}
	path := filepath.Join(t.TempDir(), "inventory.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := gpu.WriteSnapshot(f, snap); err != nil {
		t.Fatal(err)
	}
	return path
}

// Every injectable class ends the start with that failure's real log lines,
// and roofline's classifier names it.
func TestInjectedFailuresAreClassified(t *testing.T) {
	qwen := writeModel(t, modeltest.Qwen3_8B)
	for _, spec := range []string{"vllm@0.16.0", "vllm@0.8.5", "sglang@0.5.6.post2"} {
		kind, _, _ := strings.Cut(spec, "@")
		for _, class := range FailureClasses(kind) {
			t.Run(spec+"/"+class, func(t *testing.T) {
				t.Parallel()
				port := freePort(t)
				p := startEngine(t, spec, []string{EnvFail + "=" + class}, engineArgs(kind, qwen, port, "--tensor-parallel-size", "2")...)
				code := p.wait(startWithin)
				if code == 0 {
					t.Fatalf("exit status 0; output:\n%s", p.out)
				}
				if class == ClassBadFlag && code != 2 {
					t.Errorf("bad_flag: exit status %d, want argparse's 2", code)
				}
				d := engine.MustLookup(kind).Diagnose([]byte(p.out.String()))
				if d.Class != class {
					t.Errorf("classified as %s, want %s; evidence %q; output:\n%s", d.Class, class, d.Evidence, p.out)
				}
			})
		}
	}
}

// Failures that come from the model, the GPUs, the flags and the port
// themselves, not from injection.
func TestNaturalFailures(t *testing.T) {
	small := writeModel(t, modeltest.Qwen3_8B)
	big := writeModel(t, modeltest.Qwen3_32B)
	huge := writeModel(t, modeltest.Llama31_70B)
	noConfig := writeModel(t, modeltest.Qwen3_8B, modeltest.DropFile("config.json"))
	noShard := writeModel(t, modeltest.Qwen3_8B, modeltest.DropFile("model-00003-of-00005.safetensors"))
	foreign := writeModel(t, modeltest.Qwen3_8B)
	cfg := filepath.Join(foreign, "config.json")
	raw, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(strings.ReplaceAll(string(raw), "Qwen3ForCausalLM", "TotallyNewForCausalLM")), 0o644); err != nil {
		t.Fatal(err)
	}
	busy := writeInventory(t, 8, 20, "12.4")
	oldDriver := writeInventory(t, 2, 0, "11.4")

	tests := []struct {
		name, spec, model string
		env               []string
		extra             []string
		want              string
		busyPort          bool
	}{
		{"weights larger than the GPU", "vllm@0.16.0", huge, nil, nil, logdiag.OOMWeights, false},
		{"weights larger than the GPU sglang", "sglang@0.5.6.post2", huge, nil, nil, logdiag.OOMWeights, false},
		{"context does not fit", "vllm@0.16.0", big, nil, []string{"--max-model-len", "40960"}, logdiag.KVTooSmall, false},
		{"context does not fit 0.8.5", "vllm@0.8.5", big, nil, []string{"--max-model-len", "40960"}, logdiag.KVTooSmall, false},
		{"context does not fit V0", "vllm@0.8.5", big, []string{"VLLM_USE_V1=0"}, []string{"--max-model-len", "40960"}, logdiag.KVTooSmall, false},
		{"no room for the cache", "vllm@0.16.0", big, nil, []string{"--gpu-memory-utilization", "0.8"}, logdiag.NoKVMemory, false},
		{"sglang fraction too small", "sglang@0.5.6.post2", big, nil, []string{"--mem-fraction-static", "0.7"}, logdiag.SGLangMemFraction, false},
		{"busy GPU", "vllm@0.16.0", small, []string{EnvInventory + "=" + busy}, nil, logdiag.FreeMemBelowUtil, false},
		{"missing config", "vllm@0.16.0", noConfig, nil, nil, logdiag.MissingFiles, false},
		{"missing config sglang", "sglang@0.5.6.post2", noConfig, nil, nil, logdiag.MissingFiles, false},
		{"missing shard", "vllm@0.16.0", noShard, nil, nil, logdiag.MissingFiles, false},
		{"no such folder", "vllm@0.8.5", filepath.Join(t.TempDir(), "nothing"), nil, nil, logdiag.MissingFiles, false},
		{"unknown architecture", "vllm@0.16.0", foreign, nil, nil, logdiag.UnsupportedArch, false},
		{"unknown architecture sglang", "sglang@0.5.6.post2", foreign, nil, nil, logdiag.UnsupportedArch, false},
		{"context above the model's", "vllm@0.16.0", small, nil, []string{"--max-model-len", "100000"}, logdiag.BadFlag, false},
		{"context above the model's sglang", "sglang@0.5.6.post2", small, nil, []string{"--context-length", "100000"}, logdiag.BadFlag, false},
		{"unknown tool parser", "vllm@0.16.0", small, nil, []string{"--enable-auto-tool-choice", "--tool-call-parser", "hermes2"}, logdiag.BadFlag, false},
		{"driver too old for CUDA 12", "vllm@0.16.0", small, []string{EnvInventory + "=" + oldDriver}, nil, logdiag.DriverMismatch, false},
		{"driver too old sglang", "sglang@0.5.6.post2", small, []string{EnvInventory + "=" + oldDriver}, nil, logdiag.DriverMismatch, false},
		{"port in use", "vllm@0.16.0", small, nil, nil, logdiag.PortInUse, true},
		{"port in use sglang", "sglang@0.5.6.post2", small, nil, nil, logdiag.PortInUse, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			port := freePort(t)
			if tt.busyPort {
				ln, err := net.Listen("tcp", "0.0.0.0:"+strconv.Itoa(port))
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
			}
			kind, _, _ := strings.Cut(tt.spec, "@")
			p := startEngine(t, tt.spec, tt.env, engineArgs(kind, tt.model, port, tt.extra...)...)
			if code := p.wait(startWithin); code == 0 {
				t.Fatalf("exit status 0; output:\n%s", p.out)
			}
			d := engine.MustLookup(kind).Diagnose([]byte(p.out.String()))
			if d.Class != tt.want {
				t.Errorf("classified as %s, want %s; evidence %q; output:\n%s", d.Class, tt.want, d.Evidence, p.out)
			}
		})
	}
}

// A start that fits logs the footprint the classifier's parser reads, and
// the figures are those of roofline's memory model.
func TestStartupFootprint(t *testing.T) {
	qwen := writeModel(t, modeltest.Qwen3_8B)
	for _, spec := range []string{"vllm@0.16.0", "vllm@0.8.5", "sglang@0.5.6.post2"} {
		t.Run(spec, func(t *testing.T) {
			t.Parallel()
			kind, _, _ := strings.Cut(spec, "@")
			port := freePort(t)
			lenFlag := "--max-model-len"
			if kind == KindSGLang {
				lenFlag = "--context-length"
			}
			p := startEngine(t, spec, nil, engineArgs(kind, qwen, port, lenFlag, "32768")...)
			p.waitFor("ready", startWithin, func() bool { return healthCode(port) == 200 })
			// The lines were written before the engine listened, but they
			// reach the test through a pipe: wait until they have.
			var fp *logdiag.Footprint
			p.waitFor("the footprint lines", startWithin, func() bool {
				fp = engine.MustLookup(kind).Footprint([]byte(p.out.String()))
				return fp != nil && fp.WeightsGiB != nil && fp.KVTokens != nil && fp.MaxModelLen != nil && (kind != KindVLLM || fp.MaxConcurrency != nil)
			})
			if *fp.WeightsGiB < 15 || *fp.WeightsGiB > 16 || *fp.MaxModelLen != 32768 || *fp.KVTokens < 100000 {
				t.Errorf("footprint weights %.2f GiB, %d tokens, max len %d", *fp.WeightsGiB, *fp.KVTokens, *fp.MaxModelLen)
			}
			if kind == KindVLLM && (fp.MaxConcurrency == nil || *fp.MaxConcurrency < 3) {
				t.Errorf("concurrency %v", fp.MaxConcurrency)
			}
		})
	}
}

// Starts the engines refuse with their own messages, which the classifier
// does not need to name.
func TestOtherStartErrors(t *testing.T) {
	qwen := writeModel(t, modeltest.Qwen3_8B)
	two := writeInventory(t, 2, 0, "12.4")
	tests := []struct {
		name, spec string
		env, extra []string
		want       string
	}{
		{"tp does not divide the heads", "vllm@0.16.0", nil, []string{"-tp", "3"}, "Total number of attention heads (32) must be divisible by tensor parallel size (3)."},
		{"more ranks than GPUs", "vllm@0.16.0", []string{EnvInventory + "=" + two}, []string{"-tp", "4"}, "World size (4) is larger than the number of available GPUs (2)"},
		{"no visible GPU", "vllm@0.8.5", []string{"CUDA_VISIBLE_DEVICES="}, nil, "Failed to infer device type"},
		{"sglang more ranks than GPUs", "sglang@0.5.6.post2", []string{"CUDA_VISIBLE_DEVICES=0"}, []string{"--tp-size", "2"}, "invalid device ordinal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			kind, _, _ := strings.Cut(tt.spec, "@")
			p := startEngine(t, tt.spec, tt.env, engineArgs(kind, qwen, freePort(t), tt.extra...)...)
			if code := p.wait(startWithin); code != 1 || !strings.Contains(p.out.String(), tt.want) {
				t.Errorf("exit %d, want 1 and %q in:\n%s", code, tt.want, p.out)
			}
		})
	}
}
