//go:build linux && cgo

package gpu

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

const mib = 1 << 20

var testTime = time.Date(2026, 2, 3, 4, 5, 6, 789, time.UTC)

// machine wraps a go-nvml mock server with what its ready-made devices leave
// unset: v2 memory, PCI bus ids, processes. Every device starts idle with
// reserved memory; tests change single devices.
type machine struct {
	*server.Server
	procRoot string
}

func newMachine(t *testing.T, srv *server.Server, totalMiB, reservedMiB uint64) *machine {
	t.Helper()
	m := &machine{Server: srv, procRoot: t.TempDir()}
	for i := range srv.Devices {
		d := m.dev(i)
		d.PciBusID = "00000000:" + strconv.FormatInt(int64(0x18+i*0x10), 16) + ":00.0"
		m.setMemory(i, totalMiB*mib, reservedMiB*mib, 0)
		d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
			var p nvml.PciInfo
			for j, c := range d.PciBusID {
				p.BusId[j] = int8(c)
			}
			return p, nvml.SUCCESS
		}
		d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.SUCCESS }
	}
	return m
}

func (m *machine) dev(i int) *server.Device { return m.Devices[i].(*server.Device) }

// setMemory sets v2 (and the matching v1) figures of device i.
func (m *machine) setMemory(i int, total, reserved, used uint64) {
	d := m.dev(i)
	v2 := nvml.Memory_v2{Total: total, Reserved: reserved, Used: used, Free: total - reserved - used}
	d.GetMemoryInfo_v2Func = func() (nvml.Memory_v2, nvml.Return) { return v2, nvml.SUCCESS }
	// v1 on a driver with v2 counts the reserved memory as used.
	d.MemoryInfo = nvml.Memory{Total: total, Used: reserved + used, Free: total - reserved - used}
}

func (m *machine) setProcesses(i int, procs ...nvml.ProcessInfo) {
	m.dev(i).GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) { return procs, nvml.SUCCESS }
}

// addProc writes a fake /proc/PID entry.
func (m *machine) addProc(t *testing.T, pid int, comm string, args ...string) {
	t.Helper()
	dir := filepath.Join(m.procRoot, strconv.Itoa(pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmdline := strings.Join(args, "\x00") + "\x00"
	if err := os.WriteFile(filepath.Join(dir, "comm"), []byte(comm+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cmdline"), []byte(cmdline), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (m *machine) inventory() *nvmlInventory {
	inv := newNVMLInventory(m.Server)
	inv.procRoot = m.procRoot
	inv.hostname = func() (string, error) { return "dgx-01", nil }
	inv.now = func() time.Time { return testTime }
	return inv
}

func TestNVMLSnapshotDGXH100(t *testing.T) {
	m := newMachine(t, dgxh100.New(), 81559, 479)
	m.setMemory(3, 81559*mib, 479*mib, 4608*mib+2*mib)
	m.addProc(t, 4242, "python3", "python3", "train.py", "--epochs", "3")
	m.setProcesses(3,
		nvml.ProcessInfo{Pid: 4242, UsedGpuMemory: 4608 * mib},
		nvml.ProcessInfo{Pid: 999999, UsedGpuMemory: 2 * mib}, // exited before /proc was read
	)

	s, err := m.inventory().Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(m.InitCalls()) != 1 || len(m.ShutdownCalls()) != 1 {
		t.Errorf("Init/Shutdown calls = %d/%d, want 1/1", len(m.InitCalls()), len(m.ShutdownCalls()))
	}
	if s.FormatVersion != FormatVersion || s.Source != "nvml" || s.Host != "dgx-01" ||
		!s.TakenAt.Equal(testTime.Truncate(time.Second)) || s.DriverVersion != "550.54.15" || s.CUDADriverVersion != "12.4" {
		t.Errorf("header = %d %q %q %v %q %q", s.FormatVersion, s.Source, s.Host, s.TakenAt, s.DriverVersion, s.CUDADriverVersion)
	}
	if len(s.Warnings) != 0 {
		t.Errorf("warnings: %q", s.Warnings)
	}
	if len(s.GPUs) != 8 {
		t.Fatalf("%d GPUs, want 8", len(s.GPUs))
	}
	for i, g := range s.GPUs {
		d := m.dev(i)
		want := GPU{
			Index: i, UUID: d.UUID, Name: "NVIDIA H100 80GB HBM3", PCIBusID: d.PciBusID,
			MemoryTotalBytes: 81559 * mib, MemoryReservedBytes: 479 * mib,
			MemoryUsedBytes: 0, MemoryFreeBytes: (81559 - 479) * mib,
			ComputeCapability: "9.0", MIGMode: MIGDisabled, Processes: []Process{},
		}
		if i == 3 {
			want.MemoryUsedBytes = 4610 * mib
			want.MemoryFreeBytes = (81559 - 479 - 4610) * mib
			want.Processes = []Process{
				{PID: 4242, UsedMemoryBytes: 4608 * mib, Name: "python3", Cmdline: []string{"python3", "train.py", "--epochs", "3"}},
				{PID: 999999, UsedMemoryBytes: 2 * mib},
			}
		}
		if !reflect.DeepEqual(g, want) {
			t.Errorf("GPU %d:\n got %+v\nwant %+v", i, g, want)
		}
	}
	// The figure the engines size from.
	if got := s.GPUs[0].CUDATotalBytes(); got != 81080*mib {
		t.Errorf("CUDATotalBytes = %d MiB, want 81080", got/mib)
	}
}

func TestNVMLMemoryFallback(t *testing.T) {
	for _, tc := range []struct {
		name       string
		symbolErr  error       // LookupSymbol result for the v2 function
		v2Ret      nvml.Return // what the v2 call returns when made
		wantV1     bool
		wantErrSub string
	}{
		{name: "v2 available", v2Ret: nvml.SUCCESS},
		{name: "driver without the v2 symbol", symbolErr: errors.New("undefined symbol"), v2Ret: nvml.ERROR_UNKNOWN, wantV1: true},
		{name: "v2 not supported", v2Ret: nvml.ERROR_NOT_SUPPORTED, wantV1: true},
		{name: "v2 function not found", v2Ret: nvml.ERROR_FUNCTION_NOT_FOUND, wantV1: true},
		{name: "v2 version mismatch", v2Ret: nvml.ERROR_ARGUMENT_VERSION_MISMATCH, wantV1: true},
		{name: "v2 fails otherwise", v2Ret: nvml.ERROR_GPU_IS_LOST, wantErrSub: "GPU 0: memory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMachine(t, dgxa100.New(), 40960, 512)
			m.setMemory(0, 40960*mib, 512*mib, 1000*mib)
			m.LookupSymbolFunc = func(name string) error {
				if name == memoryInfoV2Symbol {
					return tc.symbolErr
				}
				return nil
			}
			if tc.v2Ret != nvml.SUCCESS {
				m.dev(0).GetMemoryInfo_v2Func = func() (nvml.Memory_v2, nvml.Return) {
					if tc.symbolErr != nil {
						t.Error("v2 memory called although the driver lacks the symbol")
					}
					return nvml.Memory_v2{}, tc.v2Ret
				}
			}
			s, err := m.inventory().Snapshot(context.Background())
			if tc.wantErrSub != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrSub) || !strings.Contains(err.Error(), "dmesg") {
					t.Fatalf("err = %v, want one about %q with advice", err, tc.wantErrSub)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			g := s.GPUs[0]
			wantReserved, wantUsed := uint64(512*mib), uint64(1000*mib)
			if tc.wantV1 {
				wantReserved, wantUsed = 0, 1512*mib
			}
			if g.MemoryTotalBytes != 40960*mib || g.MemoryReservedBytes != wantReserved ||
				g.MemoryUsedBytes != wantUsed || g.MemoryFreeBytes != (40960-1512)*mib {
				t.Errorf("memory total/reserved/used/free = %d/%d/%d/%d MiB", g.MemoryTotalBytes/mib,
					g.MemoryReservedBytes/mib, g.MemoryUsedBytes/mib, g.MemoryFreeBytes/mib)
			}
		})
	}
}

func TestNVMLProcessListFails(t *testing.T) {
	m := newMachine(t, dgxh200.New(), 143771, 616)
	m.dev(5).GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		return nil, nvml.ERROR_NO_PERMISSION
	}
	m.addProc(t, 77, "vllm", "/usr/bin/python3", "-m", "vllm.entrypoints.openai.api_server")
	m.setProcesses(2, nvml.ProcessInfo{Pid: 77, UsedGpuMemory: 1000 * mib})

	s, err := m.inventory().Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(s.GPUs) != 8 {
		t.Fatalf("%d GPUs, want all 8 kept", len(s.GPUs))
	}
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "GPU 5") || !strings.Contains(s.Warnings[0], "foreign processes on it are unknown") {
		t.Errorf("warnings = %q, want one about GPU 5's processes", s.Warnings)
	}
	if got := s.GPUs[2].Processes; len(got) != 1 || got[0].Name != "vllm" || got[0].Cmdline[1] != "-m" {
		t.Errorf("GPU 2 processes = %+v", got)
	}
	if s.GPUs[5].MemoryTotalBytes != 143771*mib {
		t.Errorf("GPU 5 memory lost: %+v", s.GPUs[5])
	}
}

func TestNVMLProcessesMergedAndUnavailableMemory(t *testing.T) {
	m := newMachine(t, dgxh100.New(), 81559, 479)
	m.setProcesses(0,
		nvml.ProcessInfo{Pid: 30, UsedGpuMemory: 100 * mib},
		nvml.ProcessInfo{Pid: 10, UsedGpuMemory: ^uint64(0)}, // NVML_VALUE_NOT_AVAILABLE
		nvml.ProcessInfo{Pid: 30, UsedGpuMemory: 300 * mib},
	)
	s, err := m.inventory().Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []Process{{PID: 10}, {PID: 30, UsedMemoryBytes: 300 * mib}}
	if got := s.GPUs[0].Processes; !reflect.DeepEqual(got, want) {
		t.Errorf("processes = %+v, want %+v", got, want)
	}
}

func TestNVMLOptionalFigures(t *testing.T) {
	m := newMachine(t, dgxh100.New(), 81559, 479)
	m.dev(1).GetMigModeFunc = func() (int, int, nvml.Return) { return nvml.DEVICE_MIG_ENABLE, nvml.DEVICE_MIG_ENABLE, nvml.SUCCESS }
	m.dev(2).GetMigModeFunc = func() (int, int, nvml.Return) { return 0, 0, nvml.ERROR_NOT_SUPPORTED }
	m.dev(3).GetMigModeFunc = func() (int, int, nvml.Return) { return 0, 0, nvml.ERROR_UNKNOWN }
	m.dev(4).GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) { return nvml.PciInfo{}, nvml.ERROR_UNKNOWN }
	m.dev(5).GetCudaComputeCapabilityFunc = func() (int, int, nvml.Return) { return 0, 0, nvml.ERROR_UNKNOWN }
	m.dev(6).GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
		var p nvml.PciInfo // old drivers fill only the legacy field
		for j, c := range "0000:9a:00.0" {
			p.BusIdLegacy[j] = int8(c)
		}
		return p, nvml.SUCCESS
	}
	m.SystemGetCudaDriverVersionFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }

	s, err := m.inventory().Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		i              int
		mig, cc, busID string
	}{
		{1, MIGEnabled, "9.0", m.dev(1).PciBusID},
		{2, MIGUnsupported, "9.0", m.dev(2).PciBusID},
		{3, "", "9.0", m.dev(3).PciBusID},
		{4, MIGDisabled, "9.0", ""},
		{5, MIGDisabled, "", m.dev(5).PciBusID},
		{6, MIGDisabled, "9.0", "0000:9a:00.0"},
	} {
		g := s.GPUs[tc.i]
		if g.MIGMode != tc.mig || g.ComputeCapability != tc.cc || g.PCIBusID != tc.busID {
			t.Errorf("GPU %d: mig %q cc %q bus %q, want %q %q %q", tc.i, g.MIGMode, g.ComputeCapability, g.PCIBusID, tc.mig, tc.cc, tc.busID)
		}
	}
	joined := strings.Join(s.Warnings, "\n")
	for _, want := range []string{"CUDA driver version", "GPU 3: MIG mode", "GPU 4: PCI bus id", "GPU 5: compute capability"} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings lack %q:\n%s", want, joined)
		}
	}
	if s.CUDADriverVersion != "" {
		t.Errorf("CUDA version = %q after a failure", s.CUDADriverVersion)
	}
}

func TestNVMLInitFailure(t *testing.T) {
	for _, tc := range []struct {
		ret  nvml.Return
		want string
	}{
		{nvml.ERROR_LIBRARY_NOT_FOUND, "no NVIDIA driver on this machine"},
		{nvml.ERROR_DRIVER_NOT_LOADED, "kernel driver is not loaded"},
		{nvml.ERROR_NO_PERMISSION, "no permission"},
		{nvml.ERROR_UNKNOWN, "NVML failed to start"},
	} {
		t.Run(tc.ret.Error(), func(t *testing.T) {
			m := newMachine(t, dgxh100.New(), 81559, 479)
			m.InitFunc = func() nvml.Return { return tc.ret }
			s, err := m.inventory().Snapshot(context.Background())
			if s != nil || !errors.Is(err, ErrNVMLUnavailable) {
				t.Fatalf("Snapshot = %v, %v; want ErrNVMLUnavailable", s, err)
			}
			for _, sub := range []string{tc.want, "Use -inventory FILE", "roofline gpu -json"} {
				if !strings.Contains(err.Error(), sub) {
					t.Errorf("error %q lacks %q", err, sub)
				}
			}
			if n := len(m.ShutdownCalls()); n != 0 {
				t.Errorf("Shutdown called %d times after a failed Init", n)
			}
		})
	}
}

func TestNVMLDeviceErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(m *machine)
		want  string
	}{
		{"count", func(m *machine) {
			m.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
		}, "could not count the GPUs"},
		{"handle lost", func(m *machine) {
			m.DeviceGetHandleByIndexFunc = func(int) (nvml.Device, nvml.Return) { return nil, nvml.ERROR_GPU_IS_LOST }
		}, "fallen off the bus"},
		{"uuid", func(m *machine) {
			m.dev(2).GetUUIDFunc = func() (string, nvml.Return) { return "", nvml.ERROR_UNKNOWN }
		}, "GPU 2: UUID"},
		{"name", func(m *machine) {
			m.dev(1).GetNameFunc = func() (string, nvml.Return) { return "", nvml.ERROR_UNKNOWN }
		}, "GPU 1: name"},
		{"v1 memory", func(m *machine) {
			m.LookupSymbolFunc = func(string) error { return errors.New("missing") }
			m.dev(0).GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { return nvml.Memory{}, nvml.ERROR_UNKNOWN }
		}, "GPU 0: memory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMachine(t, dgxh100.New(), 81559, 479)
			tc.setup(m)
			s, err := m.inventory().Snapshot(context.Background())
			if s != nil || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Snapshot = %v, %v; want error with %q", s, err, tc.want)
			}
			if len(m.ShutdownCalls()) != 1 {
				t.Errorf("Shutdown calls = %d, want 1 (handle released on errors too)", len(m.ShutdownCalls()))
			}
		})
	}
}

func TestNVMLCancelled(t *testing.T) {
	m := newMachine(t, dgxh100.New(), 81559, 479)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.inventory().Snapshot(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if len(m.InitCalls()) != 0 {
		t.Error("NVML initialised for a cancelled request")
	}
}

func TestFormatCUDAVersion(t *testing.T) {
	for in, want := range map[int]string{12040: "12.4", 12080: "12.8", 11080: "11.8", 13000: "13.0", 12010: "12.1", 0: "", -1: ""} {
		if got := formatCUDAVersion(in); got != want {
			t.Errorf("formatCUDAVersion(%d) = %q, want %q", in, got, want)
		}
	}
}

// TestNewNVMLWithoutDriver runs the real library loader: on a machine without
// the NVIDIA driver it must give the clear error, not crash.
func TestNewNVMLWithoutDriver(t *testing.T) {
	s, err := NewNVML().Snapshot(context.Background())
	if err == nil {
		t.Skipf("an NVIDIA driver is present (%d GPUs); the gpu-tagged test covers this machine", len(s.GPUs))
	}
	if !errors.Is(err, ErrNVMLUnavailable) || !strings.Contains(err.Error(), "Use -inventory FILE") {
		t.Fatalf("err = %v, want the clear ErrNVMLUnavailable message", err)
	}
}
