// Package drivertest holds the conformance suite every driver.Driver must
// pass (process against this host, docker against a real daemon and its
// fake), so that plan and apply can treat every driver alike.
package drivertest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/state"
)

// Options adapt the suite to one driver.
type Options struct {
	// Spec returns the launch spec of an instance that runs until it is
	// stopped, named name and carrying launchID.
	Spec func(t *testing.T, name, launchID string) driver.LaunchSpec
	// Stale returns an instance that looks like i but is not it (a pid
	// with another start time, a container id nobody has): Read must not
	// take it for i, and Stop of it must leave i running.
	Stale map[string]func(i state.Instance) state.Instance
	Grace time.Duration // Stop's grace; 5 s when 0
}

// TestDriver runs the suite on d.
func TestDriver(t *testing.T, d driver.Driver, o Options) {
	t.Helper()
	ctx := context.Background()
	grace := o.Grace
	if grace == 0 {
		grace = 5 * time.Second
	}

	if obs, err := d.Read(ctx, state.Instance{}); err != nil || obs == nil || obs.Alive || obs.Remains() {
		t.Fatalf("Read of an instance that records nothing = %+v, %v; want not alive, nothing left, no error", obs, err)
	}
	if err := d.Stop(ctx, state.Instance{}, time.Second); err != nil {
		t.Fatalf("Stop of an instance that records nothing: %v", err)
	}

	spec := o.Spec(t, "a", "launch-a-"+time.Now().Format("150405.000000"))
	i, err := d.Start(ctx, spec)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = d.Stop(context.Background(), i, 0) })
	if !i.Running() || i.Driver == "" || i.LaunchID != spec.LaunchID || i.LogPath != spec.LogPath {
		t.Fatalf("Start returned an incomplete instance %+v (launch id %q, log %q)", i, spec.LaunchID, spec.LogPath)
	}

	obs, err := d.Read(ctx, i)
	if err != nil || obs == nil || !obs.Alive || !obs.Remains() || obs.Detail != "" {
		t.Fatalf("Read of a running instance = %+v, %v; want alive", obs, err)
	}
	if i.PID != 0 && obs.PID != i.PID {
		t.Errorf("Read sees pid %d; Start recorded %d", obs.PID, i.PID)
	}
	if obs.CmdlineChanged {
		t.Errorf("Read reports a changed command line right after the start: %q vs %q", obs.Cmdline, i.Cmdline)
	}

	// The instance survives the trip through the state file (what a later
	// roofline reads).
	b, err := json.Marshal(i)
	if err != nil {
		t.Fatal(err)
	}
	var back state.Instance
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if obs, err := d.Read(ctx, back); err != nil || !obs.Alive {
		t.Fatalf("Read of the instance as the state records it = %+v, %v; want alive", obs, err)
	}

	// Find sees it by its launch id (adoption after a lost state write).
	found, err := d.Find(ctx, spec.LaunchID)
	if err != nil || len(found) != 1 || found[0].ID != i.ID || found[0].LaunchID != spec.LaunchID {
		t.Fatalf("Find(%q) = %+v, %v; want the one instance %s", spec.LaunchID, found, err, i.ID)
	}
	if obs, err := d.Read(ctx, found[0]); err != nil || !obs.Alive {
		t.Fatalf("Read of the instance Find returned = %+v, %v; want alive", obs, err)
	}
	if found, err := d.Find(ctx, "no-such-launch"); err != nil || len(found) != 0 {
		t.Fatalf("Find of an unknown launch id = %+v, %v; want none", found, err)
	}

	for name, stale := range o.Stale {
		w := stale(i.Clone())
		if obs, err := d.Read(ctx, w); err != nil || obs.Alive || obs.Detail == "" {
			t.Errorf("Read with %s = %+v, %v; it is not ours, want not alive with a detail", name, obs, err)
		}
		if err := d.Stop(ctx, w, time.Second); err != nil {
			t.Errorf("Stop with %s: %v", name, err)
		}
		if obs, _ := d.Read(ctx, i); obs == nil || !obs.Alive {
			t.Fatalf("Stop with %s stopped the live instance", name)
		}
	}

	if err := d.Stop(ctx, i, grace); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if obs, err := d.Read(ctx, i); err != nil || obs.Alive || obs.Remains() || obs.Detail == "" {
		t.Fatalf("Read after Stop = %+v, %v; want not alive, nothing left, and a detail", obs, err)
	}
	if err := d.Stop(ctx, i, time.Second); err != nil {
		t.Fatalf("Stop of a stopped instance: %v", err)
	}
	if found, err := d.Find(ctx, spec.LaunchID); err != nil || len(found) != 0 {
		t.Fatalf("Find after Stop = %+v, %v; want none", found, err)
	}

	// Two instances are independent.
	i1, err := d.Start(ctx, o.Spec(t, "one", "launch-1-"+time.Now().Format("150405.000000")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Stop(context.Background(), i1, 0) })
	i2, err := d.Start(ctx, o.Spec(t, "two", "launch-2-"+time.Now().Format("150405.000000")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Stop(context.Background(), i2, 0) })
	if i1.ID == i2.ID {
		t.Fatalf("two starts got one id %s", i1.ID)
	}
	if err := d.Stop(ctx, i1, grace); err != nil {
		t.Fatal(err)
	}
	if obs, _ := d.Read(ctx, i2); obs == nil || !obs.Alive {
		t.Fatal("stopping one instance stopped the other")
	}
	if err := d.Stop(ctx, i2, grace); err != nil {
		t.Fatal(err)
	}
}
