package views

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/jsonplan"
	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/vram"
)

// VRAMGPUs is what roofline vram knows about the GPUs it sizes for.
type VRAMGPUs struct {
	Name    string   `json:"name,omitempty"`
	Indexes []int    `json:"indexes,omitempty"`
	Free    []uint64 `json:"free_bytes,omitempty"`
	Total   uint64   `json:"-"` // CUDA's total of the smallest GPU
	NVML    uint64   `json:"-"` // NVML's total of that GPU
	CC      string   `json:"-"` // compute capability
	Source  string   `json:"-"` // where the figures come from, in words
}

// VRAMGPUsOfGiB is gib GiB per GPU (-gpu-gib), nothing else known.
func VRAMGPUsOfGiB(gib float64) VRAMGPUs {
	return VRAMGPUs{Total: uint64(gib * vram.GiB), Source: fmt.Sprintf("%.2f GiB per GPU (-gpu-gib)", gib)}
}

// VRAMGPUsOfPreset is GPUs like p, the preset -gpu name names.
func VRAMGPUsOfPreset(p gpu.GPU, name string) VRAMGPUs {
	return VRAMGPUs{Name: p.Name, Total: p.CUDATotalBytes(), NVML: p.MemoryTotalBytes, CC: p.ComputeCapability, Source: "preset " + name}
}

// VRAMGPUsOf is what an engine on the picked GPUs of a snapshot sees: the
// smallest one's totals (every rank claims the same share), the first
// one's name and compute capability, and each one's free memory.
func VRAMGPUsOf(picked []*gpu.GPU, source string) VRAMGPUs {
	g := VRAMGPUs{Source: source}
	for i, d := range picked {
		t := d.CUDATotalBytes()
		if i == 0 || t < g.Total {
			g.Total, g.NVML = t, d.MemoryTotalBytes
		}
		if i == 0 {
			g.Name, g.CC = d.Name, d.ComputeCapability
		}
		g.Indexes = append(g.Indexes, d.Index)
		g.Free = append(g.Free, d.MemoryFreeBytes)
	}
	return g
}

// VRAMEstimate is what roofline vram prints: the estimate and what it was
// made for.
type VRAMEstimate struct {
	ModelDir string
	Model    *vram.ModelSpec
	GPUs     *VRAMGPUs
	// Problems are the model folder's errors; the estimate counts the
	// weights present.
	Problems []string
	Result   *vram.Result
}

// VRAM is roofline vram's view.
type VRAM interface {
	Estimate(e VRAMEstimate) error
	// Unusable says why the model folder at dir cannot be sized, with the
	// folder's problems (on stderr, for either type).
	Unusable(dir string, err error, problems []string)
}

// NewVRAM returns the vram view of type vt.
func NewVRAM(vt ViewType, v *View) VRAM {
	if vt == ViewJSON {
		return VRAMJSON{v}
	}
	return VRAMHuman{v}
}

// VRAMDocument is vram -json: the plan document's vram object with what
// it was computed for.
type VRAMDocument struct {
	Model    string   `json:"model"`
	GPU      VRAMGPUs `json:"gpu"`
	Problems []string `json:"model_problems,omitempty"`
	// Prediction is always "uncalibrated" here: vram has no engine install
	// whose measured starts it could use (plan does: docs/vram.md).
	Prediction string `json:"prediction"`
	// The memory model's verdict, as in the plan document's vram.
	*jsonplan.VRAM
}

// VRAMJSON prints one JSON object.
type VRAMJSON struct{ view *View }

func (v VRAMJSON) Unusable(dir string, err error, problems []string) {
	VRAMHuman(v).Unusable(dir, err, problems)
}

func (v VRAMJSON) Estimate(e VRAMEstimate) error {
	b, err := json.MarshalIndent(VRAMDocument{Model: e.Model.Name, GPU: *e.GPUs, Problems: e.Problems, Prediction: "uncalibrated", VRAM: plan.VRAMDocument(e.Result)}, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintln(v.view.Out, string(b))
	return nil
}

// VRAMHuman warns about the model folder's problems on stderr, then prints
// the settings, a table per rank, the KV facts and the verdict.
type VRAMHuman struct{ view *View }

func (v VRAMHuman) Unusable(dir string, err error, problems []string) {
	v.view.Errorf("%s: %v", dir, err)
	for _, p := range problems {
		fmt.Fprintf(v.view.Err, "  model folder: %s\n", p)
	}
}

func (v VRAMHuman) Estimate(e VRAMEstimate) error {
	for _, p := range e.Problems {
		fmt.Fprintf(v.view.Err, "Warning: model folder: %s (run \"roofline model verify %s\"; the estimate counts the weights present).\n", p, e.ModelDir)
	}
	writeVRAM(v.view.Out, e.Model, e.GPUs, e.Result)
	return nil
}

// writeVRAM prints the human view: the settings, a table per rank, the
// KV facts and the verdict.
func writeVRAM(w io.Writer, spec *vram.ModelSpec, g *VRAMGPUs, r *vram.Result) {
	gib := func(b uint64) string { return fmt.Sprintf("%.2f", float64(b)/vram.GiB) }
	kinds := map[vram.AttentionKind]int{}
	for _, l := range spec.Layers {
		kinds[l.Kind]++
	}
	var kl []string
	for _, k := range []vram.AttentionKind{vram.AttnFull, vram.AttnSliding, vram.AttnMLA, vram.AttnLinear} {
		if kinds[k] > 0 {
			kl = append(kl, fmt.Sprintf("%d %s", kinds[k], k))
		}
	}
	var total uint64
	for _, wp := range spec.Weights {
		if wp.Place != vram.PlaceLastIfSplit {
			total += wp.Bytes
		}
	}
	name := g.Name
	if name == "" {
		name = "GPU"
	}
	fmt.Fprintf(w, "Model   %s: %d layers (%s), %s GiB of weights\n", spec.Name, len(spec.Layers), strings.Join(kl, ", "), gib(total))
	fmt.Fprintf(w, "Engine  %s %s, TP %d x PP %d on %s, %s GiB each (%s)\n", r.Mode, r.EngineVersion, r.TP, r.PP, name, gib(r.GPUMemoryBytes), g.Source)
	fmt.Fprintln(w, "        prediction: uncalibrated (roofline's formula; plan uses the engine's own figures once a server of it has started)")
	words := engine.LookupOrDefault(r.Engine).VRAM()
	fmt.Fprintf(w, "        max_model_len %d, %s %.3g, kv-cache-dtype %s, block %d", r.MaxModelLen, words.Utilization, r.GPUMemoryUtilization, r.KVCacheDtype, r.BlockSize)
	if r.MaxNumSeqs > 0 {
		fmt.Fprintf(w, ", max_num_seqs %d", r.MaxNumSeqs)
	}
	fmt.Fprintf(w, ", %s %d\n\n", words.Batch, r.MaxNumBatchedTokens)

	fmt.Fprintf(w, "%-4s  %-3s  %8s  %10s  %8s  %6s  %9s  %10s  %11s\n",
		"RANK", "GPU", "WEIGHTS", "ACTIVATION", "OVERHEAD", "GRAPHS", "KV BUDGET", "KV TOKENS", "CONCURRENCY")
	graphsInHeadroom := false
	for _, k := range r.Ranks {
		idx := "-"
		if k.Rank < len(g.Indexes) {
			idx = strconv.Itoa(g.Indexes[k.Rank])
		}
		graphs := gib(k.CUDAGraphBytes)
		if !k.CUDAGraphDeducted {
			graphs += "*"
			graphsInHeadroom = true
		}
		fmt.Fprintf(w, "%4d  %3s  %8s  %10s  %8s  %6s  %9.2f  %10d  %10.2fx\n",
			k.Rank, idx, gib(k.WeightsBytes), gib(k.ActivationBytes), gib(k.NonTorchBytes), graphs,
			float64(k.KVBudgetBytes)/vram.GiB, k.KVTokens, k.Concurrency)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Memory in GiB (2^30 bytes), per GPU. OVERHEAD is non-torch memory (NCCL, cuBLAS; for SGLang the CUDA context).")
	if graphsInHeadroom {
		fmt.Fprintln(w, words.GraphsNote)
	}
	fmt.Fprintf(w, "KV cache: %d bytes per token per GPU; one request of %d tokens needs %s GiB.\n",
		r.KVBytesPerToken, r.MaxModelLen, gib(r.NeededBytes))
	fitLen := "none"
	if r.MaxModelLenFit > 0 {
		fitLen = strconv.FormatInt(r.MaxModelLenFit, 10) + " tokens"
	}
	fitTP := "none up to 8"
	if r.MinTPFit > 0 {
		fitTP = strconv.Itoa(r.MinTPFit)
	}
	fmt.Fprintf(w, "Longest context that fits: %s. Smallest TP that fits: %s.\n\n", fitLen, fitTP)

	if r.Fits {
		fmt.Fprintf(w, "Fits: %d KV tokens, %.2f requests of %d tokens at once", r.KVTokens, r.MaxConcurrency, r.MaxModelLen)
		if r.Concurrency > 1 {
			fmt.Fprintf(w, " (%d required)", r.Concurrency)
		}
		fmt.Fprintln(w, ".")
	} else {
		fmt.Fprintln(w, "Does not fit:")
		for _, s := range r.Reasons {
			fmt.Fprintf(w, "  - %s\n", s)
		}
		if len(r.Suggestions) > 0 {
			fmt.Fprintln(w, "To make it fit:")
			for _, s := range r.Suggestions {
				fmt.Fprintf(w, "  - %s\n", s)
			}
		}
	}
	if len(r.Warnings) > 0 {
		fmt.Fprintln(w, "Warnings:")
		for _, s := range r.Warnings {
			fmt.Fprintf(w, "  - %s\n", s)
		}
	}
}
