package cli

import (
	"testing"

	"github.com/roofline/roofline/internal/gpu/gputest"
)

func TestGPUMemoryOf(t *testing.T) {
	snap := gputest.H100s(2, gputest.WithProcess(0, 100, 40<<30, "engine"), gputest.WithProcess(1, 101, 30<<30, "worker"),
		gputest.WithProcess(1, 999, 5<<30, "foreign"))
	if got := gpuMemoryOf(snap, []int{100, 101}); got != 70<<30 {
		t.Errorf("server's processes hold %d bytes, want %d", got, uint64(70<<30))
	}
	if got := gpuMemoryOf(snap, nil); got != 0 {
		t.Errorf("no pids: %d", got)
	}
}
