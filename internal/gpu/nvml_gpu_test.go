//go:build gpu && linux && cgo

package gpu

// Runs against the real driver: go test -tags gpu ./internal/gpu/
//
// ROOFLINE_SNAPSHOT_OUT=path writes the snapshot there (to commit as a
// fixture). ROOFLINE_CUDA_MEM_GET_INFO="free total" (bytes, GPU 0, from
// python3 -c "import torch; print(*torch.cuda.mem_get_info())") compares
// NVML's figures with what the CUDA runtime reports.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/dl"
)

func requireLibNvidiaML(t *testing.T) {
	t.Helper()
	lib := dl.New("libnvidia-ml.so.1", dl.RTLD_LAZY|dl.RTLD_GLOBAL)
	if err := lib.Open(); err != nil {
		t.Skipf("this test needs libnvidia-ml.so.1: %v", err)
	}
	_ = lib.Close()
}

func TestRealNVML(t *testing.T) {
	requireLibNvidiaML(t)
	s, err := NewNVML().Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(s.GPUs) == 0 || s.DriverVersion == "" || s.CUDADriverVersion == "" {
		t.Fatalf("snapshot without GPUs or versions: %+v", s)
	}
	for _, w := range s.Warnings {
		t.Logf("warning: %s", w)
	}
	for _, g := range s.GPUs {
		t.Logf("GPU %d %s %s: total %d reserved %d used %d free %d (MiB), cc %s, MIG %s, %d processes",
			g.Index, g.Name, g.PCIBusID, g.MemoryTotalBytes>>20, g.MemoryReservedBytes>>20,
			g.MemoryUsedBytes>>20, g.MemoryFreeBytes>>20, g.ComputeCapability, g.MIGMode, len(g.Processes))
		if !strings.HasPrefix(g.UUID, "GPU-") && !strings.HasPrefix(g.UUID, "MIG-") || g.Name == "" || g.ComputeCapability == "" {
			t.Errorf("GPU %d: identity incomplete: %+v", g.Index, g)
		}
		if g.MemoryTotalBytes == 0 || g.MemoryReservedBytes >= g.MemoryTotalBytes || g.MemoryFreeBytes > g.CUDATotalBytes() {
			t.Errorf("GPU %d: memory figures inconsistent: %+v", g.Index, g)
		}
	}
	var buf bytes.Buffer
	if err := WriteSnapshot(&buf, s); err != nil {
		t.Fatal(err)
	}
	back, err := DecodeSnapshot(buf.Bytes())
	if err != nil {
		t.Fatalf("own snapshot does not read back: %v\n%s", err, buf.String())
	}
	if back.Fingerprint() != s.Fingerprint() {
		t.Error("fingerprint changed through the file format")
	}
	if out := os.Getenv("ROOFLINE_SNAPSHOT_OUT"); out != "" {
		if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if info := os.Getenv("ROOFLINE_CUDA_MEM_GET_INFO"); info != "" {
		var free, total uint64
		if _, err := fmt.Sscan(info, &free, &total); err != nil {
			t.Fatalf("ROOFLINE_CUDA_MEM_GET_INFO=%q: %v", info, err)
		}
		g := s.GPUs[0]
		t.Logf("CUDA total %d vs NVML total-reserved %d (diff %d MiB); CUDA free %d vs NVML free %d (diff %d MiB)",
			total, g.CUDATotalBytes(), (int64(total)-int64(g.CUDATotalBytes()))>>20,
			free, g.MemoryFreeBytes, (int64(free)-int64(g.MemoryFreeBytes))>>20)
		if d := int64(total) - int64(g.CUDATotalBytes()); d < -64<<20 || d > 64<<20 {
			t.Errorf("CUDA total differs from NVML total minus reserved by %d MiB", d>>20)
		}
	}
}
