package plan

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/model"
	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/vram"
	"github.com/roofline/roofline/internal/vram/fromodel"
)

// foreignUse returns, per GPU index, the memory held by processes that are
// not roofline's servers (and memory no listed process accounts for).
func (pl *planner) foreignUse() map[int]uint64 {
	out := map[int]uint64{}
	snap := pl.in.Snapshot
	if snap == nil {
		return out
	}
	ours := pl.ourPids()
	for _, g := range snap.GPUs {
		var ourUse uint64
		for _, p := range g.Processes {
			if ours[p.PID] {
				ourUse += p.UsedMemoryBytes
			}
		}
		if g.MemoryUsedBytes > ourUse {
			out[g.Index] = g.MemoryUsedBytes - ourUse
		}
	}
	return out
}

// modelSpec is fromodel.Spec, once per model: a fleet declared with
// for_each runs one model on hundreds of servers, and classifying its
// tensors was most of a plan's time. The spec is only read afterwards.
func (pl *planner) modelSpec(info *model.Info) (vram.ModelSpec, error) {
	if r, ok := pl.specs[info]; ok {
		return r.spec, r.err
	}
	spec, err := fromodel.Spec(info)
	if pl.specs == nil {
		pl.specs = map[*model.Info]specResult{}
	}
	pl.specs[info] = specResult{spec, err}
	return spec, err
}

type specResult struct {
	spec vram.ModelSpec
	err  error
}

// fit sizes one server with the engine's own memory rules and reports a
// model that does not fit, or a KV cache too small for the concurrency.
func (pl *planner) fit(s *config.Server, e *config.Engine, mr ModelResult, d *Desired, inst *engine.Installed) {
	snap := pl.in.Snapshot
	if len(s.GPUs) == 0 {
		return
	}
	dev, ok := snap.GPU(s.GPUs[0])
	if !ok {
		return // crossChecks reports the missing GPU
	}
	var spec vram.ModelSpec
	var err error
	if mr.Spec != nil {
		spec = *mr.Spec // from a host snapshot
	} else {
		spec, err = pl.modelSpec(mr.Info)
	}
	if err != nil && mr.Info != nil && mr.Info.Config == nil && mr.Info.HasErrors() {
		return // the folder's own error (config.json) says it already
	}
	if err != nil {
		pl.diag(hcl.DiagWarning, ptr(pl.in.Config.Models[s.Model].Range("path")), "Cannot size the model",
			"Model %q: %v. The VRAM check is skipped for server %q.", s.Model, err, s.Name)
		return
	}
	total := dev.CUDATotalBytes()
	var free []uint64
	foreign := pl.foreignUse()
	anyForeign := false
	for _, g := range s.GPUs {
		gd, ok := snap.GPU(g)
		if !ok {
			return
		}
		total = min(total, gd.CUDATotalBytes())
		f := gd.CUDATotalBytes()
		if foreign[g] < f {
			f -= foreign[g]
		} else {
			f = 0
		}
		if foreign[g] > 0 {
			anyForeign = true
		}
		free = append(free, f)
	}
	if !anyForeign {
		free = nil
	}
	in := vram.Input{
		HCL:                  true,
		Engine:               e.Kind,
		EngineVersion:        inst.Version,
		Model:                spec,
		GPUMemoryBytes:       total,
		NVMLTotalBytes:       dev.MemoryTotalBytes,
		GPUName:              dev.Name,
		ComputeCapability:    dev.ComputeCapability,
		FreeMemoryBytes:      free,
		TP:                   s.TensorParallel,
		PP:                   s.PipelineParallel,
		MaxModelLen:          s.MaxModelLen,
		GPUMemoryUtilization: s.GPUMemoryUtilization,
		KVCacheDtype:         s.KVCacheDtype,
		MaxNumSeqs:           s.MaxNumSeqs,
		MaxNumBatchedTokens:  s.MaxNumBatchedTokens,
		Concurrency:          s.Concurrency,
		EnforceEager:         s.EnforceEager,
	}
	res, err := vram.Estimate(in)
	if err != nil {
		pl.diag(hcl.DiagError, ptr(s.DeclRange), "Cannot size the server", "Server %q: %v.", s.Name, err)
		return
	}
	arch := ""
	if mr.Info != nil && mr.Info.Config != nil && len(mr.Info.Config.Architectures) > 0 {
		arch = mr.Info.Config.Architectures[0]
	}
	keyLen := res.MaxModelLen
	if s.MaxModelLenAuto {
		keyLen = -1 // "auto": the key is the setting, the picked value a measurement
	}
	key := state.CalibrationKey{Engine: e.Kind, EngineIdentity: d.Engine.Identity, GPU: dev.Name, GPUMemoryBytes: total,
		ModelFingerprint: d.Model.Fingerprint, TP: res.TP, PP: res.PP, DtypeBytes: spec.DtypeBytes,
		KVCacheDtype: res.KVCacheDtype, MaxModelLen: keyLen, MaxNumSeqs: res.MaxNumSeqs,
		MaxNumBatchedTokens: res.MaxNumBatchedTokens, BlockSize: res.BlockSize,
		Utilization: res.GPUMemoryUtilization, EnforceEager: s.EnforceEager}
	pl.fitIn[s.Name] = &sizing{in: in, key: key, arch: arch}
	var used vram.Input
	res, d.Calibration, used = calibrate(pl.in.Calibrations, in, res, key, arch)
	if s.MaxModelLenAuto {
		res = pl.autoMaxModelLen(res, used, d)
	}
	pl.fits[s.Name] = res
	d.ClaimBytes = res.RequestedBytes
	d.Predicted = &state.Footprint{
		WeightsGiB:     float64(res.WeightsBytes) / gib,
		KVCacheGiB:     float64(res.KVBudgetBytes) / gib,
		KVTokens:       res.KVTokens,
		MaxConcurrency: res.MaxConcurrency,
	}
	if !res.Fits {
		rng := s.Range("gpus")
		if s.Ranges.Has("max_model_len") && res.KVBudgetBytes > 0 {
			rng = s.Range("max_model_len")
		}
		pl.diag(hcl.DiagError, ptr(rng), "Model does not fit",
			"Server %q (%s on %d× %s, TP %d): %s%s", s.Name, s.Model, len(s.GPUs), dev.Name, s.TensorParallel,
			res.ReasonText(), suggestions(res))
		return
	}
	if s.Concurrency > 0 && res.MaxConcurrency < float64(s.Concurrency) {
		pl.diag(hcl.DiagError, ptr(s.Range("concurrency")), "KV cache too small for the concurrency",
			"Server %q: the KV cache holds %d tokens, %.2f requests of %d tokens, but concurrency = %d.%s",
			s.Name, res.KVTokens, res.MaxConcurrency, res.MaxModelLen, s.Concurrency, suggestions(res))
	}
}

func suggestions(res *vram.Result) string {
	if len(res.Suggestions) == 0 {
		return ""
	}
	parts := make([]string, len(res.Suggestions))
	for i, sg := range res.Suggestions {
		parts[i] = strings.TrimSuffix(sg, ".")
	}
	return " Try: " + strings.Join(parts, "; ") + "."
}

// FitTable renders the per-rank VRAM table of one server.
func FitTable(res *vram.Result) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "      %-5s %9s %10s %9s %9s %10s %11s %11s\n", "rank", "weights", "activation", "overhead", "graphs", "KV budget", "KV tokens", "concurrency")
	for _, r := range res.Ranks {
		fmt.Fprintf(&sb, "      %-5d %9s %10s %9s %9s %10s %11d %11.2f\n", r.Rank,
			gibs(r.WeightsBytes), gibs(r.ActivationBytes), gibs(r.NonTorchBytes), gibs(r.CUDAGraphBytes), gibsSigned(r.KVBudgetBytes), r.KVTokens, r.Concurrency)
	}
	return sb.String()
}

func gibs(b uint64) string { return fmt.Sprintf("%.2f GiB", float64(b)/gib) }

func gibsSigned(b int64) string { return fmt.Sprintf("%.2f GiB", float64(b)/gib) }

// ModelSpec is the memory model's view of a model: from the snapshot, or
// read from the folder's facts.
func ModelSpec(mr ModelResult) (vram.ModelSpec, error) {
	if mr.Spec != nil {
		return *mr.Spec, nil
	}
	return fromodel.Spec(mr.Info)
}

// autoMaxModelLen predicts the context vLLM's max_model_len = "auto" picks:
// the longest one request fits in with the KV budget it measures, up to the
// model's maximum (PR 29431: a binary search over its own pool). A measured
// start of the same key gives the value it picked.
func (pl *planner) autoMaxModelLen(res *vram.Result, used vram.Input, d *Desired) *vram.Result {
	pick := res.MaxModelLen
	if res.MaxModelLenFit > 0 && res.MaxModelLenFit < int64(pick) {
		pick = int(res.MaxModelLenFit)
	}
	if c := d.Calibration; c != nil && c.Status == CalibMeasured && c.PickedMaxModelLen > 0 {
		pick = c.PickedMaxModelLen
	}
	d.AutoMaxModelLen = pick
	if pick == res.MaxModelLen {
		return res
	}
	used.MaxModelLen = pick
	r, err := vram.Estimate(used)
	if err != nil {
		return res
	}
	if d.Calibration != nil && d.Calibration.Status == CalibMeasured {
		// The pool is the engine's: keep its logged token count.
		r.KVTokens = res.KVTokens
		for i := range r.Ranks {
			r.Ranks[i].KVTokens = res.KVTokens
		}
		r.MaxConcurrency = float64(r.KVTokens) / float64(pick)
	}
	return r
}
