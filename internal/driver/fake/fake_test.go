package fake

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/driver/drivertest"
)

func spec(name string) driver.LaunchSpec {
	return driver.LaunchSpec{Name: name, Argv: []string{"/bin/engine", "--name", name}, LogPath: "/logs/" + name + ".log"}
}

func TestConformance(t *testing.T) {
	drivertest.TestDriver(t, New(), spec)
}

func TestKnobs(t *testing.T) {
	ctx := context.Background()
	d := New()
	d.StartErr["bad"] = errors.New("boom")
	if _, err := d.Start(ctx, spec("bad")); err == nil {
		t.Fatal("StartErr did not make Start fail")
	}
	h, _ := d.Start(ctx, spec("a"))
	if got := d.Running(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("Running = %v", got)
	}
	if !d.Crash("a", 2) {
		t.Fatal("Crash found nothing")
	}
	obs, _ := d.Read(ctx, h)
	if obs == nil || obs.Alive || len(obs.PIDs) != 2 {
		t.Fatalf("after a crash with workers Read = %+v; want not alive, 2 leftover pids", obs)
	}
	if err := d.Stop(ctx, h, 0); err != nil {
		t.Fatal(err)
	}
	if obs, _ := d.Read(ctx, h); obs != nil {
		t.Fatalf("Read after Stop = %+v", obs)
	}
	h2, _ := d.Start(ctx, spec("b"))
	d.ReusePID(h2)
	if obs, _ := d.Read(ctx, h2); obs != nil {
		t.Fatalf("Read of a reused pid = %+v; want nil", obs)
	}
	if !slices.Equal(d.Stops, []string{"a"}) || len(d.Starts) != 3 {
		t.Fatalf("Stops = %v, Starts = %d", d.Stops, len(d.Starts))
	}
}

func TestFindByEnv(t *testing.T) {
	ctx := context.Background()
	d := New()
	sp := spec("a")
	sp.Env = map[string]string{"ROOFLINE_LAUNCH_ID": "L1"}
	h, _ := d.Start(ctx, sp)
	d.Start(ctx, spec("b"))
	got, _ := d.FindByEnv(ctx, "ROOFLINE_LAUNCH_ID", "L1")
	if len(got) != 1 || got[0].PID != h.PID || got[0].StartTime != h.StartTime {
		t.Fatalf("FindByEnv = %+v; want the handle of %d", got, h.PID)
	}
	d.Crash("a", 1)
	got, _ = d.FindByEnv(ctx, "ROOFLINE_LAUNCH_ID", "L1")
	if len(got) != 1 || got[0].StartTime != 0 {
		t.Fatalf("FindByEnv after a crash with a worker left = %+v; want a leaderless handle", got)
	}
	if obs, _ := d.Read(ctx, got[0]); obs == nil || obs.Alive || len(obs.PIDs) != 1 {
		t.Fatalf("Read of the leaderless handle = %+v", obs)
	}
	d.Stop(ctx, got[0], 0)
	if got, _ = d.FindByEnv(ctx, "ROOFLINE_LAUNCH_ID", "L1"); len(got) != 0 {
		t.Fatalf("FindByEnv after Stop = %+v", got)
	}
}
