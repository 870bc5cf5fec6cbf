package cli

import (
	"context"
	"strings"

	"fmt"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/enginelock"
	"github.com/roofline/roofline/internal/fsx"
	"os"
	"path/filepath"
	"sort"
	"sync"
)

func init() {
	register(&Command{
		Name:     "init",
		Synopsis: "Prepare a configuration directory: state dir, engine probes",
		Usage: `Usage: roofline [global options] init [-inventory=FILE]

  Creates the state directory and probes every engine of the configuration
  (version and flag list, from the install itself), filling the probe cache
  that plan uses. Run it once after cloning a configuration, and again after
  an engine is upgraded (plan also re-probes an install whose files changed).
  Reports the GPU inventory it would use. Safe to run any number of times.

  Writes the engine lock file roofline.lock.hcl beside the configuration:
  per engine, the install's identity and its flag list (with a hash). Commit
  it: on the GPU host, plan fails when an install changed behind it. init
  adds engines that are new and fails when a locked one changed; init
  -upgrade records the installs as they are now and prints each engine's
  flag diff.

Options:
  -inventory=FILE   GPU snapshot to use instead of NVML.
  -upgrade          Update the lock file to the installed engines.
` + varsUsage,
		Run: runInit,
	})
}

func runInit(m *Meta, args []string) int {
	fs := newFlags("init")
	inventory := fs.String("inventory", "", "")
	upgrade := fs.Bool("upgrade", false, "")
	if !parseConfigFlags(m, fs, args) {
		return ExitError
	}
	b, ok := openBackend(m)
	if !ok || !b.needSelf(m) {
		return ExitError
	}
	cfg := b.cfg
	if err := os.MkdirAll(filepath.Join(b.stateDir, "probes"), 0o700); err != nil {
		fmt.Fprintf(m.Err, "Error: %v\n", err)
		return ExitError
	}
	fmt.Fprintf(m.Out, "State directory: %s\n\nProbing engines...\n", b.stateDir)
	p := prober{self: b.self, cacheDir: filepath.Join(b.stateDir, "probes"), refresh: true}
	names := cfg.EngineNames()
	lines := make([]string, len(names))
	failed := false
	var wg sync.WaitGroup
	var mu sync.Mutex
	probed := map[string]*engine.Installed{}
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := cfg.Engines[name]
			inst, err := p.Probe(context.Background(), e)
			var line string
			switch {
			case err != nil:
				line = fmt.Sprintf("  - engine.%s: %v", name, err)
				mu.Lock()
				failed = true
				mu.Unlock()
			case engine.CheckVersion(e, inst).HasErrors():
				// The same rule as plan's: 0.16.0 pins 0.16.0+cu129 too.
				line = fmt.Sprintf("  - engine.%s: %s installed, but the configuration pins %s (plan will refuse it)", name, inst.Name(), e.Version)
				mu.Lock()
				failed = true
				mu.Unlock()
			default:
				line = fmt.Sprintf("  - engine.%s: %s, %d flags", name, inst.Name(), len(inst.Flags.Flags))
				mu.Lock()
				probed[name] = inst
				mu.Unlock()
			}
			lines[i] = line
		}()
	}
	wg.Wait()
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Fprintln(m.Out, l)
	}
	if !writeLock(m, cfg, probed, *upgrade) {
		failed = true
	}
	snap, err := b.inventory(*inventory).Snapshot(context.Background())
	if err != nil {
		fmt.Fprintf(m.Out, "\nGPUs: %v\n", err)
	} else {
		fmt.Fprintf(m.Out, "\nGPUs (%s): %d\n", snap.Source, len(snap.GPUs))
	}
	if failed {
		fmt.Fprint(m.Err, m.colorize("\n[red][bold]roofline init found problems[reset]; fix them before roofline plan.\n"))
		return ExitError
	}
	fmt.Fprint(m.Out, m.colorize("\n[green][bold]roofline has been successfully initialized![reset]\n\nRun \"roofline plan\" to see what apply would do.\n"))
	return ExitOK
}

// writeLock records the probed engines in roofline.lock.hcl: new engines
// are added, removed ones dropped; a changed one fails unless upgrade,
// which records it and prints its flag diff.
func writeLock(m *Meta, cfg *config.Config, probed map[string]*engine.Installed, upgrade bool) bool {
	lock, diags := enginelock.Read(config.LockFileName)
	if diags.HasErrors() {
		printDiags(m, cfg, diags)
		return false
	}
	if lock == nil {
		lock = &enginelock.Lock{}
	}
	ok := true
	var notes []string
	for _, name := range cfg.EngineNames() {
		inst := probed[name]
		if inst == nil {
			continue // its probe failed, reported above; the lock keeps it
		}
		now := enginelock.Of(cfg.Engines[name], inst)
		old := lock.Get(name)
		switch {
		case old == nil:
			lock.Set(now)
			notes = append(notes, fmt.Sprintf("  - engine.%s: locked (%s %s, %d flags)", name, now.Kind, now.Version, len(now.Flags)))
		case enginelock.Diff(old, now) == "":
		case upgrade:
			notes = append(notes, fmt.Sprintf("  - engine.%s: upgraded: %s\n%s", name, enginelock.Diff(old, now), flagDiffText(old.Flags, now.Flags)))
			lock.Set(now)
		default:
			fmt.Fprintf(m.Err, "\nError: engine.%s changed since %s was written: %s. Run roofline init -upgrade to record it, and review the flag diff it prints.\n", name, config.LockFileName, enginelock.Diff(old, now))
			ok = false
		}
	}
	lock.Keep(cfg.EngineNames())
	if err := fsx.WriteFile(config.LockFileName, lock.Bytes(), 0o644); err != nil {
		fmt.Fprintf(m.Err, "Error: writing %s: %v\n", config.LockFileName, err)
		return false
	}
	fmt.Fprintf(m.Out, "\nEngine lock file: %s\n", config.LockFileName)
	for _, n := range notes {
		fmt.Fprintln(m.Out, strings.TrimRight(n, "\n"))
	}
	return ok
}
