package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/gpu/gputest"
)

const gpuFixtures = "../gpu/testdata/"

// withNVML makes inventoryFor("") return inv for the test.
func withNVML(t *testing.T, inv gpu.Inventory) {
	t.Helper()
	old := newNVMLInventory
	newNVMLInventory = func() gpu.Inventory { return inv }
	t.Cleanup(func() { newNVMLInventory = old })
}

// busyHost has what the fixtures lack: a foreign process with a long command
// line, one that exited, MIG, an old driver without v2 memory, and a warning.
func busyHost() *gpu.Snapshot {
	s := gputest.A100s80(4,
		gputest.WithHost("a100-busy"),
		gputest.WithDriver("470.256.02", "11.4"),
		gputest.WithProcess(0, 3120, 38*gputest.GiB, "/opt/conda/envs/train/bin/python", "-m", "torch.distributed.run",
			"--nproc-per-node=1", "/home/bob/experiments/finetune_llama_with_a_really_long_script_name.py", "--config", "c.yaml"),
		gputest.WithProcess(0, 3121, 512*gputest.MiB),
		gputest.WithProcess(2, 880, 70*gputest.GiB, "vllm\x1b[31m", "serve"))
	s.GPUs[1].MIGMode = gpu.MIGEnabled
	g := &s.GPUs[3] // as an old driver reports it: reserved counted as used
	g.MemoryUsedBytes += g.MemoryReservedBytes
	g.MemoryReservedBytes = 0
	s.Warnings = []string{"GPU 3: compute processes could not be listed, so foreign processes on it are unknown: Insufficient Permissions"}
	return s
}

func TestGPUHumanTable(t *testing.T) {
	for _, name := range []string{"h100x8", "h200x1", "a100-40gbx2", "l4x1"} {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runMain(t, "gpu", "-inventory", gpuFixtures+name+".json")
			if code != ExitOK || errOut != "" {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			assertGolden(t, filepath.Join("testdata", "gpu", name+".golden"), out)
		})
	}
	t.Run("busy", func(t *testing.T) {
		withNVML(t, gputest.Static(busyHost()))
		code, out, errOut := runMain(t, "gpu")
		if code != ExitOK {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		if errOut != "Warning: GPU 3: compute processes could not be listed, so foreign processes on it are unknown: Insufficient Permissions\n" {
			t.Errorf("stderr = %q", errOut)
		}
		if strings.Contains(out, "\x1b") {
			t.Error("a control character from a process's command line reached the terminal")
		}
		assertGolden(t, filepath.Join("testdata", "gpu", "busy.golden"), out)
	})
	t.Run("no GPUs", func(t *testing.T) {
		s := gputest.H100s(0)
		withNVML(t, gputest.Static(s))
		code, out, _ := runMain(t, "gpu")
		if code != ExitOK || !strings.HasSuffix(out, "No NVIDIA GPUs found.\n") {
			t.Errorf("exit %d, out %q", code, out)
		}
	})
}

// TestGPUJSONRoundTrip: -json writes exactly what -inventory reads back.
func TestGPUJSONRoundTrip(t *testing.T) {
	withNVML(t, gputest.Static(busyHost()))
	code, first, _ := runMain(t, "gpu", "--json")
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	var want bytes.Buffer
	if err := gpu.WriteSnapshot(&want, busyHost()); err != nil {
		t.Fatal(err)
	}
	if first != want.String() {
		t.Errorf("-json is not the snapshot format:\n%s", first)
	}
	path := writeFile(t, filepath.Join(t.TempDir(), "inv.json"), first)
	code, second, _ := runMain(t, "gpu", "-json", "-inventory="+path)
	if code != ExitOK {
		t.Fatalf("exit %d reading our own -json output", code)
	}
	// Only the source changes: the figures went through the file unchanged.
	second = strings.Replace(second, `"source": "file:`+path+`"`, `"source": "nvml"`, 1)
	if second != first {
		t.Errorf("round trip changed the snapshot:\n%s", second)
	}
}

func TestGPUErrors(t *testing.T) {
	unavailable := fmt.Errorf("%w: no NVIDIA driver on this machine (libnvidia-ml.so.1 cannot be loaded). Use -inventory FILE with a snapshot written by `roofline gpu -json` on the GPU host.", gpu.ErrNVMLUnavailable)
	bad := filepath.Join(t.TempDir(), "bad.json")
	writeFile(t, bad, `{"format_version": 9}`)
	for _, tc := range []struct {
		name string
		nvml gpu.Inventory
		args []string
		want []string
	}{
		{"no NVML", gputest.Failing(unavailable), []string{"gpu"},
			[]string{"Error: NVML is not available: no NVIDIA driver on this machine", "Use -inventory FILE"}},
		{"no NVML, json", gputest.Failing(unavailable), []string{"gpu", "-json"}, []string{"Error: NVML is not available"}},
		{"missing file", nil, []string{"gpu", "-inventory", "nope.json"}, []string{"nope.json does not exist", "roofline gpu -json > nope.json"}},
		{"newer file", nil, []string{"gpu", "-inventory", bad}, []string{bad, "format_version 9 is newer"}},
		{"argument", nil, []string{"gpu", "0"}, []string{"unexpected argument 0", `roofline gpu -h`}},
		{"flag typo", nil, []string{"gpu", "-inventroy", "x"}, []string{"unknown flag", `Did you mean "-inventory"?`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.nvml == nil {
				tc.nvml = gputest.Failing(errors.New("NVML must not be used here"))
			}
			withNVML(t, tc.nvml)
			code, out, errOut := runMain(t, tc.args...)
			if code != ExitError || out != "" {
				t.Errorf("exit %d, stdout %q", code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q lacks %q", errOut, w)
				}
			}
		})
	}
}

// TestGPUWithoutDriver uses the real NVML loader: on a machine without the
// driver `roofline gpu` must fail with the clear message, not crash.
func TestGPUWithoutDriver(t *testing.T) {
	if _, err := gpu.NewNVML().Snapshot(context.Background()); err == nil {
		t.Skip("an NVIDIA driver is present")
	}
	code, out, errOut := runMain(t, "gpu")
	if code != ExitError || out != "" || !strings.Contains(errOut, "NVML is not available") || !strings.Contains(errOut, "-inventory FILE") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestInventoryFor(t *testing.T) {
	withNVML(t, gputest.Static(gputest.L4s(3)))
	s, err := inventoryFor("").Snapshot(context.Background())
	if err != nil || len(s.GPUs) != 3 {
		t.Errorf("NVML inventory: %v %v", s, err)
	}
	s, err = inventoryFor(gpuFixtures + "h100x8.json").Snapshot(context.Background())
	if err != nil || len(s.GPUs) != 8 || !strings.HasPrefix(s.Source, "file:") {
		t.Errorf("file inventory: %v %v", s, err)
	}
}

func TestGPUHelp(t *testing.T) {
	code, out, _ := runMain(t, "gpu", "-h")
	if code != ExitOK || !strings.HasPrefix(out, "Usage: roofline [global options] gpu [-json] [-inventory FILE]") {
		t.Errorf("exit %d, help %q", code, out)
	}
}
