package snapshot

import (
	"testing"

	"github.com/roofline/roofline/internal/gpu"
)

func TestCounts(t *testing.T) {
	for _, tc := range []struct {
		name             string
		f                *File
		gpus, unreadable int
	}{
		{"empty", &File{}, 0, 0},
		{"two GPUs, all read", &File{GPUs: &gpu.Snapshot{GPUs: make([]gpu.GPU, 2)},
			Engines: map[string]*Engine{"v": {}}, Models: map[string]*Model{"q": {}}}, 2, 0},
		{"an engine and a model unreadable", &File{
			Engines: map[string]*Engine{"v": {Error: "not found"}, "s": {}},
			Models:  map[string]*Model{"q": {Error: "no config.json"}, "r": {Error: "denied"}}}, 0, 3},
	} {
		if g, u := tc.f.GPUCount(), tc.f.Unreadable(); g != tc.gpus || u != tc.unreadable {
			t.Errorf("%s: %d GPUs, %d unreadable; want %d, %d", tc.name, g, u, tc.gpus, tc.unreadable)
		}
	}
}
