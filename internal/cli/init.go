package cli

import (
	"context"
	"fmt"
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

Options:
  -inventory=FILE   GPU snapshot to use instead of NVML.
` + varsUsage,
		Run: runInit,
	})
}

func runInit(m *Meta, args []string) int {
	fs := newFlags("init")
	inventory := fs.String("inventory", "", "")
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
			case inst.Version != e.Version:
				line = fmt.Sprintf("  - engine.%s: %s installed, but the configuration pins %s (plan will refuse it)", name, inst.Name(), e.Version)
				mu.Lock()
				failed = true
				mu.Unlock()
			default:
				line = fmt.Sprintf("  - engine.%s: %s, %d flags", name, inst.Name(), len(inst.Flags.Flags))
			}
			lines[i] = line
		}()
	}
	wg.Wait()
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Fprintln(m.Out, l)
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
