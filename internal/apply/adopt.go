package apply

import (
	"context"
	"errors"

	"github.com/roofline/roofline/internal/proxy/launch"
	"github.com/roofline/roofline/internal/state"
)

// adopt is apply's first step: it records the instances that were started
// but whose identity never reached the state (roofline killed between a
// start and the state write), found by the launch id recorded before the
// start. Without it such an instance would run untracked, holding its GPUs
// and port; with it, the rest of apply stops or keeps it like any other.
// Plan only reports them (Observation.Found): it never writes.
func (a *Applier) adopt(ctx context.Context) error {
	var errs error
	for _, name := range a.st.Names() {
		a.mu.Lock()
		s := a.st.Servers[name].Clone()
		a.mu.Unlock()
		addr := s.Addr()
		if !s.Running() && s.Status != state.StatusFailed {
			if found := a.find(ctx, s.Instance); found != nil {
				errs = errors.Join(errs, a.update(func(st *state.File) { record(&st.Servers[name].Instance, *found) }))
				a.note(addr, "Recorded %s: an interrupted run started it and never recorded it (found by its launch id)", found.Describe())
			}
		}
		if p := s.Proxy; p != nil && !p.Running() {
			rec := *p
			if rec.Driver == "" {
				rec.Driver = launch.Driver
			}
			if found := a.find(ctx, rec); found != nil {
				errs = errors.Join(errs, a.update(func(st *state.File) { record(st.Servers[name].Proxy, *found) }))
				a.note(addr, "Recorded its proxy, %s: an interrupted run started it and never recorded it", found.Describe())
			}
		}
	}
	return errs
}

// find asks the recorded instance's own driver for what was started with
// its launch id: a container's processes carry the launch id too, and must
// be found as the container, never as bare processes.
func (a *Applier) find(ctx context.Context, rec state.Instance) *state.Instance {
	if rec.LaunchID == "" {
		return nil
	}
	d, err := a.Drivers.In(rec.Driver)
	if err != nil {
		return nil
	}
	found, err := d.Find(ctx, rec.LaunchID)
	if err != nil || len(found) == 0 {
		return nil
	}
	return &found[0]
}

// record takes the found identity into the recorded instance, keeping the
// log path the state chose.
func record(rec *state.Instance, found state.Instance) {
	logPath := rec.LogPath
	*rec = found.Clone()
	if logPath != "" {
		rec.LogPath = logPath
	}
}
