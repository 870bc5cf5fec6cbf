package plan

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/journal"
	"github.com/roofline/roofline/internal/model"
	"github.com/roofline/roofline/internal/state"
)

// EngineProber finds out what an engine block's install is.
type EngineProber interface {
	Probe(ctx context.Context, e *config.Engine) (*engine.Installed, error)
}

// Observer looks at one server of the state: is its process still ours.
type Observer interface {
	Observe(ctx context.Context, s *state.Server) *Observation
}

// Refresher gathers the live facts a plan needs. The CLI builds it with the
// real NVML, engine probes and process driver; tests pass fakes.
type Refresher struct {
	Inventory gpu.Inventory
	Engines   EngineProber
	Observer  Observer
	Ports     PortChecker
	// Journal is the journal file; the last bench of each server is shown
	// beside its replacement's gate.
	Journal string
	// Inspect reads a model folder; nil means model.Inspect.
	Inspect func(dir string) (*model.Info, error)
	// StateDir holds the calibrations (state.CalibrationsFile); "" = none.
	StateDir string
	// Drivers chooses each server's driver (Inputs.Drivers).
	Drivers DriverChooser
}

// Refresh probes engines and models (in parallel), observes every server of
// the state and takes a GPU snapshot.
func (r *Refresher) Refresh(ctx context.Context, cfg *config.Config, prior *state.File) *Inputs {
	in := &Inputs{
		Config:   cfg,
		Prior:    prior,
		Engines:  map[string]EngineResult{},
		Models:   map[string]ModelResult{},
		Observed: map[string]*Observation{},
		Ports:    r.Ports,
		Drivers:  r.Drivers,
		Now:      time.Now(),
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	if r.Inventory != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			snap, err := r.Inventory.Snapshot(ctx)
			mu.Lock()
			in.Snapshot, in.SnapshotErr = snap, err
			mu.Unlock()
		}()
	}
	if cfg != nil {
		for _, name := range cfg.EngineNames() {
			e := cfg.Engines[name]
			wg.Add(1)
			go func() {
				defer wg.Done()
				var res EngineResult
				if r.Engines == nil {
					res.Err = fmt.Errorf("no engine prober")
				} else {
					res.Installed, res.Err = r.Engines.Probe(ctx, e)
				}
				mu.Lock()
				in.Engines[e.Name] = res
				mu.Unlock()
			}()
		}
		inspect := r.Inspect
		if inspect == nil {
			inspect = model.Inspect
		}
		for _, name := range cfg.ModelNames() {
			m := cfg.Models[name]
			wg.Add(1)
			go func() {
				defer wg.Done()
				var res ModelResult
				res.Info, res.Err = inspect(m.Path)
				if res.Err == nil {
					res.Files, res.Err = ModelManifest(m.Path)
					res.Fingerprint = ManifestFingerprint(res.Files)
					res.LegacyFingerprint, _ = LegacyModelFingerprint(m.Path)
				}
				mu.Lock()
				in.Models[m.Name] = res
				mu.Unlock()
			}()
		}
	}
	if prior != nil && r.Observer != nil {
		for _, name := range prior.Names() {
			s := prior.Servers[name]
			wg.Add(1)
			go func() {
				defer wg.Done()
				o := r.Observer.Observe(ctx, s)
				if d := s.Deposed; d != nil && d.Status == state.StatusKept && o != nil {
					// Its processes are roofline's, and hold GPU memory.
					o.Kept = r.Observer.Observe(ctx, d)
				}
				mu.Lock()
				in.Observed[s.Name] = o
				mu.Unlock()
			}()
		}
	}
	if r.Journal != "" {
		// A journal that cannot be read only costs the comparison.
		entries, _ := journal.Read(r.Journal)
		in.LastBench = map[string]*journal.Entry{}
		if prior != nil {
			for _, name := range prior.Names() {
				if e := journal.LastBench(entries, name); e != nil {
					in.LastBench[name] = e
				}
			}
		}
	}
	if r.StateDir != "" {
		// Unreadable calibrations only make the plan uncalibrated.
		in.Calibrations, _ = state.ReadCalibrations(r.StateDir)
	}
	wg.Wait()
	return in
}

// LegacyModelFingerprint is the fingerprint roofline recorded before it
// kept per-file digests: names, sizes and modification times. It is only
// compared with states written then, so that upgrading roofline restarts
// nothing.
func LegacyModelFingerprint(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		info, err := os.Stat(filepath.Join(dir, n))
		if err != nil {
			continue
		}
		fmt.Fprintf(h, "%s\x00%d\x00%d\n", n, info.Size(), info.ModTime().UnixNano())
	}
	return hex.EncodeToString(h.Sum(nil)[:12]), nil
}

// sampleBytes is how much of each end of a large file the manifest reads:
// a safetensors header (names, shapes, dtypes) sits in the first part.
const sampleBytes = 256 << 10

// ModelManifest maps each file of a model folder to "SIZE:DIGEST". Content
// decides, never the modification time, so copying or touching a folder
// changes nothing; it stays cheap: a file up to 2×sampleBytes is hashed
// whole, a larger one by its size, first and last sampleBytes.
func ModelManifest(dir string) (map[string]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		d, size, err := fileDigest(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", e.Name(), err)
		}
		out[e.Name()] = fmt.Sprintf("%d:%s", size, d)
	}
	return out, nil
}

func fileDigest(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", 0, err
	}
	if !info.Mode().IsRegular() {
		return "special", 0, nil
	}
	size := info.Size()
	h := sha256.New()
	if size <= 2*sampleBytes {
		if _, err := io.Copy(h, io.LimitReader(f, size)); err != nil {
			return "", 0, err
		}
	} else {
		buf := make([]byte, sampleBytes)
		for _, off := range []int64{0, size - sampleBytes} {
			if _, err := f.ReadAt(buf, off); err != nil {
				return "", 0, err
			}
			h.Write(buf)
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:12]), size, nil
}

// ManifestFingerprint is the folder's identity from its manifest.
func ManifestFingerprint(files map[string]string) string {
	if files == nil {
		return ""
	}
	h := sha256.New()
	for _, n := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(h, "%s\x00%s\n", n, files[n])
	}
	return "c1:" + hex.EncodeToString(h.Sum(nil)[:12])
}

// ModelFileChanges names the files that differ between two manifests:
// "+ name" added, "- name" removed, "~ name" changed.
func ModelFileChanges(before, after map[string]string) []string {
	var out []string
	for _, n := range slices.Sorted(maps.Keys(before)) {
		if v, ok := after[n]; !ok {
			out = append(out, "- "+n)
		} else if v != before[n] {
			out = append(out, "~ "+n)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(after)) {
		if _, ok := before[n]; !ok {
			out = append(out, "+ "+n)
		}
	}
	return out
}

// InstalledOf is what each engine's probe found (nil for a failed probe),
// by engine block name: what the engine lock file is checked against.
func InstalledOf(engines map[string]EngineResult) map[string]*engine.Installed {
	out := map[string]*engine.Installed{}
	for name, r := range engines {
		out[name] = r.Installed
	}
	return out
}
