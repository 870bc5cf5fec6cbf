package gputest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/gpu/gputest"
)

func TestBuild(t *testing.T) {
	s := gputest.H100s(8,
		gputest.WithUsed(0, 2*gputest.GiB),
		gputest.WithProcess(3, 4242, 10*gputest.GiB, "/opt/venv/bin/python3.12-with-a-long-name", "serve.py"),
		gputest.WithProcess(3, 4243, gputest.GiB),
		gputest.WithHost("h"))
	idle, _ := gpu.Preset("H100")
	if len(s.GPUs) != 8 || s.Host != "h" || s.FormatVersion != gpu.FormatVersion {
		t.Fatalf("%+v", s)
	}
	uuids := map[string]bool{}
	for i, g := range s.GPUs {
		if g.Index != i || g.Name != idle.Name || g.MemoryTotalBytes != idle.MemoryTotalBytes || uuids[g.UUID] || len(g.UUID) != 40 {
			t.Errorf("GPU %d: %+v", i, g)
		}
		uuids[g.UUID] = true
	}
	if g := s.GPUs[0]; g.MemoryUsedBytes != 2*gputest.GiB || g.MemoryFreeBytes != idle.MemoryFreeBytes-2*gputest.GiB || len(g.Processes) != 0 {
		t.Errorf("WithUsed: %+v", g)
	}
	g := s.GPUs[3]
	if g.MemoryUsedBytes != 11*gputest.GiB || g.MemoryFreeBytes != idle.MemoryFreeBytes-11*gputest.GiB || len(g.Processes) != 2 {
		t.Fatalf("WithProcess: %+v", g)
	}
	if p := g.Processes[0]; p.Name != "python3.12-with" || p.PID != 4242 || len(p.Cmdline) != 2 {
		t.Errorf("process name is not comm-like: %+v", p)
	}
	if p := g.Processes[1]; p.Name != "" || p.Cmdline != nil {
		t.Errorf("process without cmdline: %+v", p)
	}
	if s.GPUs[7].PCIBusID != "00000000:db:00.0" || gputest.L4s(10).GPUs[9].PCIBusID != "00000000:e1:00.0" {
		t.Error("PCI bus ids")
	}
	// Deterministic: the same calls, the same fingerprint.
	first, again := gputest.H100s(2).Fingerprint(), gputest.H100s(2).Fingerprint()
	if first != again || first == gputest.H200s(2).Fingerprint() {
		t.Error("fingerprints of built snapshots are not deterministic or not distinct")
	}
}

func TestBuildMisuse(t *testing.T) {
	for name, f := range map[string]func(){
		"unknown preset": func() { gputest.Build("H300", 1) },
		"no such GPU":    func() { gputest.H100s(1, gputest.WithUsed(1, 1)) },
		"too much used":  func() { gputest.L4s(1, gputest.WithUsed(0, 100*gputest.GiB)) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

func TestStaticAndFailing(t *testing.T) {
	inv := gputest.Static(gputest.A100s80(1))
	a, err := inv.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	a.GPUs[0].MemoryFreeBytes = 0
	b, _ := inv.Snapshot(context.Background())
	if b.GPUs[0].MemoryFreeBytes == 0 {
		t.Error("Static hands out shared snapshots")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := inv.Snapshot(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	want := errors.New("boom")
	if s, err := gputest.Failing(want).Snapshot(context.Background()); s != nil || !errors.Is(err, want) {
		t.Errorf("Failing: %v %v", s, err)
	}
}
