// Package fake is an in-memory driver for plan and apply tests: no
// processes, deterministic pids and start times, and knobs to make starts
// fail, processes crash and pids be reused.
package fake

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/state"
)

// BootID is the boot id of the fake host.
const BootID = "fake-boot"

// Driver is an in-memory driver.Driver. It is safe for concurrent use.
type Driver struct {
	mu    sync.Mutex
	pid   int
	clock uint64
	procs map[int]*proc
	// StartErr makes Start fail for the named servers.
	StartErr map[string]error
	// Starts and Stops record the calls, in order, by server name.
	Starts []driver.LaunchSpec
	Stops  []string
}

type proc struct {
	spec    driver.LaunchSpec
	handle  driver.Handle
	alive   bool
	workers []int // extra pids of the session, for tests of leftover workers
}

var _ driver.Driver = (*Driver)(nil)

// New returns an empty fake host whose first pid is 1000.
func New() *Driver {
	return &Driver{pid: 999, procs: map[int]*proc{}, StartErr: map[string]error{}}
}

// Start records spec and "starts" it.
func (d *Driver) Start(ctx context.Context, spec driver.LaunchSpec) (*driver.Handle, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.Starts = append(d.Starts, spec)
	if err := d.StartErr[spec.Name]; err != nil {
		return nil, err
	}
	d.pid++
	d.clock++
	h := driver.Handle{PID: d.pid, PGID: d.pid, StartTime: d.clock, BootID: BootID,
		Cmdline: slices.Clone(spec.Argv), LogPath: spec.LogPath}
	d.procs[h.PID] = &proc{spec: spec, handle: h, alive: true}
	c := h
	return &c, nil
}

// Read observes h: nil when it is not alive or the pid is another
// process's (start time or boot id differ).
func (d *Driver) Read(ctx context.Context, h *driver.Handle) (*driver.Observed, error) {
	if h == nil {
		return nil, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	p := d.procs[h.PID]
	if p == nil || !matches(p, h) {
		return nil, nil
	}
	if !p.alive && len(p.workers) == 0 {
		return nil, nil
	}
	obs := &driver.Observed{Alive: p.alive, PID: h.PID, PIDs: slices.Clone(p.workers)}
	if p.alive {
		obs.PIDs = append([]int{h.PID}, obs.PIDs...)
		obs.Cmdline = slices.Clone(p.handle.Cmdline)
		obs.CmdlineChanged = len(h.Cmdline) > 0 && !state.ArgvEqual(h.Cmdline, p.handle.Cmdline)
	}
	return obs, nil
}

// Stop ends h and its workers. Stopping what is gone is not an error.
func (d *Driver) Stop(ctx context.Context, h *driver.Handle, grace time.Duration) error {
	if h == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	p := d.procs[h.PID]
	if p == nil || !matches(p, h) {
		return nil
	}
	if p.alive || len(p.workers) > 0 {
		d.Stops = append(d.Stops, p.spec.Name)
	}
	p.alive, p.workers = false, nil
	return nil
}

// FindByEnv returns the handles of live processes (or of those with
// workers left) started with env key=value, like the process driver's.
func (d *Driver) FindByEnv(ctx context.Context, key, value string) ([]*driver.Handle, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []*driver.Handle
	for _, pid := range slices.Sorted(maps.Keys(d.procs)) {
		p := d.procs[pid]
		if v, ok := p.spec.Env[key]; !ok || v != value || (!p.alive && len(p.workers) == 0) {
			continue
		}
		h := p.handle
		h.Cmdline = slices.Clone(h.Cmdline)
		if !p.alive {
			h.StartTime = 0
		}
		out = append(out, &h)
	}
	return out, nil
}

// matches is the identity check: boot id and start time, where start time
// 0 (a FindByEnv handle of a session whose leader died) matches only a dead
// leader.
func matches(p *proc, h *driver.Handle) bool {
	if p.handle.BootID != h.BootID {
		return false
	}
	if h.StartTime == 0 {
		return !p.alive
	}
	return p.handle.StartTime == h.StartTime
}

// Crash makes the newest live process of server name exit, as if the
// engine died. withWorkers leaves that many workers behind. It reports
// whether there was one.
func (d *Driver) Crash(name string, withWorkers int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := d.newest(name)
	if p == nil {
		return false
	}
	p.alive = false
	for range withWorkers {
		d.pid++
		p.workers = append(p.workers, d.pid)
	}
	return true
}

// ReusePID makes h's process exit and its pid be taken by an unrelated
// process (another start time), the case identity checks exist for.
func (d *Driver) ReusePID(h *driver.Handle) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.clock++
	d.procs[h.PID] = &proc{
		spec:   driver.LaunchSpec{Name: "foreign", Argv: []string{"/usr/bin/foreign"}},
		handle: driver.Handle{PID: h.PID, PGID: h.PID, StartTime: d.clock, BootID: BootID, Cmdline: []string{"/usr/bin/foreign"}},
		alive:  true,
	}
}

// Running returns the names of the live servers, sorted, with repeats
// when a name runs twice (a create-before-destroy rollout in progress).
func (d *Driver) Running() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var names []string
	for _, p := range d.procs {
		if p.alive && p.spec.Name != "foreign" {
			names = append(names, p.spec.Name)
		}
	}
	slices.Sort(names)
	return names
}

// Spec returns the launch spec of the newest process of name.
func (d *Driver) Spec(name string) (driver.LaunchSpec, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := d.newest(name)
	if p == nil {
		return driver.LaunchSpec{}, fmt.Errorf("fake driver: server %s was never started", name)
	}
	return p.spec, nil
}

func (d *Driver) newest(name string) *proc {
	var best *proc
	for _, p := range d.procs {
		if p.spec.Name == name && p.alive && (best == nil || p.handle.StartTime > best.handle.StartTime) {
			best = p
		}
	}
	if best != nil {
		return best
	}
	for _, p := range d.procs {
		if p.spec.Name == name && (best == nil || p.handle.StartTime > best.handle.StartTime) {
			best = p
		}
	}
	return best
}
