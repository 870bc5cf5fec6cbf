package plan

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/engine/kinds"

	"github.com/roofline/roofline/internal/model"
	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/vram"
	"github.com/roofline/roofline/internal/vram/fromodel"
)

// An engine upgrade in place (vLLM 0.8.5 -> 0.16.0, the HCL sets neither
// the batch limits nor the block size): plan lists the settings the new
// version resolves differently, with their effect on the KV cache, and the
// flag defaults that differ between the two --help lists. Settings the HCL
// sets are not listed.
func TestDefaultDriftOnEngineUpgrade(t *testing.T) {
	server := func(engine string) string {
		return strings.NewReplacer("engine.vllm_016", engine, "  gpu_memory_utilization = 0.9\n", "").Replace(qwenServer)
	}
	first := run(t, tc{hcl: server("engine.vllm_085")})
	st, obs := stateFrom(first)
	p := run(t, tc{hcl: server("engine.vllm_016"), prior: st, observed: obs})
	c := wantAction(t, p, "qwen", DeleteThenCreate)
	got := map[string]DefaultChange{}
	for _, d := range c.Defaults {
		got[d.Setting] = d
	}
	// Both versions resolve the same batch limits and utilization on an
	// H100; vLLM 0.16.0's sampler warm-up peak is larger (docs/vram.md), so
	// the KV cache shrinks.
	for _, want := range []struct{ setting, before, after, source string }{
		{"kv_cache_tokens", "392416", "365824", "engine rule"},
		{"--seed", "None", "0", "flag default"},
		{"--prefix-caching-hash-algo", "'builtin'", "'sha256'", "flag default"},
	} {
		d, ok := got[want.setting]
		if !ok || d.Before != want.before || d.After != want.after || d.Source != want.source {
			t.Errorf("%s: %+v, want %s -> %s (%s)", want.setting, d, want.before, want.after, want.source)
		}
	}
	for _, same := range []string{"--load-format", "--config-format", "--hf-overrides", "--model", "max_num_seqs", "block_size"} {
		if d, ok := got[same]; ok {
			t.Errorf("%s is the same value in both versions (or set): %+v", same, d)
		}
	}
	flags := 0
	for _, d := range c.Defaults {
		if d.Source == "flag default" {
			flags++
			if d.Setting == "--max-model-len" || d.Setting == "--tool-call-parser" {
				t.Errorf("%s is set in the configuration and must not be listed: %+v", d.Setting, d)
			}
		}
	}
	if flags == 0 {
		t.Error("no flag default differs between vLLM 0.8.5 and 0.16.0?")
	}
	golden(t, "engine-upgrade-defaults", p)

	// The same version again: nothing listed.
	p = run(t, tc{hcl: server("engine.vllm_085"), prior: st, observed: obs})
	if c := wantAction(t, p, "qwen", NoOp); len(c.Defaults) != 0 {
		t.Errorf("same version: %+v", c.Defaults)
	}
}

// bareRuleDrift is ruleDrift of in sized by the bare formula of two versions.
func bareRuleDrift(t *testing.T, in vram.Input, oldVersion, newVersion string) []DefaultChange {
	t.Helper()
	in.EngineVersion = oldVersion
	old, err := vram.Estimate(in)
	if err != nil {
		t.Fatal(err)
	}
	in.EngineVersion = newVersion
	cur, err := vram.Estimate(in)
	if err != nil {
		t.Fatal(err)
	}
	return ruleDrift(old, cur, in)
}

// The engine rules across vLLM 0.21 (utilization default 0.92, CUDA graphs
// deducted from the KV budget) and across the A100 batch-default rule.
func TestRuleDrift(t *testing.T) {
	info, err := model.Inspect(filepath.Join(models, "qwen3-8b"))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := fromodel.Spec(info)
	if err != nil {
		t.Fatal(err)
	}
	in := vram.Input{Engine: kinds.VLLM, Model: spec, GPUMemoryBytes: 85018542080, GPUName: "NVIDIA H100 80GB HBM3", MaxModelLen: 32768}
	got := map[string]DefaultChange{}
	for _, d := range bareRuleDrift(t, in, "0.16.0", "0.21.0") {
		got[d.Setting] = d
	}
	if d := got["gpu_memory_utilization"]; d.Before != "0.9" || d.After != "0.92" || !strings.Contains(d.Memory, "KV cache") {
		t.Errorf("utilization: %+v", d)
	}
	if d := got["cuda_graphs"]; !strings.Contains(d.Before, "headroom") || !strings.Contains(d.After, "deducted from the KV budget") {
		t.Errorf("graphs: %+v", d)
	}
	// Set in the configuration: not a default, not listed.
	in.GPUMemoryUtilization = 0.85
	for _, d := range bareRuleDrift(t, in, "0.16.0", "0.21.0") {
		if d.Setting == "gpu_memory_utilization" {
			t.Errorf("a set utilization is listed: %+v", d)
		}
	}
}

// TestRuleDriftAgreesWithTheCalibratedTable: after an engine upgrade the
// engine rule's KV cache figures are the calibrated predictions, the same
// as the plan's VRAM table: the new version's from this install's measured
// starts (estimated), the old version's from its own install's (here a
// measured start of the very same settings).
func TestRuleDriftAgreesWithTheCalibratedTable(t *testing.T) {
	server := func(engine string) string {
		return strings.NewReplacer("engine.vllm_016", engine, "  gpu_memory_utilization = 0.9\n", "").Replace(qwenServer)
	}
	first := run(t, tc{hcl: server("engine.vllm_085")})
	oldKey := wantAction(t, first, "qwen", Create).After.Calibration.Key
	st, obs := stateFrom(first)
	bare := run(t, tc{hcl: server("engine.vllm_016"), prior: st, observed: obs})
	newCal := wantAction(t, bare, "qwen", DeleteThenCreate).After.Calibration
	// A start of the new install (another context) that took 8% more than
	// the formula's activation and non-torch memory, and the old install's
	// start of this server, which logged its own token count.
	at := time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)
	family := state.Calibration{Key: newCal.Key, Arch: newCal.Arch, Server: "other", At: at,
		RequestedBytes: newCal.RequestedBytes, PredictedOverheadBytes: newCal.BareOverheadBytes, PredictedKVBudgetBytes: newCal.BareKVBudgetBytes,
		WeightsBytes: newCal.BareWeightsBytes, KVBudgetBytes: newCal.BareKVBudgetBytes - newCal.BareOverheadBytes*8/100, KVTokens: 1}
	family.Key.MaxModelLen = 8192
	measuredOld := state.Calibration{Key: oldKey, Arch: newCal.Arch, Server: "qwen", At: at,
		RequestedBytes: newCal.RequestedBytes, WeightsBytes: newCal.BareWeightsBytes, KVBudgetBytes: 50 << 30, KVTokens: 390000}
	p := run(t, tc{hcl: server("engine.vllm_016"), prior: st, observed: obs,
		calib: &state.Calibrations{Records: []state.Calibration{measuredOld, family}}})
	c := wantAction(t, p, "qwen", DeleteThenCreate)
	if c.After.Calibration.Status != CalibEstimated {
		t.Fatalf("the new install's start should calibrate the prediction: %+v", c.After.Calibration)
	}
	table := c.Fit.Ranks[0].KVTokens
	if table != c.After.Predicted.KVTokens || table == newCal.BareKVTokens {
		t.Fatalf("the table's %d tokens, predicted %d, bare formula %d: the calibration did not apply", table, c.After.Predicted.KVTokens, newCal.BareKVTokens)
	}
	var kv *DefaultChange
	for i, d := range c.Defaults {
		if d.Source == "engine rule" && d.Setting == "kv_cache_tokens" {
			kv = &c.Defaults[i]
		}
	}
	if kv == nil || kv.After != fmt.Sprint(table) || kv.Before != "390000" {
		t.Fatalf("engine rule %+v, want 390000 -> %d (the old start's log, the VRAM table)", kv, table)
	}
	var text bytes.Buffer
	RenderHuman(&text, p.ToJSON(), func(s string) string { return s })
	if !strings.Contains(text.String(), fmt.Sprintf("390000 -> %d", table)) {
		t.Errorf("the plan text should say 390000 -> %d:\n%s", table, text.String())
	}
}
