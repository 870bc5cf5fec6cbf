// Package gpu reads what the GPUs of a host hold: memory and the compute
// processes on each. One small interface (Inventory) has two implementations:
// NVML on a GPU host and a snapshot file (written by `roofline gpu -json`) for
// code review, CI and tests on machines without GPUs.
//
// Of roofline's packages it imports only fsx and suggest (the
// did-you-mean of an unknown -gpu preset).
package gpu

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"slices"
	"time"
)

// FormatVersion is the snapshot file format this roofline writes and reads.
const FormatVersion = 1

// Inventory takes a snapshot of all GPUs of one host.
type Inventory interface {
	Snapshot(ctx context.Context) (*Snapshot, error)
}

// ErrNVMLUnavailable is wrapped by the error NVML inventories return when the
// NVIDIA management library cannot be used at all (no driver, a build
// without cgo). Callers test it with errors.Is.
var ErrNVMLUnavailable = errors.New("NVML is not available")

// useInventoryHint ends every "no NVML" message: it says what to do instead.
const useInventoryHint = "Use -inventory FILE with a snapshot written by `roofline gpu -json` on the GPU host."

// Snapshot is the state of a host's GPUs at one moment. It is a value: taking
// it again gives a new Snapshot, nothing in it changes behind the caller.
type Snapshot struct {
	FormatVersion int `json:"format_version"`
	// Source says where the figures came from: "nvml" or "file:<path>".
	Source  string    `json:"source"`
	Host    string    `json:"host"`
	TakenAt time.Time `json:"taken_at"`
	// DriverVersion is the kernel driver ("550.54.15"); CUDADriverVersion the
	// highest CUDA version the driver supports ("12.4").
	DriverVersion     string `json:"driver_version"`
	CUDADriverVersion string `json:"cuda_driver_version"`
	GPUs              []GPU  `json:"gpus"`
	// Warnings are figures NVML could not give (for example a GPU whose
	// process list failed): the snapshot is usable but less complete.
	Warnings []string `json:"warnings,omitempty"`
}

// GPU is one device. Memory figures follow NVML's v2 memory call:
// total = reserved + used + free, where reserved is held by the driver and
// firmware and never visible to CUDA. The engines (vLLM, SGLang) size their
// budgets from cudaMemGetInfo, whose total is MemoryTotalBytes -
// MemoryReservedBytes (CUDATotalBytes) and whose free is MemoryFreeBytes.
type GPU struct {
	// Index is NVML's index, which follows PCI bus order. CUDA numbers GPUs
	// the same way only with CUDA_DEVICE_ORDER=PCI_BUS_ID.
	Index    int    `json:"index"`
	UUID     string `json:"uuid"`
	Name     string `json:"name"`
	PCIBusID string `json:"pci_bus_id"`

	MemoryTotalBytes uint64 `json:"memory_total_bytes"`
	// MemoryReservedBytes is 0 when the driver has no v2 memory call; then
	// MemoryUsedBytes includes the reserved memory, as nvidia-smi showed it
	// before driver 510.
	MemoryReservedBytes uint64 `json:"memory_reserved_bytes"`
	MemoryUsedBytes     uint64 `json:"memory_used_bytes"`
	MemoryFreeBytes     uint64 `json:"memory_free_bytes"`

	ComputeCapability string `json:"compute_capability"` // "9.0"
	// MIGMode is "disabled", "enabled" or "unsupported" (most non-datacenter
	// GPUs); "" when NVML could not say.
	MIGMode   string    `json:"mig_mode"`
	Processes []Process `json:"processes"`
}

// MIG modes.
const (
	MIGDisabled    = "disabled"
	MIGEnabled     = "enabled"
	MIGUnsupported = "unsupported"
)

// Process is a compute process on a GPU. PIDs are host PIDs: NVML ignores PID
// namespaces, so inside a container /proc may not show them.
type Process struct {
	PID int `json:"pid"`
	// UsedMemoryBytes is 0 when the driver does not report it (for example
	// without permission, or per MIG instance).
	UsedMemoryBytes uint64 `json:"used_memory_bytes"`
	// Name (from /proc/PID/comm) and Cmdline are empty when the process had
	// exited by the time it was looked up, or is outside this PID namespace.
	Name    string   `json:"name"`
	Cmdline []string `json:"cmdline,omitempty"`
}

// CUDATotalBytes is the total memory the CUDA runtime reports for the GPU
// (cudaMemGetInfo), which is what gpu_memory_utilization multiplies.
func (g *GPU) CUDATotalBytes() uint64 {
	if g.MemoryReservedBytes > g.MemoryTotalBytes {
		return 0
	}
	return g.MemoryTotalBytes - g.MemoryReservedBytes
}

// GPU returns the GPU with NVML index i.
func (s *Snapshot) GPU(index int) (*GPU, bool) {
	if s == nil {
		return nil, false
	}
	for i := range s.GPUs {
		if s.GPUs[i].Index == index {
			return &s.GPUs[i], true
		}
	}
	return nil, false
}

// MemoryOf sums what the processes pids hold over all GPUs (0 when the
// snapshot lists none of them): a server's footprint as NVML sees it.
func (s *Snapshot) MemoryOf(pids []int) uint64 {
	if s == nil {
		return 0
	}
	want := map[int]bool{}
	for _, p := range pids {
		want[p] = true
	}
	var sum uint64
	for _, g := range s.GPUs {
		for _, p := range g.Processes {
			if want[p.PID] {
				sum += p.UsedMemoryBytes
			}
		}
	}
	return sum
}

// Clone returns a deep copy, so an inventory can hand out snapshots that
// callers may change.
func (s *Snapshot) Clone() *Snapshot {
	if s == nil {
		return nil
	}
	c := *s
	c.Warnings = slices.Clone(s.Warnings)
	c.GPUs = make([]GPU, len(s.GPUs))
	for i, g := range s.GPUs {
		g.Processes = slices.Clone(g.Processes)
		for j := range g.Processes {
			g.Processes[j].Cmdline = slices.Clone(g.Processes[j].Cmdline)
		}
		c.GPUs[i] = g
	}
	if s.GPUs == nil {
		c.GPUs = nil
	}
	return &c
}

// Fingerprint is a stable hash of what a plan depends on: per GPU its index,
// UUID, name and memory figures and the PIDs and memory of its processes, plus
// the driver versions. Source, host, time, warnings and process names are left
// out, so the same machine read through NVML or through a file written from
// it gives the same fingerprint. Plans record it to notice that the GPUs have
// changed since the plan was made.
func (s *Snapshot) Fingerprint() string {
	h := sha256.New()
	var buf [8]byte
	num := func(v uint64) {
		binary.BigEndian.PutUint64(buf[:], v)
		h.Write(buf[:])
	}
	str := func(v string) { // length-prefixed, so field boundaries cannot shift
		num(uint64(len(v)))
		h.Write([]byte(v))
	}
	if s == nil {
		return "sha256:" + hex.EncodeToString(h.Sum(nil))
	}
	str("roofline-gpu-v1")
	str(s.DriverVersion)
	str(s.CUDADriverVersion)
	gpus := slices.Clone(s.GPUs)
	slices.SortStableFunc(gpus, func(a, b GPU) int { return a.Index - b.Index })
	num(uint64(len(gpus)))
	for _, g := range gpus {
		num(uint64(int64(g.Index)))
		str(g.UUID)
		str(g.Name)
		num(g.MemoryTotalBytes)
		num(g.MemoryReservedBytes)
		num(g.MemoryUsedBytes)
		num(g.MemoryFreeBytes)
		procs := slices.Clone(g.Processes)
		slices.SortStableFunc(procs, func(a, b Process) int { return a.PID - b.PID })
		num(uint64(len(procs)))
		for _, p := range procs {
			num(uint64(int64(p.PID)))
			num(p.UsedMemoryBytes)
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// normalize sorts GPUs by index and processes by PID, and turns nil process
// lists into empty ones, so that equal snapshots are written byte-equal.
func (s *Snapshot) normalize() {
	slices.SortStableFunc(s.GPUs, func(a, b GPU) int { return a.Index - b.Index })
	for i := range s.GPUs {
		g := &s.GPUs[i]
		if g.Processes == nil {
			g.Processes = []Process{}
		}
		slices.SortStableFunc(g.Processes, func(a, b Process) int { return a.PID - b.PID })
	}
	if s.GPUs == nil {
		s.GPUs = []GPU{}
	}
}
