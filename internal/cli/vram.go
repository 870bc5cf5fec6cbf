package cli

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/engine/kinds"
	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/model"
	"github.com/roofline/roofline/internal/suggest"
	"github.com/roofline/roofline/internal/views"
	"github.com/roofline/roofline/internal/vram"
	"github.com/roofline/roofline/internal/vram/fromodel"
)

func init() {
	register(&Command{
		Name:     "vram",
		Synopsis: "Compute whether a model fits, as the engine will",
		Usage:    views.UsageVRAM,
		Run:      runVRAM,
	})
}

// vramArgs are the flags that name the model and the GPUs; the engine's
// settings go straight into the vram.Input.
type vramArgs struct {
	modelDir, gpuName, inventory, gpus           string
	gpuGiB                                       float64
	gpuGiBSet, inventorySet, gpuNameSet, gpusSet bool
}

func runVRAM(m *Meta, args []string) int {
	var a vramArgs
	in := vram.Input{}
	fs := newFlags("vram")
	fs.StringVar(&a.modelDir, "model", "", "")
	fs.IntVar(&in.TP, "tp", 1, "")
	fs.IntVar(&in.PP, "pp", 1, "")
	fs.IntVar(&in.MaxModelLen, "ctx", 0, "")
	fs.Float64Var(&a.gpuGiB, "gpu-gib", 0, "")
	fs.StringVar(&a.gpuName, "gpu", "", "")
	fs.StringVar(&a.inventory, "inventory", "", "")
	fs.StringVar(&a.gpus, "gpus", "", "")
	fs.StringVar(&in.Engine, "engine", engine.Default().Name, "")
	fs.StringVar(&in.EngineVersion, "engine-version", "", "")
	fs.Float64Var(&in.GPUMemoryUtilization, "util", 0, "")
	fs.StringVar(&in.KVCacheDtype, "kv-cache-dtype", "auto", "")
	fs.IntVar(&in.BlockSize, "block-size", 0, "")
	fs.IntVar(&in.MaxNumSeqs, "max-num-seqs", 0, "")
	fs.IntVar(&in.MaxNumBatchedTokens, "max-num-batched-tokens", 0, "")
	fs.IntVar(&in.Concurrency, "concurrency", 1, "")
	fs.BoolVar(&in.EnforceEager, "enforce-eager", false, "")
	jsonOut := fs.Bool("json", false, "")
	if !parseFlags(m, fs, args) {
		return ExitError
	}
	if fs.NArg() > 0 {
		return usageError(m, "vram", "unexpected argument "+fs.Arg(0))
	}
	a.gpuGiBSet, a.inventorySet, a.gpuNameSet = fs.Changed("gpu-gib"), fs.Changed("inventory"), fs.Changed("gpu")
	a.gpusSet = fs.Changed("gpus")

	switch {
	case a.modelDir == "":
		return usageError(m, "vram", "-model DIR is required: the folder with config.json and the .safetensors files")
	case in.TP < 1 || in.PP < 1 || in.TP*in.PP > 1024:
		return usageError(m, "vram", fmt.Sprintf("-tp %d -pp %d: both must be at least 1", in.TP, in.PP))
	case fs.Changed("ctx") && in.MaxModelLen < 1:
		return usageError(m, "vram", fmt.Sprintf("-ctx %d: give the context length in tokens, at least 1", in.MaxModelLen))
	case in.Concurrency < 1:
		return usageError(m, "vram", fmt.Sprintf("-concurrency %d: give at least 1", in.Concurrency))
	case countTrue(a.gpuGiBSet, a.gpuNameSet, a.inventorySet) > 1:
		return usageError(m, "vram", "give one of -gpu-gib, -gpu and -inventory")
	case a.gpusSet && (a.gpuGiBSet || a.gpuNameSet):
		return usageError(m, "vram", "-gpus picks GPUs of a snapshot or of this host; with -gpu-gib or -gpu every GPU is alike, so leave it out")
	case a.gpuGiBSet && (a.gpuGiB <= 0 || a.gpuGiB > 1<<20 || math.IsNaN(a.gpuGiB)):
		return usageError(m, "vram", fmt.Sprintf("-gpu-gib %v: give the per-GPU memory in GiB, e.g. 79.18 for an H100", a.gpuGiB))
	}
	if e := strings.ToLower(in.Engine); !kinds.Known(e) {
		return usageError(m, "vram", fmt.Sprintf("-engine %s: use %s.%s", in.Engine, kinds.Or(false), suggest.DidYouMean(e, kinds.Names())))
	}
	in.Engine = strings.ToLower(in.Engine)

	gpus, err := vramResolveGPUs(&a, in.TP, in.PP)
	if err != nil {
		m.view().Errorf("%v", err)
		return ExitError
	}

	info, err := model.Inspect(a.modelDir)
	if err != nil {
		m.view().Errorf("%v", err)
		return ExitError
	}
	problems := info.ErrorSummaries()
	spec, err := fromodel.Spec(info)
	if err != nil {
		views.NewVRAM(views.ViewHuman, m.view()).Unusable(a.modelDir, err, problems)
		return ExitError
	}

	in.Model, in.GPUMemoryBytes, in.NVMLTotalBytes, in.GPUName = spec, gpus.Total, gpus.NVML, gpus.Name
	in.ComputeCapability, in.FreeMemoryBytes = gpus.CC, gpus.Free
	res, err := vram.Estimate(in)
	if err != nil {
		m.view().Errorf("%v", err)
		return ExitError
	}
	code := ExitOK
	if !res.Fits {
		code = ExitError
	}
	if err := views.NewVRAM(views.TypeOf(*jsonOut), m.view()).Estimate(views.VRAMEstimate{ModelDir: a.modelDir, Model: &spec, GPUs: &gpus, Problems: problems, Result: res}); err != nil {
		m.view().Errorf("%v", err)
		return ExitError
	}
	return code
}

func countTrue(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// vramResolveGPUs turns -gpu-gib, -gpu or a snapshot into the GPU facts.
func vramResolveGPUs(a *vramArgs, tp, pp int) (views.VRAMGPUs, error) {
	switch {
	case a.gpuGiBSet:
		return views.VRAMGPUsOfGiB(a.gpuGiB), nil
	case a.gpuNameSet:
		p, err := gpu.PresetNamed(a.gpuName)
		return views.VRAMGPUsOfPreset(p, a.gpuName), err
	}
	snap, err := inventoryFor(a.inventory).Snapshot(context.Background())
	if err != nil && a.inventory == "" {
		err = fmt.Errorf("%v\nWithout GPUs on this host, give -gpu NAME, -gpu-gib F or -inventory FILE", err)
	}
	if err != nil {
		return views.VRAMGPUs{}, err
	}
	picked, err := snap.Pick(a.gpus, a.gpusSet, tp, pp)
	return views.VRAMGPUsOf(picked, snap.Source), err
}
