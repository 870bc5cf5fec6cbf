package gpu_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/gpu/gputest"
)

func TestSnapshotPick(t *testing.T) {
	snap := gputest.H100s(4)
	// Listed out of order, so "the first by index" is visible.
	snap.GPUs[0], snap.GPUs[3] = snap.GPUs[3], snap.GPUs[0]
	for _, c := range []struct {
		name    string
		list    string
		listed  bool
		tp, pp  int
		want    []int
		wantErr string
	}{
		{name: "first by index", tp: 2, pp: 1, want: []int{0, 1}},
		{name: "all", tp: 2, pp: 2, want: []int{0, 1, 2, 3}},
		{name: "too few", tp: 8, pp: 1, wantErr: "TP 8 x PP 1 needs 8 GPUs, %s has 4"},
		{name: "listed", list: "3, 1", listed: true, tp: 2, pp: 1, want: []int{3, 1}},
		{name: "empty list", list: "", listed: true, tp: 1, pp: 1, wantErr: `-gpus "": give GPU indexes`},
		{name: "not a number", list: "0,x", listed: true, tp: 2, pp: 1, wantErr: `-gpus "0,x": give GPU indexes`},
		// The unknown index comes before the bad word: it is reported.
		{name: "unknown first", list: "0,9,x", listed: true, tp: 3, pp: 1, wantErr: "-gpus: there is no GPU 9 in %s (it has 4 GPUs)"},
		{name: "twice", list: "1,1", listed: true, tp: 2, pp: 1, wantErr: "-gpus: GPU 1 is listed twice"},
		{name: "count", list: "0,1", listed: true, tp: 4, pp: 1, wantErr: "-gpus lists 2 GPUs but TP 4 x PP 1 needs 4"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := snap.Pick(c.list, c.listed, c.tp, c.pp)
			if c.wantErr != "" {
				want := c.wantErr
				if strings.Contains(want, "%s") {
					want = fmt.Sprintf(want, snap.Source)
				}
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("err = %v, want one containing %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var idx []int
			for _, g := range got {
				idx = append(idx, g.Index)
			}
			if !slices.Equal(idx, c.want) {
				t.Errorf("picked %v, want %v", idx, c.want)
			}
		})
	}
}

// A picked GPU that reports no memory (a snapshot of a broken or MIG-less
// listing) cannot be sized for; the one named is that GPU.
func TestSnapshotPickNoMemory(t *testing.T) {
	snap := gputest.H100s(3)
	snap.GPUs[1].MemoryTotalBytes, snap.GPUs[1].MemoryReservedBytes = 0, 0
	if _, err := snap.Pick("", false, 1, 1); err != nil {
		t.Errorf("GPU 0 alone: %v", err)
	}
	want := fmt.Sprintf("%s reports no memory for GPU 1", snap.Source)
	for _, list := range []string{"", "2,1"} {
		if _, err := snap.Pick(list, list != "", 2, 1); err == nil || err.Error() != want {
			t.Errorf("-gpus %q: err = %v, want %q", list, err, want)
		}
	}
}
