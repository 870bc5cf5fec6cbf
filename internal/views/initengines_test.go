package views

import (
	"errors"
	"testing"

	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/enginelock"
)

func TestInitEnginesOf(t *testing.T) {
	v16, _ := engine.Reference("vllm", "0.16.0")
	boom := errors.New("no such executable")
	got := InitEnginesOf([]enginelock.Probed{
		{Name: "good", Installed: v16},
		{Name: "old", Installed: v16, Pinned: "0.8.5"},
		{Name: "missing", Err: boom},
	})
	want := []InitEngine{
		{Name: "good", Installed: v16.Name(), Flags: len(v16.Flags.Flags)},
		{Name: "old", Installed: v16.Name(), Pinned: "0.8.5"},
		{Name: "missing", Err: boom},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d engines, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("engine %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if want[0].Flags == 0 {
		t.Error("the reference install lists no flags: the test checks nothing")
	}
}
