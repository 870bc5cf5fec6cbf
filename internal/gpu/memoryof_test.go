package gpu_test

import (
	"testing"

	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/gpu/gputest"
)

func TestSnapshotMemoryOf(t *testing.T) {
	snap := gputest.H100s(2, gputest.WithProcess(0, 100, 40<<30, "engine"), gputest.WithProcess(1, 101, 30<<30, "worker"),
		gputest.WithProcess(1, 999, 5<<30, "foreign"))
	if got := snap.MemoryOf([]int{100, 101}); got != 70<<30 {
		t.Errorf("server's processes hold %d bytes, want %d", got, uint64(70<<30))
	}
	if got := snap.MemoryOf(nil); got != 0 {
		t.Errorf("no pids: %d", got)
	}
	var none *gpu.Snapshot
	if none.MemoryOf([]int{1}) != 0 {
		t.Error("no snapshot holds memory")
	}
}
