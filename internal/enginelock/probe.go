package enginelock

import (
	"context"
	"sync"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine"
)

// Probed is one engine's probe, as init reports it.
type Probed struct {
	Name string
	// Installed is the install found (nil when Err).
	Installed *engine.Installed
	Err       error
	// Pinned is the version the engine block pins when the install is
	// another one (plan's rule: 0.16.0 pins 0.16.0+cu129 too); "" when it
	// matches.
	Pinned string
}

// OK: the probe found the pinned install.
func (p Probed) OK() bool { return p.Err == nil && p.Pinned == "" }

// ProbeAll probes every engine of cfg at once, each with probe, and returns
// the results in the configuration's engine order.
func ProbeAll(ctx context.Context, cfg *config.Config, probe func(context.Context, *config.Engine) (*engine.Installed, error)) []Probed {
	names := cfg.EngineNames()
	out := make([]Probed, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := cfg.Engines[name]
			inst, err := probe(ctx, e)
			p := Probed{Name: name, Err: err}
			if err == nil {
				p.Installed = inst
				if engine.CheckVersion(e, inst).HasErrors() {
					p.Pinned = e.Version
				}
			}
			out[i] = p
		}()
	}
	wg.Wait()
	return out
}

// Usable returns the installs of the probes that are OK, by engine name
// (what Update records), and whether any probe was not.
func Usable(probes []Probed) (map[string]*engine.Installed, bool) {
	ok := map[string]*engine.Installed{}
	failed := false
	for _, p := range probes {
		if p.OK() {
			ok[p.Name] = p.Installed
		} else {
			failed = true
		}
	}
	return ok, failed
}
