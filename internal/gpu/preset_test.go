package gpu_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/gpu"
)

func TestPreset(t *testing.T) {
	for _, tc := range []struct {
		in, name, cudaGiB string // cudaGiB: the total CUDA reports, as logged (docs/gpu.md)
		nvmlMiB           uint64
	}{
		{"H100", "NVIDIA H100 80GB HBM3", "79.18", 81559},
		{"h100-sxm", "NVIDIA H100 80GB HBM3", "79.18", 81559},
		{"NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3", "79.18", 81559},
		{"H100-PCIe", "NVIDIA H100 PCIe", "79.18", 81559},
		{"h100_nvl", "NVIDIA H100 NVL", "93.10", 95830},
		{"H200", "NVIDIA H200", "139.80", 143771},
		{"NVIDIA H200 141GB HBM3e", "NVIDIA H200", "139.80", 143771},
		{"B200", "NVIDIA B200", "178.35", 183359},
		{"A100-80GB", "NVIDIA A100-SXM4-80GB", "79.15", 81920},
		{"a100 40gb", "NVIDIA A100-SXM4-40GB", "39.50", 40960},
		{"L40S", "NVIDIA L40S", "44.39", 46068},
		{" l4 ", "NVIDIA L4", "22.03", 23034},
		{"A10", "NVIDIA A10", "22.06", 23028},
		{"RTX4090", "NVIDIA GeForce RTX 4090", "23.52", 24564},
		{"GeForce RTX 4090", "NVIDIA GeForce RTX 4090", "23.52", 24564},
		{"rtx-3090", "NVIDIA GeForce RTX 3090", "23.58", 24576},
	} {
		g, ok := gpu.Preset(tc.in)
		if !ok {
			t.Errorf("Preset(%q) not found", tc.in)
			continue
		}
		cuda := fmt.Sprintf("%.2f", float64(g.CUDATotalBytes())/(1<<30))
		if g.Name != tc.name || g.MemoryTotalBytes != tc.nvmlMiB<<20 || cuda != tc.cudaGiB {
			t.Errorf("Preset(%q) = %q, NVML %d MiB, CUDA %s GiB; want %q, %d, %s",
				tc.in, g.Name, g.MemoryTotalBytes>>20, cuda, tc.name, tc.nvmlMiB, tc.cudaGiB)
		}
		// An idle GPU: everything CUDA sees is free; the reserved part is what
		// drivers are seen to hold back (a few hundred MiB, under 1 GiB).
		reservedMiB := g.MemoryReservedBytes >> 20
		if g.MemoryFreeBytes != g.CUDATotalBytes() || g.MemoryUsedBytes != 0 || reservedMiB < 200 || reservedMiB > 1000 {
			t.Errorf("Preset(%q): free %d, used %d, reserved %d MiB", tc.in, g.MemoryFreeBytes, g.MemoryUsedBytes, reservedMiB)
		}
		if g.ComputeCapability == "" || g.MIGMode == "" {
			t.Errorf("Preset(%q) lacks compute capability or MIG mode: %+v", tc.in, g)
		}
	}
	for _, bad := range []string{"", "A100", "H300", "nvidia", "4080"} {
		if g, ok := gpu.Preset(bad); ok {
			t.Errorf("Preset(%q) = %q, want none", bad, g.Name)
		}
	}
	names := gpu.PresetNames()
	if len(names) < 10 {
		t.Fatalf("PresetNames = %v", names)
	}
	for _, n := range names {
		if _, ok := gpu.Preset(n); !ok {
			t.Errorf("listed preset %q does not resolve", n)
		}
	}
}

func TestPresetNamed(t *testing.T) {
	if g, err := gpu.PresetNamed("h100"); err != nil || g.Name != "NVIDIA H100 80GB HBM3" {
		t.Errorf("PresetNamed(h100) = %q, %v", g.Name, err)
	}
	_, err := gpu.PresetNamed("H10O")
	if err == nil || !strings.HasPrefix(err.Error(), `unknown GPU "H10O". Did you mean "H100"? Known: H100, H100-PCIE,`) ||
		!strings.HasSuffix(err.Error(), "; or give -gpu-gib with the total the CUDA runtime reports") {
		t.Errorf("PresetNamed(H10O): %v", err)
	}
}
