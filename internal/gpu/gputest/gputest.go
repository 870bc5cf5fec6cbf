// Package gputest builds GPU snapshots for tests of packages that plan against
// GPUs (vram, plan, apply, the rehearsal engine). Snapshots are deterministic:
// the same calls give byte-equal JSON and the same fingerprint.
package gputest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"time"

	"github.com/roofline/roofline/internal/gpu"
)

// Sizes for readable options: gputest.WithUsed(0, 20*gputest.GiB).
const (
	MiB uint64 = 1 << 20
	GiB uint64 = 1 << 30
)

// Defaults of every built snapshot; options change them.
const (
	DefaultHost          = "gpu-host-01"
	DefaultDriverVersion = "550.54.15"
	DefaultCUDAVersion   = "12.4"
)

// DefaultTakenAt is the snapshot time of built snapshots.
var DefaultTakenAt = time.Date(2026, 1, 15, 9, 30, 0, 0, time.UTC)

// busIDs is the PCI layout of an 8-GPU HGX board (DGX H100), in NVML order.
var busIDs = []string{"18", "2a", "3a", "5d", "9a", "ab", "ba", "db"}

// Option changes a built snapshot.
type Option func(*gpu.Snapshot)

// H100s returns n idle H100 80GB HBM3 GPUs.
func H100s(n int, opts ...Option) *gpu.Snapshot { return Build("H100", n, opts...) }

// H200s returns n idle H200 GPUs.
func H200s(n int, opts ...Option) *gpu.Snapshot { return Build("H200", n, opts...) }

// A100s40 returns n idle A100-SXM4-40GB GPUs.
func A100s40(n int, opts ...Option) *gpu.Snapshot { return Build("A100-40GB", n, opts...) }

// A100s80 returns n idle A100-SXM4-80GB GPUs.
func A100s80(n int, opts ...Option) *gpu.Snapshot { return Build("A100-80GB", n, opts...) }

// L4s returns n idle L4 GPUs.
func L4s(n int, opts ...Option) *gpu.Snapshot { return Build("L4", n, opts...) }

// Build returns n idle GPUs of a gpu.Preset kind, then applies opts in order.
// An unknown preset is a bug in the test and panics.
func Build(preset string, n int, opts ...Option) *gpu.Snapshot {
	p, ok := gpu.Preset(preset)
	if !ok {
		panic(fmt.Sprintf("gputest: unknown GPU preset %q (known: %v)", preset, gpu.PresetNames()))
	}
	s := &gpu.Snapshot{
		FormatVersion:     gpu.FormatVersion,
		Source:            "nvml",
		Host:              DefaultHost,
		TakenAt:           DefaultTakenAt,
		DriverVersion:     DefaultDriverVersion,
		CUDADriverVersion: DefaultCUDAVersion,
		GPUs:              make([]gpu.GPU, n),
	}
	for i := range n {
		g := p
		g.Index = i
		g.UUID = uuidFor(preset, i)
		g.PCIBusID = busID(i)
		g.Processes = []gpu.Process{}
		s.GPUs[i] = g
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// WithUsed marks bytes on GPU index as used by something that is not a
// listed compute process (a display, another container's context).
func WithUsed(index int, bytes uint64) Option {
	return func(s *gpu.Snapshot) { use(s, index, bytes) }
}

// WithProcess adds a compute process using bytes on GPU index; its name is the
// base name of the first cmdline word, cut to 15 bytes as /proc/PID/comm is.
// With no cmdline the process looks as one that exited before it was named.
func WithProcess(index, pid int, bytes uint64, cmdline ...string) Option {
	return func(s *gpu.Snapshot) {
		g := use(s, index, bytes)
		name := ""
		if len(cmdline) > 0 {
			name = filepath.Base(cmdline[0])
			if len(name) > 15 {
				name = name[:15]
			}
		}
		g.Processes = append(g.Processes, gpu.Process{PID: pid, UsedMemoryBytes: bytes, Name: name, Cmdline: cmdline})
	}
}

// WithHost sets the host name.
func WithHost(host string) Option { return func(s *gpu.Snapshot) { s.Host = host } }

// WithTakenAt sets the snapshot time.
func WithTakenAt(t time.Time) Option { return func(s *gpu.Snapshot) { s.TakenAt = t.UTC() } }

// WithDriver sets the driver and CUDA driver versions.
func WithDriver(driver, cuda string) Option {
	return func(s *gpu.Snapshot) { s.DriverVersion, s.CUDADriverVersion = driver, cuda }
}

func use(s *gpu.Snapshot, index int, bytes uint64) *gpu.GPU {
	g, ok := s.GPU(index)
	if !ok {
		panic(fmt.Sprintf("gputest: no GPU %d in a snapshot of %d", index, len(s.GPUs)))
	}
	if bytes > g.MemoryFreeBytes {
		panic(fmt.Sprintf("gputest: GPU %d has %d bytes free, cannot use %d", index, g.MemoryFreeBytes, bytes))
	}
	g.MemoryUsedBytes += bytes
	g.MemoryFreeBytes -= bytes
	return g
}

// uuidFor makes a stable, real-looking GPU UUID.
func uuidFor(preset string, i int) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s/%d", preset, i)))
	x := hex.EncodeToString(h[:16])
	return "GPU-" + x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
}

func busID(i int) string {
	if i < len(busIDs) {
		return "00000000:" + busIDs[i] + ":00.0"
	}
	return fmt.Sprintf("00000000:%02x:00.0", 0xe0+i-len(busIDs))
}

// Static returns an Inventory that gives a copy of s every time.
func Static(s *gpu.Snapshot) gpu.Inventory { return static{s} }

type static struct{ s *gpu.Snapshot }

func (st static) Snapshot(ctx context.Context) (*gpu.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return st.s.Clone(), nil
}

// Failing returns an Inventory whose Snapshot fails with err (for example
// one wrapping gpu.ErrNVMLUnavailable).
func Failing(err error) gpu.Inventory { return failing{err} }

type failing struct{ err error }

func (f failing) Snapshot(context.Context) (*gpu.Snapshot, error) { return nil, f.err }
