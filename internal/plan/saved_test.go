package plan

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/gpu/gputest"
	"github.com/roofline/roofline/internal/state"
)

func TestCheckApplicable(t *testing.T) {
	if err := (&Plan{}).CheckApplicable("p.plan"); err != nil {
		t.Errorf("a host plan: %v", err)
	}
	err := (&Plan{Review: true}).CheckApplicable("p.plan")
	if err == nil || !strings.HasPrefix(err.Error(), "p.plan is a review plan\n\n") || !strings.Contains(err.Error(), "without -inventory") {
		t.Errorf("a review plan: %v", err)
	}
}

func TestCheckSaved(t *testing.T) {
	st := state.NewFile()
	probes := 0
	installs := func(engine string) func() (map[string]string, map[string]string) {
		return func() (map[string]string, map[string]string) {
			probes++
			return map[string]string{"v": engine}, nil
		}
	}
	for _, tc := range []struct {
		name      string
		p         *Plan
		fp        string
		installs  string
		want      string // in the error; "" for none
		wantProbe bool
	}{
		{"fresh", &Plan{Lineage: st.Lineage, PriorSerial: st.Serial, Installs: map[string]string{"v": "id1"}}, "", "id1", "", true},
		{"the state moved: no probe", &Plan{Lineage: st.Lineage, PriorSerial: st.Serial + 1}, "", "id1", "the state changed", false},
		{"the GPUs changed", &Plan{Lineage: st.Lineage, PriorSerial: st.Serial, InventoryFingerprint: "a"}, "b", "id1", "the GPUs changed", false},
		{"an engine changed", &Plan{Lineage: st.Lineage, PriorSerial: st.Serial, Installs: map[string]string{"v": "id1"}}, "", "id2", `engine "v" changed`, true},
	} {
		probes = 0
		err := CheckSaved(tc.p, st, tc.fp, installs(tc.installs))
		if (err == nil) != (tc.want == "") || (err != nil && (!strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrStale))) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
		if (probes > 0) != tc.wantProbe {
			t.Errorf("%s: probed %d times", tc.name, probes)
		}
	}
}

func TestPlanSensitiveValues(t *testing.T) {
	p := &Plan{Changes: []*Change{
		{Name: "a", After: &Desired{Env: map[string]string{"HF_TOKEN": "hf_secret", "X": "plain"}, Sensitive: []string{"env.HF_TOKEN"}}},
		{Name: "gone"},
		{Name: "b", After: &Desired{Argv: []string{"serve", "--api-key=sk-1"}, Sensitive: []string{"argv[1]"}}},
	}}
	if got, want := p.SensitiveValues(), []string{"hf_secret", "sk-1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("%q, want %q", got, want)
	}
}

// probes answers an engine's probe by its kind; an unknown kind fails.
type probes map[string]*engine.Installed

func (p probes) Probe(_ context.Context, e *config.Engine) (*engine.Installed, error) {
	if inst := p[e.Kind]; inst != nil {
		return inst, nil
	}
	return nil, errors.New("not installed")
}

func TestCurrentInstalls(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{
		Engines: map[string]*config.Engine{
			"v": {Kind: "vllm"},
			"s": {Kind: "sglang"}, // not installed: left out
		},
		Models: map[string]*config.Model{
			"q":       {Path: dir},
			"missing": {Path: filepath.Join(dir, "nope")},
		},
	}
	inst := &engine.Installed{Kind: "vllm", Flags: &engine.FlagSet{}, Identity: engine.Identity{InstallHash: "h1"}}
	installs, models := CurrentInstalls(context.Background(), cfg, probes{"vllm": inst})
	if want := map[string]string{"v": "h1 " + inst.Flags.Hash()}; !reflect.DeepEqual(installs, want) {
		t.Errorf("installs %q, want %q", installs, want)
	}
	files, err := ModelManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"q": ManifestFingerprint(files)}; !reflect.DeepEqual(models, want) {
		t.Errorf("models %q, want %q", models, want)
	}
}

func TestInstalledOf(t *testing.T) {
	v := &engine.Installed{Kind: "vllm"}
	got := InstalledOf(map[string]EngineResult{"v": {Installed: v}, "broken": {}})
	if len(got) != 2 || got["v"] != v || got["broken"] != nil {
		t.Errorf("%v", got)
	}
}

// gpus is a GPU inventory that answers with a fixed snapshot or error.
type gpus struct {
	snap *gpu.Snapshot
	err  error
}

func (g gpus) Snapshot(context.Context) (*gpu.Snapshot, error) { return g.snap, g.err }

func TestOpenSaved(t *testing.T) {
	dir := t.TempDir()
	keys := state.NewFilesystem(filepath.Join(dir, "state"))
	st := state.NewFile()
	inst := &engine.Installed{Kind: "vllm", Flags: &engine.FlagSet{}, Identity: engine.Identity{InstallHash: "h1"}}
	cfg := &config.Config{Engines: map[string]*config.Engine{"v": {Kind: "vllm"}}}
	now, _ := CurrentInstalls(context.Background(), cfg, probes{"vllm": inst})
	h100s := gputest.H100s(2)
	host := &Plan{FormatVersion: FormatVersion, Lineage: st.Lineage, PriorSerial: st.Serial, Installs: now, InventoryFingerprint: h100s.Fingerprint()}
	save := func(name string, p *Plan) string {
		path := filepath.Join(dir, name)
		if err := WriteFile(path, p, keys); err != nil {
			t.Fatal(err)
		}
		return path
	}
	fresh := save("fresh.plan", host)
	review := save("review.plan", &Plan{FormatVersion: FormatVersion, Review: true})
	otherKey := filepath.Join(dir, "other.plan")
	if err := Save(otherKey, host, []byte("another state directory's key!!!")); err != nil {
		t.Fatal(err)
	}
	saved := Saved{Keys: keys, State: st, GPUs: gpus{snap: h100s}, Config: cfg, Engines: probes{"vllm": inst}}
	p, err := OpenSaved(context.Background(), fresh, saved)
	if err != nil || p.Snapshot != h100s {
		t.Fatalf("a fresh plan: %v (snapshot %v)", err, p)
	}

	upgraded := &engine.Installed{Kind: "vllm", Flags: &engine.FlagSet{}, Identity: engine.Identity{InstallHash: "h2"}}
	for _, tc := range []struct {
		name  string
		path  string
		edit  func(*Saved)
		want  string // the message's start
		stale bool
	}{
		{"another key", otherKey, nil, otherKey + ": ", false},
		{"a review plan", review, nil, review + " is a review plan\n\n", false},
		{"the GPUs unreadable", fresh, func(s *Saved) { s.GPUs = gpus{err: errors.New("no NVML")} }, "cannot check the GPUs against the saved plan: no NVML", false},
		{"the GPUs changed", fresh, func(s *Saved) { s.GPUs = gpus{snap: gputest.H100s(2, gputest.WithUsed(0, 1<<30))} }, "Saved plan is stale\n\nstale plan: the GPUs changed", true},
		{"the engine changed", fresh, func(s *Saved) { s.Engines = probes{"vllm": upgraded} }, "Saved plan is stale\n\nstale plan: engine \"v\" changed", true},
	} {
		s := saved
		if tc.edit != nil {
			tc.edit(&s)
		}
		p, err := OpenSaved(context.Background(), tc.path, s)
		if p != nil || err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
			continue
		}
		// A refusal is a sentence apply prints after "Error: ".
		var refused *Refused
		if errors.As(err, &refused) && (refused.Stale != tc.stale || !strings.HasSuffix(err.Error(), ".")) || tc.stale && !errors.Is(err, ErrStale) {
			t.Errorf("%s: %q, stale %v", tc.name, err, tc.stale)
		}
	}
}
