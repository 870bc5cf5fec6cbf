package journal

import (
	"time"

	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/state"
)

// ServedOf is what an entry records of a server from its state record: the
// engine's kind, version and identity, the model, argv and GPUs.
func ServedOf(s *state.Server) Served {
	return Served{Server: s.Name, Argv: s.Argv, GPUs: s.GPUs,
		Engine: EngineInfo{Kind: s.Engine.Kind, Version: s.Engine.Version, Identity: s.Engine.Identity},
		Model:  ModelInfo{Name: s.Model.ServedName, Path: s.Model.Path, Fingerprint: s.Model.Fingerprint}}
}

// HostOf names the GPUs of an inventory snapshot; nil for none.
func HostOf(sn *gpu.Snapshot) *Host {
	if sn == nil {
		return nil
	}
	return &Host{DriverVersion: sn.DriverVersion, CUDAVersion: sn.CUDADriverVersion, GPUName: func(i int) (string, bool) {
		if dev, ok := sn.GPU(i); ok {
			return dev.Name, true
		}
		return "", false
	}}
}

// RolloutOf is the entry of a rollout of s from its state record: its gate
// reports as the state stores them and, for a failed one, why.
func RolloutOf(now time.Time, s *state.Server, host *Host, failed *Failure) Entry {
	var g *Gates
	if s.Gate != nil {
		g = &Gates{Passed: s.Gate.Passed, Health: s.Gate.Health, Smoke: s.Gate.Smoke, Bench: s.Gate.Bench}
	}
	return Rollout(now, ServedOf(s), host, g, failed)
}

// BenchOf is the entry of a bench at url of a configured server: the engine
// and model as the state records them when roofline started it (rec, its
// GPUs from configured when the record names none), else configured.
func BenchOf(now time.Time, rec *state.Server, configured Served, host *Host, url string, b *BenchSummary) Entry {
	served := configured
	if rec != nil {
		served = ServedOf(rec)
		if served.GPUs == nil {
			served.GPUs = configured.GPUs
		}
	}
	return Bench(now, served, host, url, b)
}
