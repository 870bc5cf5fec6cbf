package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/roofline/roofline/internal/fsx"
)

// Calibrations are the engines' own memory figures from past starts, kept
// beside the state (calibrations.json) so that plan predicts from what the
// engine measured instead of from a formula that may have drifted from it.
// They are a cache of observations, not part of the state: losing the file
// only makes the next plan "uncalibrated" again.

// CalibrationsFile is the file's name in the state directory.
const CalibrationsFile = "calibrations.json"

// calibrationsFormat is the file's format_version.
const calibrationsFormat = 1

// maxCalibrations bounds the file: the newest records are kept.
const maxCalibrations = 256

// CalibrationKey is what determines an engine's start-up sizing: two starts
// with equal keys measure the same figures (up to the GPU's free memory,
// which is checked separately). Settings are the effective ones, defaults
// resolved, so that a key does not change when a default is spelled out.
type CalibrationKey struct {
	Engine string `json:"engine"` // "vllm" | "sglang"
	// EngineIdentity is the install's fingerprint (executable or image
	// digest): another build of the same version may size differently.
	EngineIdentity      string  `json:"engine_identity"`
	GPU                 string  `json:"gpu"`              // product name
	GPUMemoryBytes      uint64  `json:"gpu_memory_bytes"` // the CUDA total of one GPU
	ModelFingerprint    string  `json:"model_fingerprint"`
	TP                  int     `json:"tp"`
	PP                  int     `json:"pp"`
	DtypeBytes          int     `json:"dtype_bytes"`
	KVCacheDtype        string  `json:"kv_cache_dtype"`
	MaxModelLen         int     `json:"max_model_len"`
	MaxNumSeqs          int     `json:"max_num_seqs"`
	MaxNumBatchedTokens int     `json:"max_num_batched_tokens"`
	BlockSize           int     `json:"block_size"`
	Utilization         float64 `json:"utilization"`
	EnforceEager        bool    `json:"enforce_eager"`
}

// Calibration is one start's measured figures with what plan predicted for
// it. Byte figures are per GPU rank (the limiting one, as the engines log).
type Calibration struct {
	Key CalibrationKey `json:"key"`
	// Arch is the model's architecture ("Qwen3ForCausalLM"): residuals carry
	// over between models of one family on one engine install.
	Arch     string    `json:"arch"`
	Server   string    `json:"server"`
	LaunchID string    `json:"launch_id,omitempty"`
	At       time.Time `json:"at"`

	// From the engine's start-up log.
	WeightsBytes   int64   `json:"weights_bytes"`
	KVBudgetBytes  int64   `json:"kv_budget_bytes"`
	KVTokens       int64   `json:"kv_tokens"`
	MaxConcurrency float64 `json:"max_concurrency,omitempty"`
	// PickedMaxModelLen is, for max_model_len = "auto", the context the
	// engine picked (/v1/models); PredictedMaxModelLen what plan predicted.
	PickedMaxModelLen    int `json:"picked_max_model_len,omitempty"`
	PredictedMaxModelLen int `json:"predicted_max_model_len,omitempty"`
	// PreviousPickedMaxModelLen is what the previous start with the same
	// key picked: a different value is drift.
	PreviousPickedMaxModelLen int `json:"previous_picked_max_model_len,omitempty"`
	// From /metrics vllm:cache_config_info where the version has it.
	CacheConfigBlocks int64 `json:"cache_config_blocks,omitempty"`
	CacheConfigTokens int64 `json:"cache_config_tokens,omitempty"`

	// What the bare formula predicted for this start.
	RequestedBytes         int64 `json:"requested_bytes"`          // total x utilization
	PredictedWeightsBytes  int64 `json:"predicted_weights_bytes"`  // weights
	PredictedOverheadBytes int64 `json:"predicted_overhead_bytes"` // activation + non-torch (+ graphs where deducted)
	PredictedKVBudgetBytes int64 `json:"predicted_kv_budget_bytes"`
	PredictedKVTokens      int64 `json:"predicted_kv_tokens"`
	// PredictedAs is how plan predicted this start: "measured",
	// "estimated" or "uncalibrated".
	PredictedAs string `json:"predicted_as"`
}

// MeasuredOverheadBytes is what the engine took besides the weights and the
// KV cache: requested - weights - KV budget.
func (c *Calibration) MeasuredOverheadBytes() int64 {
	return c.RequestedBytes - c.WeightsBytes - c.KVBudgetBytes
}

// Residual is the bare formula's relative error on the KV budget at this
// start: (measured - predicted) / predicted.
func (c *Calibration) Residual() float64 {
	if c.PredictedKVBudgetBytes == 0 {
		return 0
	}
	return float64(c.KVBudgetBytes-c.PredictedKVBudgetBytes) / float64(c.PredictedKVBudgetBytes)
}

// Calibrations is the file's content, oldest first.
type Calibrations struct {
	FormatVersion int           `json:"format_version"`
	Records       []Calibration `json:"records"`
}

// Exact returns the newest record with this key, or nil.
func (cs *Calibrations) Exact(k CalibrationKey) *Calibration {
	if cs == nil {
		return nil
	}
	for i := len(cs.Records) - 1; i >= 0; i-- {
		if cs.Records[i].Key == k {
			return &cs.Records[i]
		}
	}
	return nil
}

// Family returns the newest record of the same engine install and
// architecture on the same GPU product, or nil.
func (cs *Calibrations) Family(k CalibrationKey, arch string) *Calibration {
	if cs == nil || arch == "" {
		return nil
	}
	for i := len(cs.Records) - 1; i >= 0; i-- {
		r := &cs.Records[i]
		if r.Arch == arch && r.Key.Engine == k.Engine && r.Key.EngineIdentity == k.EngineIdentity && r.Key.GPU == k.GPU {
			return r
		}
	}
	return nil
}

// Starts returns a server's records, newest first.
func (cs *Calibrations) Starts(server string) []*Calibration {
	if cs == nil {
		return nil
	}
	var out []*Calibration
	for i := len(cs.Records) - 1; i >= 0; i-- {
		if cs.Records[i].Server == server {
			out = append(out, &cs.Records[i])
		}
	}
	return out
}

// Latest returns the newest record of a server, or nil.
func (cs *Calibrations) Latest(server string) *Calibration {
	if cs == nil {
		return nil
	}
	for i := len(cs.Records) - 1; i >= 0; i-- {
		if cs.Records[i].Server == server {
			return &cs.Records[i]
		}
	}
	return nil
}

// add appends c, dropping an older record with the same key and the oldest
// beyond the bound.
func (cs *Calibrations) add(c Calibration) {
	cs.Records = slices.DeleteFunc(cs.Records, func(r Calibration) bool { return r.Key == c.Key })
	cs.Records = append(cs.Records, c)
	if n := len(cs.Records) - maxCalibrations; n > 0 {
		cs.Records = cs.Records[n:]
	}
}

// ReadCalibrations reads the state directory's calibrations; a missing file
// is an empty set.
func ReadCalibrations(dir string) (*Calibrations, error) {
	path := filepath.Join(dir, CalibrationsFile)
	raw, err := fsx.ReadFileNoFollow(path, 16<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return &Calibrations{FormatVersion: calibrationsFormat}, nil
	}
	if err != nil {
		return nil, err
	}
	var cs Calibrations
	if err := json.Unmarshal(raw, &cs); err != nil {
		return nil, fmt.Errorf("%s: %v (delete it to start calibrating afresh)", path, err)
	}
	if cs.FormatVersion != calibrationsFormat {
		return nil, fmt.Errorf("%s: format_version %d, this roofline reads %d (delete it to start calibrating afresh)", path, cs.FormatVersion, calibrationsFormat)
	}
	return &cs, nil
}

var calibMu sync.Mutex // one read-modify-write at a time within a process

// RecordCalibration adds c to the state directory's calibrations (an atomic
// rewrite of the file). The caller holds the state lock, so no other
// roofline writes the file meanwhile.
func RecordCalibration(dir string, c Calibration) error {
	calibMu.Lock()
	defer calibMu.Unlock()
	cs, err := ReadCalibrations(dir)
	if err != nil {
		cs = &Calibrations{FormatVersion: calibrationsFormat} // a damaged cache is replaced
	}
	cs.add(c)
	raw, err := json.MarshalIndent(cs, "", "  ")
	if err != nil {
		return err
	}
	return fsx.WriteFile(filepath.Join(dir, CalibrationsFile), append(raw, '\n'), 0o600)
}
