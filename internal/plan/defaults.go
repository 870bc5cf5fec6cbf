package plan

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/vram"
)

// DefaultChange is an effective setting that changes with the engine
// version although the configuration does not set it: a flag default that
// differs between the two versions' flag lists, or a value roofline resolves
// by the engine's rules (batch limits, block size, CUDA graphs).
type DefaultChange struct {
	Setting string `json:"setting"` // "--gpu-memory-utilization", "max_num_seqs", ...
	Before  string `json:"before"`
	After   string `json:"after"`
	// Source is "flag default" (the --help of each version) or "engine rule"
	// (roofline's model of how the engine resolves it).
	Source string `json:"source"`
	// Memory says what the change does to GPU memory, where it does.
	Memory string `json:"memory,omitempty"`
}

// memoryFlags are the flags whose default decides GPU memory or batching:
// the plan text lists these; the JSON lists every differing default.
var memoryFlags = map[string]bool{
	"--gpu-memory-utilization": true, "--max-num-seqs": true, "--max-num-batched-tokens": true,
	"--block-size": true, "--kv-cache-dtype": true, "--enforce-eager": true, "--max-model-len": true,
	"--enable-chunked-prefill": true, "--enable-prefix-caching": true, "--swap-space": true,
	"--cpu-offload-gb": true, "--kv-cache-memory-bytes": true, "--cuda-graph-sizes": true,
	"--max-seq-len-to-capture": true, "--compilation-config": true, "--dtype": true,
	"--mem-fraction-static": true, "--max-running-requests": true, "--chunked-prefill-size": true,
	"--cuda-graph-max-bs": true, "--page-size": true, "--max-total-tokens": true,
}

// sizing is how plan sized a server: the input of the bare formula, and
// the calibration key and architecture its measured starts are found by.
type sizing struct {
	in   vram.Input
	key  state.CalibrationKey
	arch string
}

// defaultDrift lists the effective settings of server name that change when
// its engine goes from before's version to after's, with their memory
// effect. sz is how plan sized the server and fit its prediction (nil: not
// sized).
func (pl *planner) defaultDrift(s *config.Server, before *state.Server, after *Desired, sz *sizing, fit *vram.Result) []DefaultChange {
	if before.Engine.Kind != after.Engine.Kind || before.Engine.Version == after.Engine.Version {
		return nil
	}
	var out []DefaultChange
	// The old version's flags come from roofline's reference lists (the
	// install is gone or replaced); the new one's from the probe.
	if old, ok := engine.Reference(before.Engine.Kind, before.Engine.Version); ok {
		cur := pl.installed(after)
		if cur == nil {
			cur, _ = engine.Reference(after.Engine.Kind, after.Engine.Version)
		}
		if cur != nil {
			out = append(out, flagDefaultDrift(old.Flags, cur.Flags, after.Argv)...)
		}
	}
	if sz != nil {
		old, cur := pl.ruleSizes(sz, before, fit)
		out = append(out, ruleDrift(old, cur, sz.in)...)
	}
	return out
}

// installed is the probed install of after's engine.
func (pl *planner) installed(after *Desired) *engine.Installed {
	if er, ok := pl.in.Engines[after.Engine.Name]; ok && er.Installed != nil && er.Installed.Flags != nil {
		return er.Installed
	}
	return nil
}

// flagDefaultDrift compares the defaults of the flags both versions have
// that argv does not set.
func flagDefaultDrift(old, cur *engine.FlagSet, argv []string) []DefaultChange {
	if old == nil || cur == nil {
		return nil
	}
	set := map[string]bool{}
	for _, a := range argv {
		if strings.HasPrefix(a, "-") {
			name, _, _ := strings.Cut(a, "=")
			if f := cur.Lookup(name); f != nil {
				set[f.Name] = true
			}
		}
	}
	var out []DefaultChange
	for _, f := range cur.Flags {
		o := old.Lookup(f.Name)
		if o == nil || set[f.Name] || f.Name == "--model" || !f.HasDefault || !o.HasDefault || sameDefault(o.Default, f.Default) {
			continue
		}
		c := DefaultChange{Setting: f.Name, Before: o.Default, After: f.Default, Source: "flag default"}
		if f.Name == "--gpu-memory-utilization" || f.Name == "--mem-fraction-static" {
			c.Memory = "the engine claims that share of each GPU: the KV cache grows or shrinks by the difference"
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b DefaultChange) int { return strings.Compare(a.Setting, b.Setting) })
	return out
}

var reEnumDefault = regexp.MustCompile(`^[A-Z]\w*\.(\w+)(?:\.value)?$`)

// sameDefault compares two --help default texts as values: the spellings
// of "nothing" (None, ”, dict(), [], Config()) are equal, and an enum
// member equals its value ("LoadFormat.AUTO.value" is 'auto').
func sameDefault(a, b string) bool {
	norm := func(v string) string {
		v = strings.TrimSpace(v)
		switch v {
		case "None", "''", `""`, "dict()", "{}", "[]", "()", "set()":
			return ""
		}
		if strings.HasSuffix(v, "()") && !strings.Contains(v, ".") {
			return "" // a default-constructed config object
		}
		if m := reEnumDefault.FindStringSubmatch(v); m != nil {
			return strings.ToLower(m[1])
		}
		return strings.Trim(v, `'"`)
	}
	return norm(a) == norm(b)
}

// ruleSizes sizes the server as before's engine version and returns that
// with fit, the plan's prediction for the new one (what its VRAM table
// shows). Each is calibrated by its own install's measured starts, as plan
// predicts each version's memory: the engine rule's KV cache figures are
// the table's, not the bare formula's. Nil when the old version cannot be
// sized.
func (pl *planner) ruleSizes(sz *sizing, before *state.Server, fit *vram.Result) (old, cur *vram.Result) {
	if fit == nil {
		return nil, nil
	}
	in := sz.in
	in.EngineVersion = before.Engine.Version
	in.Overrides = vram.Overrides{}
	old, err := vram.Estimate(in)
	if err != nil {
		return nil, nil
	}
	key := sz.key
	key.EngineIdentity = before.Engine.Identity
	key.KVCacheDtype, key.MaxNumSeqs, key.MaxNumBatchedTokens = old.KVCacheDtype, old.MaxNumSeqs, old.MaxNumBatchedTokens
	key.BlockSize, key.Utilization = old.BlockSize, old.GPUMemoryUtilization
	if key.MaxModelLen != -1 { // -1: max_model_len = "auto", the key is the setting
		key.MaxModelLen = old.MaxModelLen
	}
	old, _, _ = calibrate(pl.in.Calibrations, in, old, key, sz.arch)
	return old, fit
}

// ruleDrift lists the settings that the two versions' rules resolve
// differently for the server sized from in (old and cur: its sizes by the
// old and the new version), with the KV cache each gives.
func ruleDrift(old, cur *vram.Result, in vram.Input) []DefaultChange {
	if old == nil || cur == nil {
		return nil
	}
	var out []DefaultChange
	add := func(setting, b, a, memory string) {
		if b != a {
			out = append(out, DefaultChange{Setting: setting, Before: b, After: a, Source: "engine rule", Memory: memory})
		}
	}
	kv := fmt.Sprintf("KV cache %d -> %d tokens", old.KVTokens, cur.KVTokens)
	if in.GPUMemoryUtilization == 0 {
		add("gpu_memory_utilization", fmt.Sprint(old.GPUMemoryUtilization), fmt.Sprint(cur.GPUMemoryUtilization), kv)
	}
	if in.MaxNumSeqs == 0 {
		add("max_num_seqs", fmt.Sprint(old.MaxNumSeqs), fmt.Sprint(cur.MaxNumSeqs), "sampler warm-up scales with it: "+kv)
	}
	if in.MaxNumBatchedTokens == 0 {
		add("max_num_batched_tokens", fmt.Sprint(old.MaxNumBatchedTokens), fmt.Sprint(cur.MaxNumBatchedTokens), "profiled activation scales with it: "+kv)
	}
	if in.BlockSize == 0 {
		add("block_size", fmt.Sprint(old.BlockSize), fmt.Sprint(cur.BlockSize), kv)
	}
	if !in.EnforceEager && len(old.Ranks) > 0 && len(cur.Ranks) > 0 {
		graphs := func(r vram.Rank) string {
			where := "headroom"
			if r.CUDAGraphDeducted {
				where = "deducted from the KV budget"
			}
			return fmt.Sprintf("%.2f GiB, %s", float64(r.CUDAGraphBytes)/gib, where)
		}
		add("cuda_graphs", graphs(old.Ranks[0]), graphs(cur.Ranks[0]), kv)
	}
	if len(out) == 0 && old.KVTokens != cur.KVTokens {
		// Nothing resolved differently, yet the arithmetic did (activation
		// or overhead model of the version range).
		add("kv_cache_tokens", fmt.Sprint(old.KVTokens), fmt.Sprint(cur.KVTokens), "the versions profile activation and overhead differently")
	}
	return out
}
