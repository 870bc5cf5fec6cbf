package plan

import (
	"fmt"
	"math"
	"time"

	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/vram"
)

// Calibration statuses: how a server's memory was predicted.
const (
	// CalibMeasured: an earlier start with the same key measured it; the
	// engine's own figures are used (its logged KV tokens exactly).
	CalibMeasured = "measured"
	// CalibEstimated: the formula, corrected by the error it had at the last
	// start of the same engine install and model architecture.
	CalibEstimated = "estimated"
	// CalibUncalibrated: the bare formula; no start of this engine install
	// and architecture has been measured.
	CalibUncalibrated = "uncalibrated"
)

// Calibration says how a server's memory was predicted and carries what
// apply needs to record the start's measured figures.
type Calibration struct {
	Status string               `json:"status"`
	Key    state.CalibrationKey `json:"key"`
	Arch   string               `json:"arch"`
	// Residual is, for "estimated", the bare formula's relative error on the
	// KV budget at the start the correction comes from; for "measured", 0.
	Residual float64 `json:"residual,omitempty"`
	// From names the start the figures or the correction come from.
	FromServer string    `json:"from_server,omitempty"`
	FromTime   time.Time `json:"from_time,omitzero"`

	// The bare formula's figures for this server (what apply compares the
	// measurement with), per rank.
	RequestedBytes    int64 `json:"requested_bytes"`
	BareWeightsBytes  int64 `json:"bare_weights_bytes"`
	BareOverheadBytes int64 `json:"bare_overhead_bytes"`
	BareKVBudgetBytes int64 `json:"bare_kv_budget_bytes"`
	BareKVTokens      int64 `json:"bare_kv_tokens"`
	// PickedMaxModelLen is, for max_model_len = "auto" and a measured key,
	// the context the engine picked at that start.
	PickedMaxModelLen int `json:"picked_max_model_len,omitempty"`
}

// Label is the one-line description plan, status and vram print.
func (c *Calibration) Label() string {
	if c == nil {
		return CalibUncalibrated
	}
	switch c.Status {
	case CalibMeasured:
		return fmt.Sprintf("measured (start of %s, %s)", c.FromServer, c.FromTime.UTC().Format(time.DateTime))
	case CalibEstimated:
		pct := 100 * c.Residual
		if math.Abs(pct) < 0.05 {
			pct = 0 // not "-0.0 %"
		}
		return fmt.Sprintf("estimated: roofline's formula, corrected by %+.1f %%, its error at the start of %s (%s)",
			pct, c.FromServer, c.FromTime.UTC().Format(time.DateTime))
	}
	return CalibUncalibrated + " (roofline's formula: no start of this engine install and architecture measured yet)"
}

// overheadBytes is what the engine takes besides weights and KV on the rank
// that limits the KV cache: activation, non-torch memory and the CUDA graphs
// where they are deducted.
func overheadBytes(res *vram.Result) int64 {
	return int64(res.RequestedBytes) - int64(res.WeightsBytes) - res.KVBudgetBytes
}

// calibrate applies the calibrations to one server's prediction. in is the
// input res was estimated from; arch the model's architecture. It returns
// the prediction to use and how it was made.
func calibrate(cs *state.Calibrations, in vram.Input, res *vram.Result, key state.CalibrationKey, arch string) (*vram.Result, *Calibration, vram.Input) {
	c := &Calibration{Status: CalibUncalibrated, Key: key, Arch: arch,
		RequestedBytes: int64(res.RequestedBytes), BareWeightsBytes: int64(res.WeightsBytes),
		BareOverheadBytes: overheadBytes(res), BareKVBudgetBytes: res.KVBudgetBytes, BareKVTokens: res.KVTokens}
	if rec := cs.Exact(key); rec != nil && rec.KVTokens > 0 {
		in.Overrides = vram.Overrides{WeightsBytes: []uint64{uint64(max(rec.WeightsBytes, 0))},
			KVBudgetBytes: []uint64{uint64(max(rec.KVBudgetBytes, 0))}}
		if m, err := vram.Estimate(in); err == nil {
			// The engine's logged token count, not one re-derived from a
			// budget it printed to two decimals.
			m.KVTokens = rec.KVTokens
			for i := range m.Ranks {
				m.Ranks[i].KVTokens = rec.KVTokens
			}
			if rec.MaxConcurrency > 0 {
				m.MaxConcurrency = rec.MaxConcurrency
			}
			c.Status, c.FromServer, c.FromTime = CalibMeasured, rec.Server, rec.At
			c.PickedMaxModelLen = rec.PickedMaxModelLen
			return m, c, in
		}
	}
	bare := in
	rec := cs.Family(key, arch)
	if rec == nil || rec.PredictedOverheadBytes <= 0 || rec.PredictedKVBudgetBytes == 0 {
		return res, c, bare
	}
	if !engine.LookupOrDefault(in.Engine).ProfilesMemory {
		// SGLang does not profile: its pool is what is left, so the
		// correction is the pool's own relative error.
		b := float64(res.KVBudgetBytes) * (1 + rec.Residual())
		in.Overrides.KVBudgetBytes = []uint64{uint64(max(b, 0))}
	} else {
		// vLLM profiles activation and non-torch memory; their error in
		// proportion carries over to other contexts and batch settings.
		ratio := float64(rec.MeasuredOverheadBytes()) / float64(rec.PredictedOverheadBytes)
		if ratio <= 0 {
			return res, c, bare
		}
		for _, r := range res.Ranks {
			in.Overrides.ActivationBytes = append(in.Overrides.ActivationBytes, uint64(float64(r.ActivationBytes)*ratio))
			in.Overrides.NonTorchBytes = append(in.Overrides.NonTorchBytes, uint64(float64(r.NonTorchBytes)*ratio))
		}
	}
	m, err := vram.Estimate(in)
	if err != nil {
		return res, c, bare
	}
	c.Status, c.Residual, c.FromServer, c.FromTime = CalibEstimated, rec.Residual(), rec.Server, rec.At
	return m, c, in
}
