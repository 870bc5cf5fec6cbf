// Package vram predicts what vLLM and SGLang will compute at start-up for a
// model on a set of GPUs: per rank the weights, the profiled activation peak,
// the non-torch overhead, the CUDA-graph reserve, the KV budget, the KV token
// count and the concurrency at max_model_len, and whether the engine starts
// at all. It follows the engines' own formulas (docs/vram.md; the sources are
// in ../shared/reference/vram.md). Pure functions: no I/O, nothing internal.
package vram

import (
	"fmt"
	"math"
	"strings"

	"github.com/roofline/roofline/internal/engine/kinds"
)

// ReasonText is Reasons as one text, each reason its own sentence.
func (r *Result) ReasonText() string {
	out := make([]string, 0, len(r.Reasons))
	for _, s := range r.Reasons {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		s = strings.ToUpper(s[:1]) + s[1:]
		if !strings.HasSuffix(s, ".") {
			s += "."
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// Result is the prediction for one Input.
type Result struct {
	Engine        string `json:"engine"`
	EngineVersion string `json:"engine_version"`
	// Mode is "vLLM V1", "vLLM V0" or "SGLang".
	Mode string `json:"mode"`
	// Fits is true when the engine starts and the KV cache holds Concurrency
	// requests of MaxModelLen tokens.
	Fits bool `json:"fits"`
	// Reasons say why not, in the engine's terms.
	Reasons []string `json:"reasons"`
	// Warnings are risks that do not stop the start.
	Warnings []string `json:"warnings"`
	// Suggestions are changes that make it fit.
	Suggestions []string `json:"suggestions"`
	Ranks       []Rank   `json:"ranks"`

	// KVTokens is the KV capacity in tokens, the minimum over ranks (vLLM:
	// "GPU KV cache size: N tokens"; SGLang: max_total_num_tokens).
	KVTokens int64 `json:"kv_tokens"`
	// KVBudgetBytes is the per-rank KV budget, the minimum over ranks (vLLM:
	// "Available KV cache memory"). Negative when the rest does not fit.
	KVBudgetBytes int64 `json:"kv_budget_bytes"`
	// WeightsBytes is the largest per-rank weight footprint.
	WeightsBytes uint64 `json:"weights_bytes"`
	// KVBytesPerToken is one token in every KV layer of a rank (the largest rank).
	KVBytesPerToken uint64 `json:"kv_bytes_per_token"`
	// NeededBytes is the KV one request of MaxModelLen takes on the worst rank.
	NeededBytes uint64 `json:"needed_bytes"`
	// MaxConcurrency is how many requests of MaxModelLen fit at once.
	MaxConcurrency float64 `json:"max_concurrency"`
	// MaxModelLenFit is the largest max_model_len with which the engine
	// starts and holds one request (0: none; capped at the model's maximum).
	MaxModelLenFit int64 `json:"max_model_len_fit"`
	// MinTPFit is the smallest TP (with the same PP) that fits, 0 if none up to 8.
	MinTPFit int `json:"min_tp_fit"`
	// RequestedBytes is the per-rank memory the engine claims (vLLM: total x
	// utilization; SGLang: free-at-init x mem_fraction_static), the minimum.
	RequestedBytes uint64 `json:"requested_bytes"`

	// The settings used, defaults filled in.
	TP                   int     `json:"tp"`
	PP                   int     `json:"pp"`
	MaxModelLen          int     `json:"max_model_len"`
	GPUMemoryBytes       uint64  `json:"gpu_memory_bytes"`
	GPUMemoryUtilization float64 `json:"gpu_memory_utilization"`
	KVCacheDtype         string  `json:"kv_cache_dtype"`
	BlockSize            int     `json:"block_size"`
	MaxNumSeqs           int     `json:"max_num_seqs"`
	MaxNumBatchedTokens  int     `json:"max_num_batched_tokens"`
	Concurrency          int     `json:"concurrency"`
}

// Rank is one GPU's share. Figures that come from an override say so in
// Measured.
type Rank struct {
	Rank    int `json:"rank"`
	PPStage int `json:"pp_stage"`
	TPRank  int `json:"tp_rank"`
	Layers  int `json:"layers"`
	// FreeBytes is the free memory the engine sees after its CUDA context
	// and NCCL are up (vLLM's init snapshot, SGLang's pre-load "avail mem").
	FreeBytes       uint64 `json:"free_bytes"`
	RequestedBytes  uint64 `json:"requested_bytes"`
	WeightsBytes    uint64 `json:"weights_bytes"`
	ActivationBytes uint64 `json:"activation_bytes"`
	NonTorchBytes   uint64 `json:"non_torch_bytes"`
	CUDAGraphBytes  uint64 `json:"cuda_graph_bytes"`
	// CUDAGraphDeducted says whether the graphs come out of the KV budget
	// (vLLM >= 0.21) or out of the headroom above it.
	CUDAGraphDeducted bool    `json:"cuda_graph_deducted"`
	KVBudgetBytes     int64   `json:"kv_budget_bytes"`
	KVBytesPerToken   uint64  `json:"kv_bytes_per_token"`
	NumBlocks         int64   `json:"num_blocks"`
	KVTokens          int64   `json:"kv_tokens"`
	NeededBytes       uint64  `json:"needed_bytes"`
	Concurrency       float64 `json:"concurrency"`
	// Measured lists the figures taken from Overrides ("weights", ...).
	Measured []string `json:"measured,omitempty"`
}

// Estimate predicts the engine's memory plan for in.
func Estimate(in Input) (*Result, error) {
	r, err := resolve(in)
	if err != nil {
		return nil, err
	}
	res := r.compute()
	res.MaxModelLenFit = r.largestLen(1)
	res.MinTPFit = r.minTP()
	r.suggest(res)
	return res, nil
}

// run is an Input with its defaults resolved.
type run struct {
	in      Input
	m       *model
	ver     version
	v0      bool
	elem    kvElem
	util    float64
	block   int
	seqs    int
	mbt     int
	maxLen  int
	conc    int
	userBlk bool
	// SGLang only
	cudaGraphBS int
}

// model is one engine kind's arithmetic (vllm.go, sglang.go).
type model struct {
	defaultVersion string
	// utilFlag names the utilization setting in suggestions.
	utilFlag string
	// defaults resolves the engine's defaults into r.
	defaults func(r *run) error
	// compute fills res (Mode included) at r.maxLen.
	compute func(r *run, res *Result)
	// startupCheck reports whether this version refuses to start when a
	// GPU has less free memory than it requests (vLLM from 0.10).
	startupCheck func(r *run) bool
}

// models is every engine kind's model, by kind name (engine/kinds); the
// engine's Kind selects it through Input.Engine.
var models = map[string]*model{kinds.VLLM: vllmModel, kinds.SGLang: sglangModel}

// resolve fills in the engine's defaults.
func resolve(in Input) (*run, error) {
	if in.Engine == "" {
		in.Engine = kinds.VLLM
	}
	in.TP, in.PP = max(in.TP, 1), max(in.PP, 1)
	if err := in.validate(); err != nil {
		return nil, err
	}
	m := models[in.Engine]
	if in.EngineVersion == "" {
		in.EngineVersion = m.defaultVersion
	}
	ver, err := parseVersion(in.EngineVersion)
	if err != nil {
		return nil, err
	}
	elem, err := parseKVDtype(in.KVCacheDtype, in.Model.dtypeBytes())
	if err != nil {
		return nil, err
	}
	if elem.dsMLA && !in.Model.hasKind(AttnMLA) {
		return nil, fmt.Errorf("KV cache dtype fp8_ds_mla is for MLA models (DeepSeek); %s has no MLA layers", in.Model.name())
	}
	r := &run{in: in, m: m, ver: ver, elem: elem, conc: max(in.Concurrency, 1)}
	r.maxLen = in.MaxModelLen
	if r.maxLen == 0 {
		r.maxLen = in.Model.MaxModelLen
	}
	if r.maxLen <= 0 {
		return nil, fmt.Errorf("no context length: the model does not say its maximum, so give one (-ctx LEN)")
	}
	if err := m.defaults(r); err != nil {
		return nil, err
	}
	return r, nil
}

func (s *ModelSpec) hasKind(k AttentionKind) bool {
	for _, l := range s.Layers {
		if l.Kind == k {
			return true
		}
	}
	return false
}

func (s *ModelSpec) name() string {
	if s.Name == "" {
		return "the model"
	}
	return s.Name
}

// compute runs the engine's arithmetic at r.maxLen.
func (r *run) compute() *Result {
	in := &r.in
	res := &Result{
		Engine: in.Engine, EngineVersion: in.EngineVersion,
		TP: in.TP, PP: in.PP, MaxModelLen: r.maxLen, GPUMemoryBytes: in.GPUMemoryBytes,
		GPUMemoryUtilization: r.util, KVCacheDtype: in.KVCacheDtype, BlockSize: r.block,
		MaxNumSeqs: r.seqs, MaxNumBatchedTokens: r.mbt, Concurrency: r.conc,
		Reasons: []string{}, Warnings: []string{}, Suggestions: []string{},
	}
	if res.KVCacheDtype == "" {
		res.KVCacheDtype = "auto"
	}
	if h := in.Model.NumAttentionHeads; h > 0 && h%in.TP != 0 {
		res.Reasons = append(res.Reasons, fmt.Sprintf(
			"%s has %d attention heads, which TP %d does not divide; the engine refuses to start. Use a TP that divides %d.",
			in.Model.name(), h, in.TP, h))
	}
	if l := in.Model.MaxModelLen; l > 0 && r.maxLen > l {
		res.Reasons = append(res.Reasons, fmt.Sprintf(
			"the context of %d tokens is longer than the model's maximum of %d; the engine refuses it (vLLM: User-specified max_model_len is greater than the derived max_model_len). Lower the context to %d or less.",
			r.maxLen, l, l))
	}
	r.m.compute(r, res)
	r.summarise(res)
	return res
}

// summarise fills the result's minima and the concurrency verdict.
func (r *run) summarise(res *Result) {
	first := true
	for _, k := range res.Ranks {
		res.WeightsBytes = max(res.WeightsBytes, k.WeightsBytes)
		res.KVBytesPerToken = max(res.KVBytesPerToken, k.KVBytesPerToken)
		res.NeededBytes = max(res.NeededBytes, k.NeededBytes)
		if first {
			res.KVTokens, res.KVBudgetBytes, res.MaxConcurrency, res.RequestedBytes = k.KVTokens, k.KVBudgetBytes, k.Concurrency, k.RequestedBytes
			first = false
			continue
		}
		res.KVTokens = min(res.KVTokens, k.KVTokens)
		res.KVBudgetBytes = min(res.KVBudgetBytes, k.KVBudgetBytes)
		res.MaxConcurrency = min(res.MaxConcurrency, k.Concurrency)
		res.RequestedBytes = min(res.RequestedBytes, k.RequestedBytes)
	}
	if len(res.Reasons) == 0 && r.conc > 1 && res.MaxConcurrency < float64(r.conc) {
		res.Reasons = append(res.Reasons, fmt.Sprintf(
			"the KV cache holds %.2f requests of %d tokens at once, fewer than the %d required.",
			res.MaxConcurrency, r.maxLen, r.conc))
	}
	res.Fits = len(res.Reasons) == 0
}

// rankBase fills the figures both engines derive alike for one rank: its
// place, its layers, the free memory after the engine's CUDA context (ctx
// bytes), weights, activation and CUDA graphs, measured ones from the
// overrides. launchFree is the free memory before the launch.
func (r *run) rankBase(rank int, ctx uint64) (k Rank, layers []Layer, launchFree uint64) {
	in := &r.in
	stage := rank / in.TP
	start, end := stageLayers(len(in.Model.Layers), in.PP, stage)
	layers = in.Model.Layers[start:end]
	k = Rank{Rank: rank, PPStage: stage, TPRank: rank % in.TP, Layers: len(layers)}
	launchFree = in.GPUMemoryBytes
	if f, ok := pick(in.FreeMemoryBytes, rank); ok {
		launchFree = min(f, in.GPUMemoryBytes)
	}
	ov := in.Overrides
	k.FreeBytes = k.measured(ov.InitFreeBytes, "free", uint64(max(subs(launchFree, ctx), 0)))
	k.WeightsBytes = k.measured(ov.WeightsBytes, "weights", in.Model.rankWeights(in.TP, in.PP, stage))
	k.ActivationBytes = k.measured(ov.ActivationBytes, "activation", r.activation(stage == in.PP-1, r.mbt))
	graphs := uint64(0)
	if !in.EnforceEager {
		graphs = graphBase + uint64(len(layers))*graphPerLayer
	}
	k.CUDAGraphBytes = k.measured(ov.CUDAGraphBytes, "cuda_graph", graphs)
	return k, layers, launchFree
}

// measured returns the rank's override from s when there is one (and notes
// its name), else est.
func (k *Rank) measured(s []uint64, name string, est uint64) uint64 {
	if v, ok := pick(s, k.Rank); ok {
		k.Measured = append(k.Measured, name)
		return v
	}
	return est
}

// gib formats bytes as vLLM prints them.
func gib(b uint64) string { return fmt.Sprintf("%.2f GiB", float64(b)/GiB) }

func gibSigned(b int64) string { return fmt.Sprintf("%.2f GiB", float64(b)/GiB) }

// frac multiplies bytes by a fraction, flooring as the engines' int() does.
func frac(b uint64, f float64) uint64 {
	v := math.Floor(float64(b) * f)
	if v <= 0 || math.IsNaN(v) {
		return 0
	}
	return uint64(v)
}

// subs returns a - sum(bs) as a signed byte count.
func subs(a uint64, bs ...uint64) int64 {
	v := int64(a)
	for _, b := range bs {
		v -= int64(b)
	}
	return v
}
