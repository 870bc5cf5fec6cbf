package gpu

import (
	"fmt"
	"math"
	"strings"

	"github.com/roofline/roofline/internal/suggest"
)

// preset is a common GPU as NVML and the CUDA runtime report it. cudaGiB is
// the total cudaMemGetInfo reported in public engine and PyTorch logs (to
// two decimals, as they print it); the difference to nvmlMiB is the memory
// the driver reserves, which varies a little between driver versions.
// docs/gpu.md lists the source of every figure.
type preset struct {
	name    string   // canonical name for -gpu NAME
	aliases []string // more accepted spellings (normalised by presetKey)
	nvml    string   // the name NVML reports
	nvmlMiB uint64   // NVML memory total
	cudaGiB float64  // CUDA runtime total, as logged
	cc      string   // compute capability
	mig     string   // MIG mode of a fresh GPU
}

var presets = []preset{
	{"H100", []string{"H100-SXM", "H100-SXM5", "H100-80GB"}, "NVIDIA H100 80GB HBM3", 81559, 79.18, "9.0", MIGDisabled},
	{"H100-PCIE", nil, "NVIDIA H100 PCIe", 81559, 79.18, "9.0", MIGDisabled},
	{"H100-NVL", nil, "NVIDIA H100 NVL", 95830, 93.10, "9.0", MIGDisabled},
	{"H200", []string{"H200-SXM", "H200-141GB", "H200 141GB HBM3e"}, "NVIDIA H200", 143771, 139.80, "9.0", MIGDisabled},
	{"B200", nil, "NVIDIA B200", 183359, 178.35, "10.0", MIGDisabled},
	{"A100-80GB", []string{"A100-SXM4-80GB", "A100-SXM-80GB"}, "NVIDIA A100-SXM4-80GB", 81920, 79.15, "8.0", MIGDisabled},
	{"A100-40GB", []string{"A100-SXM4-40GB", "A100-SXM-40GB"}, "NVIDIA A100-SXM4-40GB", 40960, 39.50, "8.0", MIGDisabled},
	{"L40S", nil, "NVIDIA L40S", 46068, 44.39, "8.9", MIGUnsupported},
	{"L4", nil, "NVIDIA L4", 23034, 22.03, "8.9", MIGUnsupported},
	{"A10", nil, "NVIDIA A10", 23028, 22.06, "8.6", MIGUnsupported},
	{"RTX4090", []string{"RTX-4090", "GeForce-RTX-4090", "4090"}, "NVIDIA GeForce RTX 4090", 24564, 23.52, "8.9", MIGUnsupported},
	{"RTX3090", []string{"RTX-3090", "GeForce-RTX-3090", "3090"}, "NVIDIA GeForce RTX 3090", 24576, 23.58, "8.6", MIGUnsupported},
}

// Preset returns an idle GPU of a common kind by name ("H100", "a100-80gb",
// "NVIDIA L40S", ...): its MemoryTotalBytes is NVML's total and
// CUDATotalBytes() the total the CUDA runtime reports, which is what the
// engines size from. Matching ignores case, spaces, dashes and underscores
// and a leading "NVIDIA".
func Preset(name string) (GPU, bool) {
	key := presetKey(name)
	if key == "" {
		return GPU{}, false
	}
	for _, p := range presets {
		if key == presetKey(p.name) || key == presetKey(p.nvml) {
			return p.gpu(), true
		}
		for _, a := range p.aliases {
			if key == presetKey(a) {
				return p.gpu(), true
			}
		}
	}
	return GPU{}, false
}

// PresetNamed is Preset for -gpu NAME: an unknown name is an error that
// lists the presets.
func PresetNamed(name string) (GPU, error) {
	if p, ok := Preset(name); ok {
		return p, nil
	}
	return GPU{}, fmt.Errorf("unknown GPU %q.%s Known: %s; or give -gpu-gib with the total the CUDA runtime reports",
		name, suggest.DidYouMean(name, PresetNames()), strings.Join(PresetNames(), ", "))
}

// PresetNames lists the canonical preset names, for usage texts and
// "did you mean" hints.
func PresetNames() []string {
	out := make([]string, len(presets))
	for i, p := range presets {
		out[i] = p.name
	}
	return out
}

func (p preset) gpu() GPU {
	const mib = 1 << 20
	cudaMiB := uint64(math.Round(p.cudaGiB * 1024))
	return GPU{
		Name:                p.nvml,
		MemoryTotalBytes:    p.nvmlMiB * mib,
		MemoryReservedBytes: (p.nvmlMiB - cudaMiB) * mib,
		MemoryFreeBytes:     cudaMiB * mib,
		ComputeCapability:   p.cc,
		MIGMode:             p.mig,
		Processes:           []Process{},
	}
}

func presetKey(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.TrimPrefix(s, "nvidia")
	return strings.Map(func(r rune) rune {
		switch r {
		case ' ', '-', '_':
			return -1
		}
		return r
	}, s)
}
