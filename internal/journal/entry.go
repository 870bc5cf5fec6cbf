package journal

import (
	"encoding/json"
	"time"
)

// Served is what an entry says about the instance that served: from the
// state's record of the server, or from the configuration for a server
// roofline did not start.
type Served struct {
	Server string
	Engine EngineInfo
	Model  ModelInfo
	Argv   []string
	// GPUs are the indices the server runs on; Host names them.
	GPUs []int
}

// Host is the GPU side of an entry, from the inventory.
type Host struct {
	DriverVersion, CUDAVersion string
	// GPUName is the name of GPU i; false when the inventory has none.
	GPUName func(i int) (string, bool)
}

// New is the entry of kind about s, on host (nil when the inventory could
// not be read: the entry then names no GPUs).
func New(kind string, now time.Time, s Served, host *Host) Entry {
	e := Entry{Time: now.UTC(), Kind: kind, Server: s.Server, Engine: s.Engine, Model: s.Model, Argv: s.Argv}
	if host != nil {
		e.DriverVersion, e.CUDAVersion = host.DriverVersion, host.CUDAVersion
		for _, g := range s.GPUs {
			if name, ok := host.GPUName(g); ok {
				e.GPUs = append(e.GPUs, name)
			}
		}
	}
	return e
}

// Gates are a rollout's gate reports as the state stores them (JSON).
type Gates struct {
	Passed               bool
	Health, Smoke, Bench json.RawMessage
}

// Rollout is the entry of a rollout of s: its gates (nil when none ran) and,
// for a failed one, why.
func Rollout(now time.Time, s Served, host *Host, g *Gates, failed *Failure) Entry {
	e := New(KindRollout, now, s, host)
	if g != nil {
		gs := &GateSummary{Passed: g.Passed, Health: "pass", Smoke: "skipped", Bench: "skipped"}
		if len(g.Smoke) > 0 {
			gs.Smoke = "pass"
		}
		if len(g.Bench) > 0 {
			gs.Bench = "pass"
			var bs BenchSummary
			if json.Unmarshal(g.Bench, &bs) == nil {
				e.Bench = &bs
			}
		}
		if !g.Passed {
			gs.Health, gs.Smoke, gs.Bench = GateVerdict(g.Health), GateVerdict(g.Smoke), GateVerdict(g.Bench)
		}
		e.Gate = gs
	}
	if failed != nil {
		e.Failure = failed
		if e.Gate != nil {
			e.Gate.Passed = false
			e.Gate.Failures = append(e.Gate.Failures, failed.Error)
		}
	}
	return e
}

// Bench is the entry of a benchmark of s at url.
func Bench(now time.Time, s Served, host *Host, url string, b *BenchSummary) Entry {
	e := New(KindBench, now, s, host)
	e.URL, e.Bench = url, b
	return e
}

// GateVerdict reads a stored gate report: "pass", "fail" or "skipped".
func GateVerdict(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return "skipped"
	}
	var v struct {
		OK     *bool `json:"ok"`
		Passed *bool `json:"passed"`
	}
	if json.Unmarshal(raw, &v) == nil && ((v.OK != nil && !*v.OK) || (v.Passed != nil && !*v.Passed)) {
		return "fail"
	}
	return "pass"
}
