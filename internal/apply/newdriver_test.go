package apply

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/driver/drivertest"
	"github.com/roofline/roofline/internal/driver/process"
	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/gpu/gputest"
	"github.com/roofline/roofline/internal/model"
	"github.com/roofline/roofline/internal/model/modeltest"
	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/proxy/launch"
	"github.com/roofline/roofline/internal/rehearsal"
	"github.com/roofline/roofline/internal/state"
)

// sandboxAbout is what a third driver, "sandbox", says about itself: it
// runs the servers of the engine block named "sandboxed". No package but
// this test knows it: plan, apply and state see it only through the set.
type sandboxAbout struct{}

func (sandboxAbout) Runs(_ *config.Server, e *config.Engine) bool { return e.Name == "sandboxed" }

func (sandboxAbout) Identity(i state.Instance) (string, string) { return "sandbox", i.ID }

func (sandboxAbout) StopHint(i state.Instance, port int, obs *driver.Observed, err error) string {
	switch {
	case err != nil:
		return fmt.Sprintf("Sandbox %s may still run (%v). To stop it: sandboxctl stop %s", i.ID, err, i.ID)
	case !obs.Remains():
		return fmt.Sprintf("Sandbox %s is gone; there is nothing to stop.", i.ID)
	}
	return fmt.Sprintf("Still running: sandbox %s on port %d. To stop it: sandboxctl stop %s", i.ID, port, i.ID)
}

const sandboxHCL = `
engine "sandboxed" {
  kind      = "vllm"
  version   = "0.16.0"
  rehearsal = true
}

engine "host" {
  kind      = "vllm"
  version   = "0.16.0"
  rehearsal = true
}

model "qwen" {
  path        = "qwen3-8b"
  served_name = "qwen3-8b"
}

server "web" {
  engine = engine.sandboxed
  model  = model.qwen
  gpus   = [0]
  port   = 8000
}

server "local" {
  engine = engine.host
  model  = model.qwen
  gpus   = [1]
  port   = 8001
}
`

// TestThirdDriver: a new driver is a Driver, an About and one Register
// line. Plan chooses it for the servers its About runs, apply starts them
// with it and records its instances, the set reads them, state rm words
// them in its words, and a destroy stops them through it; plan, apply and
// state are unchanged (internal/archtest TestNoDriverNames).
func TestThirdDriver(t *testing.T) {
	sandboxDriver := func() *fakeDriver { d := newFakeDriver(); d.name = "sandbox"; return d }
	t.Run("conforms", func(t *testing.T) {
		drivertest.TestDriver(t, sandboxDriver(), drivertest.Options{
			Spec: func(t *testing.T, name, launchID string) driver.LaunchSpec {
				return driver.LaunchSpec{Driver: "sandbox", Name: name, Argv: []string{"sleep", "1h"}, LaunchID: launchID, LogPath: "/l/" + name}
			},
			Stale: map[string]func(state.Instance) state.Instance{
				"other start time": func(i state.Instance) state.Instance { i.StartTime++; return i },
			},
		})
	})
	sandbox, procs := sandboxDriver(), newFakeDriver()
	// Registered before process, whose rule (no image) also runs "web":
	// the first driver whose About runs a server runs it.
	set := driver.NewSet().Register("sandbox", sandbox, sandboxAbout{}).Register(state.DriverProcess, procs, process.About{})

	dir := t.TempDir()
	if err := modeltest.Write(filepath.Join(dir, "qwen3-8b"), modeltest.Qwen3_8B); err != nil {
		t.Fatal(err)
	}
	cfg, diags := config.Load(dir, []string{"main.hcl"}, map[string][]byte{"main.hcl": []byte(sandboxHCL)})
	if diags.HasErrors() {
		t.Fatalf("config: %v", diags)
	}
	rehearsal.ResolveAll(cfg, "/usr/bin/roofline")
	inputs := func(prior *state.File, mode plan.Mode) *plan.Inputs {
		in := &plan.Inputs{Config: cfg, Prior: prior, Mode: mode, Drivers: set, Snapshot: gputest.H100s(8),
			Engines: map[string]plan.EngineResult{}, Models: map[string]plan.ModelResult{}, Observed: map[string]*plan.Observation{},
			Now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
		for name, e := range cfg.Engines {
			inst, ok := engine.Reference(e.Kind, e.Version)
			if !ok {
				t.Fatalf("no reference for %s %s", e.Kind, e.Version)
			}
			in.Engines[name] = plan.EngineResult{Installed: inst}
		}
		for name, m := range cfg.Models {
			info, err := model.Inspect(m.Path)
			in.Models[name] = plan.ModelResult{Info: info, Err: err, Fingerprint: "fp"}
		}
		if prior != nil {
			for _, name := range prior.Names() {
				obs, err := set.Read(context.Background(), prior.Servers[name].Instance)
				if err != nil {
					t.Fatal(err)
				}
				in.Observed[name] = &plan.Observation{Alive: obs.Alive, Detail: obs.Detail, GPUPids: obs.PIDs}
			}
		}
		return in
	}

	p := plan.Make(inputs(nil, plan.ModeNormal))
	if p.HasErrors() {
		t.Fatalf("plan: %v", p.Diagnostics)
	}
	for name, want := range map[string]string{"web": "sandbox", "local": state.DriverProcess} {
		if c := p.Change(name); c == nil || c.Action != plan.Create || c.After.Driver != want {
			t.Fatalf("plan of %s: %+v; want a create with driver %q", name, c, want)
		}
	}

	ctx := context.Background()
	rec := &recorder{}
	a := &Applier{State: rec, Drivers: set, Gates: &fakeGates{}, StateDir: dir,
		Proxies: launch.Launcher{Drivers: set, StateDir: dir, Command: []string{"false"}}}
	st, err := a.Apply(ctx, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	web := st.Server("web")
	if web == nil || web.Driver != "sandbox" || web.Status != state.StatusReady || !sandbox.alive[web.PID] {
		t.Fatalf("web after apply: %+v; want a ready sandbox instance", web)
	}
	if len(sandbox.log()) != 1 || len(procs.log()) != 1 {
		t.Fatalf("starts: sandbox %v, process %v; want one each", sandbox.log(), procs.log())
	}
	if obs, err := set.Read(ctx, web.Instance); err != nil || !obs.Alive {
		t.Fatalf("Read of web: %+v, %v", obs, err)
	}
	if l, v := set.Identity(web.Instance); l != "sandbox" || v != web.ID {
		t.Errorf("Identity = %q, %q", l, v)
	}

	// The next plan reads it through its driver and changes nothing: the
	// choice is stable.
	if again := plan.Make(inputs(st, plan.ModeNormal)); again.HasErrors() || again.Change("web") != nil && again.Change("web").Action != plan.NoOp {
		t.Fatalf("second plan: %v %+v", again.Diagnostics, again.Change("web"))
	}

	// state rm reads it through its driver and says what the driver says.
	forgotten, err := Forget(ctx, set, st.Clone(), []string{"server.web"})
	if err != nil || len(forgotten) != 1 || forgotten[0].Main == nil ||
		forgotten[0].Main.Hint != "Still running: sandbox "+web.ID+" on port 8000. To stop it: sandboxctl stop "+web.ID {
		t.Fatalf("Forget = %+v, %v", forgotten, err)
	}

	// A destroy stops it through its driver.
	p = plan.Make(inputs(st, plan.ModeDestroy))
	if p.HasErrors() {
		t.Fatalf("destroy plan: %v", p.Diagnostics)
	}
	if _, err := a.Apply(ctx, p, st); err != nil {
		t.Fatal(err)
	}
	if obs, err := set.Read(ctx, web.Instance); err != nil || obs.Remains() {
		t.Fatalf("after destroy, Read of web: %+v, %v", obs, err)
	}
	if got := strings.Join(sandbox.log(), "|"); got != fmt.Sprintf("start web %d|stop %d", web.PID, web.PID) {
		t.Errorf("sandbox driver saw %s", got)
	}
}
