package snapshot

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/gpu/gputest"
	"github.com/roofline/roofline/internal/model"
	"github.com/roofline/roofline/internal/model/modeltest"
	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/rehearsal"
	"github.com/roofline/roofline/internal/state"
)

// fleet is 16 servers on 8 GPUs, two per GPU, on two vLLM versions.
func fleet() string {
	var b strings.Builder
	b.WriteString(`
engine "vllm_016" {
  kind      = "vllm"
  version   = "0.16.0"
  rehearsal = true
}

engine "vllm_085" {
  kind      = "vllm"
  version   = "0.8.5"
  rehearsal = true
}

model "qwen" {
  path        = "qwen3-8b"
  served_name = "qwen3-8b"
}
`)
	for i := 0; i < 16; i++ {
		eng := "vllm_016"
		if i%2 == 1 {
			eng = "vllm_085"
		}
		fmt.Fprintf(&b, `
server "s%02d" {
  engine                 = engine.%s
  model                  = model.qwen
  gpus                   = [%d]
  port                   = %d
  host                   = "127.0.0.1"
  max_model_len          = 16384
  gpu_memory_utilization = 0.45
  tool_call_parser       = "hermes"
  gate {
    smoke_toolcall = true
  }
}
`, i, eng, i/2, 8000+i)
	}
	return b.String()
}

// hostSnapshot plans the fleet on a "host" (reference engines, a real
// sparse model folder), records the state an apply would write, and takes
// the snapshot a timer there would publish. It returns the directory of
// the configuration (without the model folder) and the snapshot file.
func hostSnapshot(b testing.TB) (cfgDir, snapPath string) {
	host := b.TempDir()
	if err := modeltest.Write(filepath.Join(host, "qwen3-8b"), modeltest.Qwen3_8B); err != nil {
		b.Fatal(err)
	}
	src := fleet()
	cfg, diags := config.Load(host, []string{"main.hcl"}, map[string][]byte{"main.hcl": []byte(src)})
	if diags.HasErrors() {
		b.Fatal(diags)
	}
	rehearsal.ResolveAll(cfg, "/usr/bin/roofline") // as the CLI does
	in := &plan.Inputs{Config: cfg, Drivers: testDrivers, Snapshot: gputest.H100s(8), Engines: map[string]plan.EngineResult{}, Models: map[string]plan.ModelResult{},
		Observed: map[string]*plan.Observation{}, Now: time.Now()}
	for name, e := range cfg.Engines {
		inst, _ := engine.Reference(e.Kind, e.Version)
		in.Engines[name] = plan.EngineResult{Installed: inst}
	}
	info, err := model.Inspect(filepath.Join(host, "qwen3-8b"))
	if err != nil {
		b.Fatal(err)
	}
	files, _ := plan.ModelManifest(filepath.Join(host, "qwen3-8b"))
	in.Models["qwen"] = plan.ModelResult{Info: info, Files: files, Fingerprint: plan.ManifestFingerprint(files)}
	first := plan.Make(in)
	if first.HasErrors() {
		b.Fatalf("host plan: %v", first.Diagnostics)
	}
	st := state.NewFile()
	st.Lineage, st.Serial = "lin", 1
	for i, c := range first.Changes {
		d := c.After
		pid := 1000 + i
		st.Set(&state.Server{Name: d.Name, Engine: d.Engine, Model: d.Model, Argv: d.Argv, Env: d.Env, CommandLen: d.CommandLen,
			GPUs: d.GPUs, Host: d.Host, Port: d.Port, Instance: state.Instance{Driver: d.Driver, ID: state.ProcessID(pid), PID: pid},
			Status: state.StatusReady, ConfigHash: d.ConfigHash, GateHash: d.GateHash, Predicted: d.Predicted, Footprint: d.Predicted})
		healthy := true
		in.Observed[d.Name] = &plan.Observation{Alive: true, Healthy: &healthy, GPUPids: []int{pid}}
	}
	in.Prior = st
	f := Take(in, nil, "gpu-01", time.Now())
	f.Self = "/usr/bin/roofline" // as the CLI records it
	ci := b.TempDir()
	var buf bytes.Buffer
	if err := f.Write(&buf); err != nil {
		b.Fatal(err)
	}
	snapPath = filepath.Join(ci, "host.json")
	if err := os.WriteFile(snapPath, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ci, "main.hcl"), []byte(src), 0o644); err != nil {
		b.Fatal(err)
	}
	return ci, snapPath
}

var colorTags = regexp.MustCompile(`\[(reset|bold|dim|red|green|yellow|blue|magenta|cyan)\]`)

// reviewPlan is what plan -review -snapshot does after parsing its flags:
// read the snapshot, load the configuration as the host's, plan, render.
func reviewPlan(b testing.TB, cfgDir, snapPath string, w io.Writer) *plan.Plan {
	snap, err := Read(snapPath)
	if err != nil {
		b.Fatal(err)
	}
	cfg, diags := config.LoadDirInputs(cfgDir, config.Inputs{AsDir: snap.ConfigDir})
	if diags.HasErrors() {
		b.Fatal(diags)
	}
	rehearsal.ResolveAll(cfg, snap.Self) // as the CLI does, as the host runs it
	in := snap.Inputs(cfg)
	in.Drivers = testDrivers
	in.Review, in.Now = true, time.Now()
	p := plan.Make(in)
	plan.RenderHuman(w, p.ToJSON(), func(s string) string { return colorTags.ReplaceAllString(s, "") })
	return p
}

// TestReviewPlanOfAFleet: the snapshot of 16 healthy servers plans as "No
// changes" on a machine without their model folder.
func TestReviewPlanOfAFleet(t *testing.T) {
	dir, snap := hostSnapshot(t)
	var out bytes.Buffer
	p := reviewPlan(t, dir, snap, &out)
	if p.HasChanges() || p.HasErrors() || !strings.Contains(out.String(), "No changes.") || strings.Count(out.String(), "fits;") != 16 {
		t.Fatalf("errors %v\n%s", p.Diagnostics, out.String())
	}
}

// BenchmarkReviewPlanFromSnapshot: a review plan of 16 servers on 8 GPUs
// from a host snapshot (budget: 50 ms).
func BenchmarkReviewPlanFromSnapshot(b *testing.B) {
	dir, snap := hostSnapshot(b)
	b.ResetTimer()
	for b.Loop() {
		reviewPlan(b, dir, snap, io.Discard)
	}
}
