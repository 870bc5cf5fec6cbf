package cli

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/journal"
	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/proxy/launch"
	"github.com/roofline/roofline/internal/rehearsal"
	"github.com/roofline/roofline/internal/state"
)

// backend holds what plan, apply, destroy and status build from the
// configuration: the state manager and the live adapters.
type backend struct {
	// cfg is the configuration without its cluster servers (config.HostOnly):
	// everything here runs on this host. full has them too.
	cfg      *config.Config
	full     *config.Config
	stateDir string
	states   *state.Filesystem
	self     string // executable that runs rehearsal engines and the proxy
	drivers  *driver.Set
}

// openBackend loads the configuration of the current directory and builds
// its backend, printing what went wrong.
func openBackend(m *Meta) (*backend, bool) {
	cfg, ok := loadConfig(m)
	if !ok {
		return nil, false
	}
	return newBackend(cfg), true
}

// openStateFile opens the backend and reads the state (no lock: for reading).
func openStateFile(m *Meta) (*backend, *state.File, bool) {
	b, ok := openBackend(m)
	if !ok {
		return nil, nil, false
	}
	st, ok := b.readState(m)
	return b, st, ok
}

// openLocked opens the backend for an operation that may change the state:
// the engine executable, the state lock (waiting up to timeout) and the
// state. unlock releases the lock. shared takes the lock for a command that
// only reads the state (plan): other readers share it and it writes
// nothing, so that it works on a read-only state directory.
func openLocked(m *Meta, op string, timeout time.Duration, shared bool) (b *backend, st *state.File, unlock func(), ok bool) {
	b, ok = openBackend(m)
	if !ok || !b.needSelf(m) {
		return nil, nil, nil, false
	}
	if unlock, ok = b.lock(m, op, timeout, shared); !ok {
		return nil, nil, nil, false
	}
	if st, ok = b.readState(m); !ok {
		unlock()
		return nil, nil, nil, false
	}
	return b, st, unlock, true
}

func newBackend(cfg *config.Config) *backend {
	dir := stateDir(cfg)
	return &backend{cfg: cfg.HostOnly(), full: cfg, stateDir: dir, states: state.NewFilesystem(dir), drivers: newDrivers()}
}

// proxies brings up the front proxies, from roofline itself (needSelf).
func (b *backend) proxies() launch.Launcher {
	return launch.Launcher{Drivers: b.drivers, StateDir: b.stateDir, Command: []string{b.self, "proxy"}}
}

// needSelf finds the executable engines and proxies run from (plan, apply
// and init need it; status and logs do not pay for the copy).
func (b *backend) needSelf(m *Meta) bool {
	if b.self != "" {
		return true
	}
	// The copy of this roofline binary in the state directory
	// (rehearsal.InstallSelf). selfExecutable, not os.Executable: a test
	// that stands in another binary must not have its own test binary
	// copied and run as the engine (it would run the whole suite again).
	exe, err := selfExecutable()
	if err != nil {
		m.view().Errorf("cannot find roofline's own executable: %v", err)
		return false
	}
	if b.self, err = rehearsal.InstallSelf(exe, b.stateDir); err != nil {
		m.view().Errorf("%v", err)
		return false
	}
	return true
}

// inventory picks the GPU source: -inventory, else the configuration's
// inventory, else NVML.
func (b *backend) inventory(flag string) gpu.Inventory {
	return inventoryFor(b.inventoryPath(flag))
}

// inventoryPath is the snapshot file in use, "" for NVML.
func (b *backend) inventoryPath(flag string) string {
	if flag == "" && b.cfg.Roofline != nil {
		flag = b.cfg.Roofline.Inventory
	}
	if flag != "" {
		if abs, err := filepath.Abs(flag); err == nil {
			return abs
		}
	}
	return flag
}

// prober probes engines through the cache in the state directory
// (refresh: probe again).
func (b *backend) prober(refresh bool) prober {
	return newProber(b.self, b.stateDir, refresh)
}

func newProber(self, stateDir string, refresh bool) prober {
	return prober{self: self, cacheDir: engine.ProbeCache(stateDir), refresh: refresh}
}

type prober struct {
	self     string
	cacheDir string
	refresh  bool
}

func (p prober) Probe(ctx context.Context, e *config.Engine) (*engine.Installed, error) {
	rehearsal.Resolve(e, p.self)
	return engine.Probe(ctx, e, probeRunner(), p.cacheDir, p.refresh)
}

// interrupts delivers SIGINT and SIGTERM while roofline waits for the
// lock or at the approval prompt (tests stand in a channel); the returned
// func stops the delivery, after which the signals act as before.
var interrupts = func() (<-chan os.Signal, func()) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, os.Interrupt, syscall.SIGTERM)
	return c, func() { signal.Stop(c) }
}

// lock takes the state lock for op, shared (for reading) or exclusive,
// waiting up to timeout.
func (b *backend) lock(m *Meta, op string, timeout time.Duration, shared bool) (unlock func(), ok bool) {
	if m.NoLock {
		slog.Warn("state lock skipped (-lock=false)", "operation", op)
		return func() {}, true
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// Ctrl-C during a -lock-timeout wait ends it, and says so.
	sigs, stopSigs := interrupts()
	interrupted := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			close(interrupted)
			cancel()
		case <-ctx.Done():
		}
	}()
	var id string
	var err error
	if shared {
		id, err = b.states.LockShared(ctx)
	} else {
		id, err = b.states.Lock(ctx, state.NewLockInfo(op))
	}
	stopSigs()
	select {
	case <-interrupted:
		if err == nil {
			_ = b.states.Unlock(id)
		}
		m.view().Errorf("Interrupted while waiting for the state lock: nothing was done.")
		return nil, false
	default:
	}
	if err != nil {
		m.view().LockFailed(err)
		return nil, false
	}
	return func() {
		if err := b.states.Unlock(id); err != nil {
			m.view().Errorf("releasing the state lock: %v", err)
		}
	}, true
}

// readState reads the state and prints a clear error when it is unreadable.
func (b *backend) readState(m *Meta) (*state.File, bool) {
	st, err := b.states.Read()
	if err != nil {
		m.view().Errorf("%v", err)
		return nil, false
	}
	if st == nil {
		st = state.NewFile()
	}
	return st, true
}

// refresh observes what runs for a plan of cfg.
func (b *backend) refresh(ctx context.Context, inventoryFlag string, reprobe bool, cfg *config.Config, st *state.File) *plan.Inputs {
	rehearsal.ResolveAll(cfg, b.self)
	in := b.refresher(inventoryFlag, reprobe).Refresh(ctx, cfg, st)
	rehearsal.UseInventory(in.Config, in.Snapshot)
	return in
}

// refresher builds the live adapters for a plan.
func (b *backend) refresher(inventoryFlag string, reprobe bool) *plan.Refresher {
	return &plan.Refresher{
		Inventory: b.inventory(inventoryFlag),
		Engines:   b.prober(reprobe),
		Observer:  newObserver(b.drivers, b.stateDir),
		Ports:     &plan.LivePorts{},
		Journal:   journal.Path(b.stateDir),
		StateDir:  b.stateDir,
		Drivers:   b.drivers,
	}
}

// probeRunner runs engine probes with exactly the base environment the
// process driver gives engines (driver.BuildEnv), plus the probe's own
// variables (the engine's env, COLUMNS, the air-gap ones).
func probeRunner() engine.ExecRunner {
	return engine.ExecRunner{Environ: func(env []string) []string { return driver.BuildEnvList(env, os.LookupEnv) }}
}
