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
