// Package drivertest holds the conformance suite every driver.Driver must
// pass, so the fake used by plan and apply tests behaves like the real one.
package drivertest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/state"
)

// TestDriver runs the suite on d. spec returns the launch spec of a process
// that runs until it is signalled.
func TestDriver(t *testing.T, d driver.Driver, spec func(name string) driver.LaunchSpec) {
	t.Helper()
	ctx := context.Background()

	if obs, err := d.Read(ctx, nil); obs != nil || err != nil {
		t.Fatalf("Read(nil) = %+v, %v; want nil, nil", obs, err)
	}
	h, err := d.Start(ctx, spec("a"))
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = d.Stop(context.Background(), h, 0) })
	if h.PID <= 0 || h.PGID <= 0 || h.StartTime == 0 || h.BootID == "" || h.LogPath != spec("a").LogPath {
		t.Fatalf("Start returned an incomplete handle %+v", h)
	}

	obs, err := d.Read(ctx, h)
	if err != nil || obs == nil || !obs.Alive || obs.PID != h.PID || !slices.Contains(obs.PIDs, h.PID) {
		t.Fatalf("Read of a running process = %+v, %v; want alive with pid %d", obs, err, h.PID)
	}
	if obs.CmdlineChanged {
		t.Errorf("Read reports a changed command line right after the start: %q vs %q", obs.Cmdline, h.Cmdline)
	}

	// The handle survives the trip through the state (what a later roofline reads).
	var s state.Server
	h.Record(&s)
	if obs, err := d.Read(ctx, driver.HandleOf(&s)); err != nil || obs == nil || !obs.Alive {
		t.Fatalf("Read of the handle recorded in the state = %+v, %v; want alive", obs, err)
	}

	for name, mutate := range map[string]func(*driver.Handle){
		"other start time": func(h *driver.Handle) { h.StartTime++ },
		"other boot":       func(h *driver.Handle) { h.BootID = "another-boot" },
	} {
		w := *h
		mutate(&w)
		if obs, err := d.Read(ctx, &w); obs != nil || err != nil {
			t.Errorf("Read with %s = %+v, %v; the pid is not ours, want nil, nil", name, obs, err)
		}
		if err := d.Stop(ctx, &w, time.Second); err != nil {
			t.Errorf("Stop with %s: %v", name, err)
		}
		if obs, _ := d.Read(ctx, h); obs == nil || !obs.Alive {
			t.Fatalf("Stop with %s stopped the live process", name)
		}
	}

	if err := d.Stop(ctx, h, 5*time.Second); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if obs, err := d.Read(ctx, h); obs != nil || err != nil {
		t.Fatalf("Read after Stop = %+v, %v; want nil, nil", obs, err)
	}
	if err := d.Stop(ctx, h, time.Second); err != nil {
		t.Fatalf("Stop of a stopped process: %v", err)
	}

	// Two servers are independent.
	h1, err := d.Start(ctx, spec("one"))
	if err != nil {
		t.Fatal(err)
	}
	h2, err := d.Start(ctx, spec("two"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Stop(context.Background(), h1, 0); _ = d.Stop(context.Background(), h2, 0) })
	if h1.PID == h2.PID {
		t.Fatalf("two starts got one pid %d", h1.PID)
	}
	if err := d.Stop(ctx, h1, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if obs, _ := d.Read(ctx, h2); obs == nil || !obs.Alive {
		t.Fatal("stopping one server stopped the other")
	}
	if err := d.Stop(ctx, h2, 5*time.Second); err != nil {
		t.Fatal(err)
	}
}
