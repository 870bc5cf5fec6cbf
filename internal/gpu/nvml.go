//go:build linux && cgo

package gpu

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// nvmlInventory reads the GPUs through NVML. Each Snapshot is one
// Init/Shutdown pair, so a long-running roofline holds no driver handle
// between plans.
type nvmlInventory struct {
	lib      nvml.Interface
	procRoot string // "/proc"; tests point it at a fake tree
	hostname func() (string, error)
	now      func() time.Time
}

var _ Inventory = (*nvmlInventory)(nil)

// NewNVML returns the Inventory of this host's GPUs through NVML
// (libnvidia-ml.so.1, loaded on the first Snapshot). Without a driver,
// Snapshot returns an error wrapping ErrNVMLUnavailable.
func NewNVML() Inventory { return newNVMLInventory(nvml.New()) }

func newNVMLInventory(lib nvml.Interface) *nvmlInventory {
	return &nvmlInventory{lib: lib, procRoot: "/proc", hostname: os.Hostname, now: time.Now}
}

// memoryInfoV2Symbol is looked up before calling the v2 memory function: an
// older driver does not export it, and calling a missing symbol through cgo
// would abort the process instead of returning an error.
const memoryInfoV2Symbol = "nvmlDeviceGetMemoryInfo_v2"

func (n *nvmlInventory) Snapshot(ctx context.Context) (*Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if ret := n.lib.Init(); ret != nvml.SUCCESS {
		return nil, initError(ret)
	}
	defer n.lib.Shutdown() // nothing useful to do if releasing the handle fails

	s := &Snapshot{
		FormatVersion: FormatVersion,
		Source:        "nvml",
		TakenAt:       n.now().UTC().Truncate(time.Second),
	}
	if host, err := n.hostname(); err == nil {
		s.Host = host
	}
	if v, ret := n.lib.SystemGetDriverVersion(); ret == nvml.SUCCESS {
		s.DriverVersion = v
	} else {
		s.Warnings = append(s.Warnings, "driver version: "+ret.Error())
	}
	if v, ret := n.lib.SystemGetCudaDriverVersion(); ret == nvml.SUCCESS {
		s.CUDADriverVersion = formatCUDAVersion(v)
	} else {
		s.Warnings = append(s.Warnings, "CUDA driver version: "+ret.Error())
	}
	count, ret := n.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("NVML could not count the GPUs: %v. Check `nvidia-smi` on this host", ret)
	}
	hasV2 := n.lib.Extensions().LookupSymbol(memoryInfoV2Symbol) == nil
	s.GPUs = make([]GPU, 0, count)
	for i := range count {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		dev, ret := n.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return nil, deviceError(i, "could not be opened", ret)
		}
		g, warnings, err := n.readDevice(i, dev, hasV2)
		if err != nil {
			return nil, err
		}
		s.GPUs = append(s.GPUs, g)
		s.Warnings = append(s.Warnings, warnings...)
	}
	s.normalize()
	return s, nil
}

// readDevice reads one GPU. Identity and memory are required; what a plan can
// do without (PCI id, compute capability, MIG mode, processes) becomes a
// warning.
func (n *nvmlInventory) readDevice(i int, dev nvml.Device, hasV2 bool) (GPU, []string, error) {
	g := GPU{Index: i}
	var warnings []string
	warn := func(what string, ret nvml.Return) {
		warnings = append(warnings, fmt.Sprintf("GPU %d: %s: %v", i, what, ret))
	}
	var ret nvml.Return
	if g.UUID, ret = dev.GetUUID(); ret != nvml.SUCCESS {
		return g, nil, deviceError(i, "UUID", ret)
	}
	if g.Name, ret = dev.GetName(); ret != nvml.SUCCESS {
		return g, nil, deviceError(i, "name", ret)
	}
	if err := n.readMemory(&g, dev, hasV2); err != nil {
		return g, nil, err
	}
	if pci, ret := dev.GetPciInfo(); ret == nvml.SUCCESS {
		g.PCIBusID = cString(pci.BusId[:])
		if g.PCIBusID == "" {
			g.PCIBusID = cString(pci.BusIdLegacy[:])
		}
	} else {
		warn("PCI bus id", ret)
	}
	if major, minor, ret := dev.GetCudaComputeCapability(); ret == nvml.SUCCESS {
		g.ComputeCapability = fmt.Sprintf("%d.%d", major, minor)
	} else {
		warn("compute capability", ret)
	}
	switch current, _, ret := dev.GetMigMode(); ret {
	case nvml.SUCCESS:
		g.MIGMode = MIGDisabled
		if current == nvml.DEVICE_MIG_ENABLE {
			g.MIGMode = MIGEnabled
		}
	case nvml.ERROR_NOT_SUPPORTED:
		g.MIGMode = MIGUnsupported
	default:
		warn("MIG mode", ret)
	}
	infos, ret := dev.GetComputeRunningProcesses()
	if ret != nvml.SUCCESS {
		// Keep the GPU: its memory figures still count. The warning says that
		// foreign processes on it are unknown.
		warn("compute processes could not be listed, so foreign processes on it are unknown", ret)
		return g, warnings, nil
	}
	g.Processes = n.processes(infos)
	return g, warnings, nil
}

func (n *nvmlInventory) readMemory(g *GPU, dev nvml.Device, hasV2 bool) error {
	if hasV2 {
		m, ret := dev.GetMemoryInfo_v2()
		switch ret {
		case nvml.SUCCESS:
			g.MemoryTotalBytes, g.MemoryReservedBytes = m.Total, m.Reserved
			g.MemoryUsedBytes, g.MemoryFreeBytes = m.Used, m.Free
			return nil
		case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_FUNCTION_NOT_FOUND, nvml.ERROR_ARGUMENT_VERSION_MISMATCH:
			// An older driver: the v1 call below is the best there is.
		default:
			return deviceError(g.Index, "memory", ret)
		}
	}
	m, ret := dev.GetMemoryInfo()
	if ret != nvml.SUCCESS {
		return deviceError(g.Index, "memory", ret)
	}
	g.MemoryTotalBytes, g.MemoryUsedBytes, g.MemoryFreeBytes = m.Total, m.Used, m.Free
	return nil
}

// processes converts NVML's list, merging duplicate PIDs (some drivers have
// listed a process twice) and naming each from /proc.
func (n *nvmlInventory) processes(infos []nvml.ProcessInfo) []Process {
	out := make([]Process, 0, len(infos))
	at := map[int]int{}
	for _, info := range infos {
		pid := int(info.Pid)
		used := info.UsedGpuMemory
		if used == ^uint64(0) { // NVML_VALUE_NOT_AVAILABLE
			used = 0
		}
		if j, dup := at[pid]; dup {
			out[j].UsedMemoryBytes = max(out[j].UsedMemoryBytes, used)
			continue
		}
		name, cmdline := readProc(n.procRoot, pid)
		at[pid] = len(out)
		out = append(out, Process{PID: pid, UsedMemoryBytes: used, Name: name, Cmdline: cmdline})
	}
	return out
}

// readProc returns a process's name and command line; both are empty when
// the process has exited (or is not visible from this PID namespace).
func readProc(root string, pid int) (string, []string) {
	dir := filepath.Join(root, strconv.Itoa(pid))
	var name string
	if b, err := os.ReadFile(filepath.Join(dir, "comm")); err == nil {
		name = strings.TrimRight(string(b), "\n")
	}
	var cmdline []string
	if b, err := os.ReadFile(filepath.Join(dir, "cmdline")); err == nil && len(b) > 0 {
		b = bytes.TrimRight(b, "\x00")
		for _, arg := range bytes.Split(b, []byte{0}) {
			cmdline = append(cmdline, string(arg))
		}
	}
	return name, cmdline
}

// initError explains why NVML cannot start and what to do instead.
func initError(ret nvml.Return) error {
	switch ret {
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return fmt.Errorf("%w: no NVIDIA driver on this machine (libnvidia-ml.so.1 cannot be loaded). %s", ErrNVMLUnavailable, useInventoryHint)
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return fmt.Errorf("%w: the NVIDIA kernel driver is not loaded (check `nvidia-smi` and `dmesg`). %s", ErrNVMLUnavailable, useInventoryHint)
	case nvml.ERROR_NO_PERMISSION:
		return fmt.Errorf("%w: no permission to open the NVIDIA devices (/dev/nvidia*); run as a user that may use the GPUs. %s", ErrNVMLUnavailable, useInventoryHint)
	}
	return fmt.Errorf("%w: NVML failed to start: %v. Check `nvidia-smi` on this host. %s", ErrNVMLUnavailable, ret, useInventoryHint)
}

func deviceError(i int, what string, ret nvml.Return) error {
	hint := "Check `nvidia-smi` on this host."
	if ret == nvml.ERROR_GPU_IS_LOST {
		hint = "The GPU has fallen off the bus: check `dmesg` for Xid errors; it usually needs a reset or a reboot."
	}
	return fmt.Errorf("NVML: GPU %d: %s: %v. %s", i, what, ret, hint)
}

// formatCUDAVersion turns NVML's integer (12040) into "12.4".
func formatCUDAVersion(v int) string {
	if v <= 0 {
		return ""
	}
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}

// cString converts a NUL-terminated C char array.
func cString(b []int8) string {
	buf := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		buf = append(buf, byte(c))
	}
	return string(buf)
}
