package views

import (
	"slices"
	"testing"

	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/gpu/gputest"
)

func TestVRAMGPUsOf(t *testing.T) {
	snap := gputest.H100s(3, gputest.WithUsed(1, 10<<30))
	g0, g1, g2 := &snap.GPUs[0], &snap.GPUs[1], &snap.GPUs[2]
	small := *g2
	small.MemoryTotalBytes -= 1 << 30 // a GPU with less memory, as a MIG slice or another board
	small.Name = "smaller"
	for _, c := range []struct {
		name      string
		picked    []*gpu.GPU
		total     uint64
		first     string
		indexes   []int
		freeFirst uint64
	}{
		{name: "one", picked: []*gpu.GPU{g0}, total: g0.CUDATotalBytes(), first: g0.Name, indexes: []int{0}, freeFirst: g0.MemoryFreeBytes},
		{name: "in the order picked", picked: []*gpu.GPU{g1, g0}, total: g0.CUDATotalBytes(), first: g1.Name, indexes: []int{1, 0}, freeFirst: g1.MemoryFreeBytes},
		{name: "the smallest total counts", picked: []*gpu.GPU{g0, &small}, total: small.CUDATotalBytes(), first: g0.Name, indexes: []int{0, 2}, freeFirst: g0.MemoryFreeBytes},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := VRAMGPUsOf(c.picked, "snap.json")
			if g.Total != c.total || g.Name != c.first || !slices.Equal(g.Indexes, c.indexes) || g.Free[0] != c.freeFirst || g.Source != "snap.json" {
				t.Errorf("VRAMGPUsOf = %+v; want total %d, name %s, indexes %v, first free %d", g, c.total, c.first, c.indexes, c.freeFirst)
			}
			if len(g.Free) != len(c.picked) {
				t.Errorf("%d free figures for %d GPUs", len(g.Free), len(c.picked))
			}
		})
	}
	if small.CUDATotalBytes() >= g0.CUDATotalBytes() || g1.MemoryFreeBytes == g0.MemoryFreeBytes {
		t.Fatal("the fixture does not tell the GPUs apart: the test checks nothing")
	}
}

// -gpu-gib and -gpu NAME size for GPUs of which only the totals are known:
// no indexes, no free memory (the JSON leaves them out).
func TestVRAMGPUsOfGiBAndPreset(t *testing.T) {
	gib := 79.18
	g := VRAMGPUsOfGiB(gib)
	if g.Total != uint64(gib*(1<<30)) || g.Total>>20 != 81080 || g.Name != "" || g.Indexes != nil || g.Free != nil || g.Source != "79.18 GiB per GPU (-gpu-gib)" {
		t.Errorf("VRAMGPUsOfGiB = %+v", g)
	}
	h100, _ := gpu.Preset("H100")
	g = VRAMGPUsOfPreset(h100, "h100")
	if g.Name != "NVIDIA H100 80GB HBM3" || g.Total != h100.CUDATotalBytes() || g.NVML != h100.MemoryTotalBytes || g.CC != "9.0" ||
		g.Indexes != nil || g.Free != nil || g.Source != "preset h100" {
		t.Errorf("VRAMGPUsOfPreset = %+v", g)
	}
}
