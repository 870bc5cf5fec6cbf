package plan

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/gpu/gputest"
	"github.com/roofline/roofline/internal/model"
	"github.com/roofline/roofline/internal/model/modeltest"
	"github.com/roofline/roofline/internal/rehearsal"
	"github.com/roofline/roofline/internal/state"
)

var update = flag.Bool("update", false, "rewrite golden files")

// hostReaders gives run's plans the host-secret readers (secrets_test.go).
var hostReaders bool

var configHash = regexp.MustCompile(`"config_hash": "[0-9a-f]+"`)

// models holds sparse synthetic model folders shared by the tests.
var models string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "roofline-plan-models-")
	if err != nil {
		panic(err)
	}
	for name, arch := range map[string]modeltest.Arch{"qwen3-8b": modeltest.Qwen3_8B, "llama-70b": modeltest.Llama31_70B} {
		if err := modeltest.Write(filepath.Join(dir, name), arch); err != nil {
			panic(err)
		}
	}
	models = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const baseHCL = `
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

engine "sglang" {
  kind      = "sglang"
  version   = "0.5.6.post2"
  rehearsal = true
}

model "qwen" {
  path        = "qwen3-8b"
  served_name = "qwen3-8b"
}

model "llama70" {
  path = "llama-70b"
}
`

// fakePorts holds the ports a foreign process listens on.
type fakePorts map[int]string

func (f fakePorts) Holder(host string, port int) (bool, string) {
	who, ok := f[port]
	return ok, who
}

type tc struct {
	hcl      string
	prior    *state.File
	observed map[string]*Observation
	snap     *gpu.Snapshot
	ports    fakePorts
	mode     Mode
	replace  []string
	targets  []string
	// readImport reads the processes of the import blocks.
	readImport func(config.ImportID) *ImportedProcess
	// calib are the engines' measured starts (state.CalibrationsFile).
	calib *state.Calibrations
}

// run plans tc with engines from the reference help texts and real model
// folders, no processes.
func run(t *testing.T, c tc) *Plan {
	t.Helper()
	// Model paths are relative to the configuration directory, so source
	// offsets do not depend on the temp dir's name.
	src := baseHCL + c.hcl
	cfg, diags := config.Load(models, []string{"main.hcl"}, map[string][]byte{"main.hcl": []byte(src)})
	if diags.HasErrors() {
		t.Fatalf("config: %v", diags)
	}
	rehearsal.ResolveAll(cfg, "/usr/bin/roofline") // as the CLI does
	in := &Inputs{Config: cfg, Drivers: testDrivers, Prior: c.prior, Snapshot: c.snap, Engines: map[string]EngineResult{}, Models: map[string]ModelResult{},
		Observed: c.observed, Ports: c.ports, Mode: c.mode, Replace: c.replace, Targets: c.targets, ReadImport: c.readImport, Calibrations: c.calib,
		Now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	if in.Snapshot == nil {
		in.Snapshot = gputest.H100s(8)
	}
	if hostReaders {
		in.ReadHostFile, in.Getenv = readFile, os.LookupEnv
	}
	for name, e := range cfg.Engines {
		inst, ok := engine.Reference(e.Kind, e.Version)
		if !ok {
			t.Fatalf("no reference for %s %s", e.Kind, e.Version)
		}
		in.Engines[name] = EngineResult{Installed: inst}
	}
	for name, m := range cfg.Models {
		info, err := model.Inspect(m.Path)
		in.Models[name] = ModelResult{Info: info, Err: err, Fingerprint: "fp-" + filepath.Base(m.Path)}
	}
	return Make(in)
}

// stateFrom applies a plan on paper: the state apply would write, with
// made-up pids, all alive.
func stateFrom(p *Plan) (*state.File, map[string]*Observation) {
	st := state.NewFile()
	st.Lineage, st.Serial = "lin-1", 3
	obs := map[string]*Observation{}
	pid := 1000
	for _, c := range p.Changes {
		if c.After == nil {
			continue
		}
		d := c.After
		pid++
		st.Set(&state.Server{Name: d.Name, Engine: d.Engine, Model: d.Model, Argv: d.Argv, Env: d.Env, CommandLen: d.CommandLen,
			GPUs: d.GPUs, Host: d.Host, Port: d.Port, Instance: state.Instance{Driver: d.Driver, ID: state.ProcessID(pid), PID: pid}, Status: state.StatusReady,
			ConfigHash: d.ConfigHash, GateHash: d.GateHash, Predicted: d.Predicted})
		obs[d.Name] = &Observation{Alive: true, GPUPids: []int{pid}}
	}
	return st, obs
}

func golden(t *testing.T, name string, p *Plan) {
	t.Helper()
	var human bytes.Buffer
	for _, d := range p.Diagnostics {
		fmt.Fprintf(&human, "%s: %s\n", sev(d), d.Summary)
		if d.Subject != nil {
			fmt.Fprintf(&human, "  at %s:%d\n", d.Subject.Filename, d.Subject.Start.Line)
		}
		fmt.Fprintf(&human, "  %s\n", d.Detail)
	}
	RenderHuman(&human, p.ToJSON(), func(s string) string {
		for _, tag := range []string{"[reset]", "[bold]", "[dim]", "[red]", "[green]", "[yellow]", "[cyan]", "[magenta]"} {
			s = strings.ReplaceAll(s, tag, "")
		}
		return s
	})
	js, _ := json.MarshalIndent(Document(p.ToJSON()), "", "  ")
	for _, out := range []struct {
		file string
		data []byte
	}{{name + ".txt", human.Bytes()}, {name + ".json", js}} {
		data := bytes.ReplaceAll(out.data, []byte(models), []byte("$MODELS"))
		// The config hash covers the model path, which is a temp dir.
		data = configHash.ReplaceAll(data, []byte(`"config_hash": "HASH"`))
		path := filepath.Join("testdata", out.file)
		if *update {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test -update writes it)", err)
		}
		if !bytes.Equal(want, data) {
			t.Errorf("%s differs from the golden file (go test -update rewrites it):\n%s", path, data)
		}
	}
}

func sev(d *hcl.Diagnostic) string {
	if d.Severity == hcl.DiagWarning {
		return "Warning"
	}
	return "Error"
}

// summaries lists the diagnostics, leaving out the warning about a server
// without an API key beyond loopback (TestExposureWarning checks it).
func summaries(p *Plan) []string {
	var out []string
	for _, d := range p.Diagnostics {
		if d.Summary == exposureSummary {
			continue
		}
		out = append(out, sev(d)+": "+d.Summary)
	}
	return out
}

func wantAction(t *testing.T, p *Plan, name string, want Action) *Change {
	t.Helper()
	c := p.Change(name)
	if c == nil {
		t.Fatalf("no change for %s; diags %v", name, summaries(p))
	}
	if c.Action != want {
		t.Fatalf("%s: action %q, want %q (reason %q)", name, c.Action.Symbol(), want.Symbol(), c.Reason)
	}
	return c
}

const qwenServer = `
server "qwen" {
  engine                 = engine.vllm_016
  model                  = model.qwen
  gpus                   = [0]
  port                   = 8000
  max_model_len          = 32768
  gpu_memory_utilization = 0.9
  tool_call_parser       = "hermes"
}
`

func TestFreshCreate(t *testing.T) {
	p := run(t, tc{hcl: qwenServer})
	if p.HasErrors() {
		t.Fatal(summaries(p))
	}
	c := wantAction(t, p, "qwen", Create)
	if c.Fit == nil || !c.Fit.Fits || c.After.Predicted == nil || c.After.Predicted.KVTokens <= 0 {
		t.Fatalf("a fresh server must carry its VRAM fit: %+v", c.Fit)
	}
	if add, ch, del := p.Counts(); add != 1 || ch != 0 || del != 0 {
		t.Errorf("counts %d %d %d", add, ch, del)
	}
	golden(t, "fresh-create", p)
}

func TestNoChanges(t *testing.T) {
	first := run(t, tc{hcl: qwenServer})
	st, obs := stateFrom(first)
	p := run(t, tc{hcl: qwenServer, prior: st, observed: obs})
	wantAction(t, p, "qwen", NoOp)
	if p.HasChanges() || p.HasErrors() {
		t.Fatalf("want no changes, got %v", summaries(p))
	}
	golden(t, "no-changes", p)
}

func TestChangedMaxModelLenReplaces(t *testing.T) {
	first := run(t, tc{hcl: qwenServer})
	st, obs := stateFrom(first)
	p := run(t, tc{hcl: strings.Replace(qwenServer, "32768", "16384", 1), prior: st, observed: obs})
	c := wantAction(t, p, "qwen", DeleteThenCreate)
	if c.Reason != "max_model_len changed" || c.Downtime == "" {
		t.Errorf("reason %q downtime %q", c.Reason, c.Downtime)
	}
	golden(t, "changed-max-model-len", p)

	// With create_before_destroy the new one starts beside the old one,
	// through the proxy, when the GPU holds both: not at 0.9 each.
	cbd := strings.Replace(strings.Replace(qwenServer, "32768", "16384", 1), "tool_call_parser", "lifecycle {\n    create_before_destroy = true\n  }\n  tool_call_parser", 1)
	p = run(t, tc{hcl: cbd, prior: st, observed: obs})
	c = wantAction(t, p, "qwen", DeleteThenCreate)
	if !strings.Contains(c.Downtime, "create_before_destroy is not possible") {
		t.Errorf("a GPU that cannot hold both must fall back with the reason, got %q", c.Downtime)
	}
}

func TestEngineUpgradeSideBySide(t *testing.T) {
	old := `
server "qwen_old" {
  engine           = engine.vllm_085
  model            = model.qwen
  gpus             = [0]
  port             = 8000
  max_model_len    = 16384
  tool_call_parser = "hermes"
}
`
	first := run(t, tc{hcl: old})
	st, obs := stateFrom(first)
	p := run(t, tc{hcl: old + strings.NewReplacer(`"qwen"`, `"qwen_new"`, "[0]", "[1]", "8000", "8001").Replace(qwenServer), prior: st, observed: obs})
	wantAction(t, p, "qwen_old", NoOp)
	c := wantAction(t, p, "qwen_new", Create)
	if c.After.Engine.Version != "0.16.0" || p.HasErrors() {
		t.Errorf("new engine %+v, diags %v", c.After.Engine, summaries(p))
	}
	golden(t, "engine-upgrade-side-by-side", p)
}

func TestRemovedServer(t *testing.T) {
	first := run(t, tc{hcl: qwenServer})
	st, obs := stateFrom(first)
	p := run(t, tc{hcl: "", prior: st, observed: obs})
	c := wantAction(t, p, "qwen", Delete)
	if c.Reason != "no longer in the configuration" {
		t.Errorf("reason %q", c.Reason)
	}
	golden(t, "removed-server", p)
}

func TestProcessDied(t *testing.T) {
	first := run(t, tc{hcl: qwenServer})
	st, _ := stateFrom(first)
	obs := map[string]*Observation{"qwen": {Alive: false, Detail: "pid 1001 is no longer running"}}
	p := run(t, tc{hcl: qwenServer, prior: st, observed: obs})
	c := wantAction(t, p, "qwen", Create)
	if len(p.Drift) != 1 || !strings.Contains(c.Reason, "pid 1001") {
		t.Errorf("drift %v reason %q", p.Drift, c.Reason)
	}
	golden(t, "process-died", p)
}

// TestProxyGone: the engine runs but the proxy in front of it is gone. The
// plan starts a new proxy (an update); it never restarts the engine, which
// on a real GPU reloads its weights for minutes.
func TestProxyGone(t *testing.T) {
	first := run(t, tc{hcl: qwenServer})
	st, _ := stateFrom(first)
	unhealthy := false
	obs := map[string]*Observation{"qwen": {Alive: true, ProxyGone: true, Healthy: &unhealthy,
		Detail: "the proxy on port 8000 (pid 2002) is gone; the engine (pid 1001) still runs behind it"}}
	p := run(t, tc{hcl: qwenServer, prior: st, observed: obs})
	c := wantAction(t, p, "qwen", Update)
	if !c.ProxyGone || !strings.Contains(c.Reason, "not restarted") {
		t.Errorf("change %+v", c)
	}
	if len(p.Drift) != 1 || p.Drift[0].Summary != "the proxy is gone" {
		t.Errorf("drift %+v", p.Drift)
	}
	golden(t, "proxy-gone", p)
}

func TestPortTakenByForeignProcess(t *testing.T) {
	p := run(t, tc{hcl: qwenServer, ports: fakePorts{8000: "pid 4242 (python3 -m http.server 8000)"}})
	if got := summaries(p); len(got) != 1 || got[0] != "Error: Port in use" {
		t.Fatalf("diags %v", got)
	}
	if d := others(p)[0]; !strings.Contains(d.Detail, "pid 4242") || d.Subject.Start.Line != strings.Count(baseHCL, "\n")+6 {
		t.Errorf("diag %+v at %v", d.Detail, d.Subject)
	}
	golden(t, "port-taken", p)
}

func TestModelDoesNotFit(t *testing.T) {
	hcl := `
server "big" {
  engine        = engine.vllm_016
  model         = model.llama70
  gpus          = [0]
  port          = 8000
  max_model_len = 8192
}
`
	p := run(t, tc{hcl: hcl})
	if got := summaries(p); len(got) != 1 || got[0] != "Error: Model does not fit" {
		t.Fatalf("diags %v", got)
	}
	if c := p.Change("big"); c == nil || c.Fit == nil || c.Fit.Fits || c.Fit.MinTPFit < 2 {
		t.Fatalf("fit %+v", c)
	}
	golden(t, "model-does-not-fit", p)

	// At the TP plan suggests, it fits.
	hcl2 := strings.Replace(strings.Replace(hcl, "[0]", "[0, 1, 2, 3]", 1), "port", "tensor_parallel = 4\n  port", 1)
	if p := run(t, tc{hcl: hcl2}); p.HasErrors() {
		t.Errorf("TP 4 should fit: %v", summaries(p))
	}
}

func TestTwoServersOnOneGPU(t *testing.T) {
	two := qwenServer + strings.NewReplacer(`"qwen"`, `"qwen_b"`, "8000", "8001", "0.9", "0.5").Replace(qwenServer)
	p := run(t, tc{hcl: two})
	if got := summaries(p); len(got) != 1 || got[0] != "Error: Servers on one GPU do not fit together" {
		t.Fatalf("diags %v", got)
	}
	golden(t, "two-servers-one-gpu", p)

	// Shares that add up to less than the GPU are fine.
	ok := strings.Replace(two, "0.9", "0.45", 1)
	if p := run(t, tc{hcl: ok}); p.HasErrors() {
		t.Errorf("0.45 + 0.5 should fit: %v", summaries(p))
	}
}

func TestForeignProcessMemory(t *testing.T) {
	snap := gputest.H100s(8, gputest.WithProcess(0, 4242, 40<<30, "python3 train.py"))
	p := run(t, tc{hcl: qwenServer, snap: snap})
	got := summaries(p)
	if len(got) < 2 || got[0] != "Warning: Foreign processes on GPU" {
		t.Fatalf("diags %v", got)
	}
	found := false
	for _, s := range got {
		if s == "Error: Not enough free GPU memory" {
			found = true
		}
	}
	if !found {
		t.Errorf("40 GiB held by another process leaves no room for 0.9 of the GPU: %v", got)
	}
}

func TestRemovedFlag(t *testing.T) {
	hcl := strings.Replace(qwenServer, `tool_call_parser       = "hermes"`, `extra_args             = ["--num-lookahead-slots", "4"]`, 1)
	p := run(t, tc{hcl: hcl})
	got := summaries(p)
	if len(got) != 1 || !strings.HasPrefix(got[0], "Error: ") {
		t.Fatalf("diags %v", got)
	}
	if d := others(p)[0]; !strings.Contains(d.Detail, "removed") {
		t.Errorf("detail %q should say the flag was removed", d.Detail)
	}
	golden(t, "removed-flag", p)
}

func TestDestroyAndReplace(t *testing.T) {
	first := run(t, tc{hcl: qwenServer})
	st, obs := stateFrom(first)
	p := run(t, tc{hcl: qwenServer, prior: st, observed: obs, mode: ModeDestroy})
	if c := wantAction(t, p, "qwen", Delete); c.Reason != "destroy requested" { // not "# (destroy)" under "will be destroyed"
		t.Errorf("destroy reason %q", c.Reason)
	}
	p = run(t, tc{hcl: qwenServer, prior: st, observed: obs, replace: []string{"qwen"}})
	c := wantAction(t, p, "qwen", DeleteThenCreate)
	if c.Reason != "replacement requested with -replace" {
		t.Errorf("reason %q", c.Reason)
	}
}

func TestStalePlan(t *testing.T) {
	first := run(t, tc{hcl: qwenServer})
	dir := t.TempDir()
	path := filepath.Join(dir, "plan.json")
	if err := Save(path, first, testKey); err != nil {
		t.Fatal(err)
	}
	p, err := Load(path, testKey)
	if err != nil {
		t.Fatal(err)
	}
	if p.Change("qwen").Action != Create || p.Change("qwen").After.ConfigHash != first.Change("qwen").After.ConfigHash {
		t.Fatal("the plan file must round-trip")
	}
	fp := first.InventoryFingerprint
	if err := CheckFresh(p, state.NewFile(), fp); err != nil {
		t.Fatalf("fresh plan refused: %v", err)
	}
	applied, _ := stateFrom(first)
	if err := CheckFresh(p, applied, fp); err == nil {
		t.Fatal("a plan made before the state changed must be refused")
	}
	changed := gputest.H100s(8, gputest.WithProcess(2, 99, 1<<30, "other")).Fingerprint()
	if err := CheckFresh(p, state.NewFile(), changed); err == nil {
		t.Fatal("a plan made before the GPUs changed must be refused")
	}
}

// TestReviewPlan: in code review the engine and the model folder are not on
// the machine; plan checks flags against the built-in list and warns.
func TestReviewPlan(t *testing.T) {
	src := baseHCL + strings.Replace(qwenServer, `model                  = model.qwen`, `model                  = model.elsewhere`, 1) + `
model "elsewhere" {
  path = "/models/not-on-this-machine"
}
`
	cfg, diags := config.Load(models, []string{"main.hcl"}, map[string][]byte{"main.hcl": []byte(src)})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	mk := func(review bool) *Plan {
		rehearsal.ResolveAll(cfg, "/usr/bin/roofline") // as the CLI does
		in := &Inputs{Config: cfg, Drivers: testDrivers, Snapshot: gputest.H100s(8), Engines: map[string]EngineResult{}, Models: map[string]ModelResult{},
			Review: review, Now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
		for name := range cfg.Engines {
			in.Engines[name] = EngineResult{Err: fmt.Errorf("executable %q not found", "/opt/vllm/bin/vllm")}
		}
		for name, m := range cfg.Models {
			info, err := model.Inspect(m.Path)
			in.Models[name] = ModelResult{Info: info, Err: err}
		}
		return Make(in)
	}
	if p := mk(false); !p.HasErrors() {
		t.Fatal("without review, a missing engine is an error")
	}
	p := mk(true)
	if p.HasErrors() || !p.Review {
		t.Fatalf("review plan has errors or is not marked: %v", summaries(p))
	}
	got := strings.Join(summaries(p), "; ")
	if !strings.Contains(got, "Warning: Engine not installed here") || !strings.Contains(got, "Warning: Model folder not here") {
		t.Fatalf("diags: %s", got)
	}
	c := wantAction(t, p, "qwen", Create)
	if !strings.Contains(strings.Join(c.After.Argv, " "), "--tool-call-parser hermes") {
		t.Errorf("argv not rendered from the built-in flag list: %v", c.After.Argv)
	}
	// A flag the pinned version lacks is still caught.
	bad := strings.Replace(src, `tool_call_parser       = "hermes"`, `extra_args = ["--num-lookahead-slots", "4"]`, 1)
	cfg, _ = config.Load(models, []string{"main.hcl"}, map[string][]byte{"main.hcl": []byte(bad)})
	if p := mk(true); !p.HasErrors() {
		t.Error("a removed flag must fail a review plan too")
	}
}

// others is p's diagnostics without the exposure warning.
func others(p *Plan) hcl.Diagnostics {
	var out hcl.Diagnostics
	for _, d := range p.Diagnostics {
		if d.Summary != exposureSummary {
			out = append(out, d)
		}
	}
	return out
}

const exposureSummary = "Server open beyond loopback without an API key"

// TestExposureWarning: a server reachable beyond loopback without an API
// key is a warning; with a key, or on loopback, it is not.
func TestExposureWarning(t *testing.T) {
	rows := []struct {
		name, attrs string
		warn        bool
	}{
		{"vLLM default host", ``, true},
		{"all interfaces", `host = "0.0.0.0"`, true},
		{"loopback", `host = "127.0.0.1"`, false},
		{"keyed", `api_key = "k-123"`, false},
		{"key file", `api_key_file = "/etc/roofline/key"`, false},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			p := run(t, tc{hcl: strings.Replace(qwenServer, "  port ", "  "+r.attrs+"\n  port ", 1)})
			got := false
			for _, d := range p.Diagnostics {
				got = got || d.Summary == exposureSummary
			}
			if got != r.warn {
				t.Fatalf("warning %v, want %v: %v", got, r.warn, summaries(p))
			}
		})
	}
}

// TestTargetCountsUntargetedMemory: with -target, a running server that the
// plan leaves out still holds its GPU memory; a targeted server that does
// not fit beside it is an error on the targeted server's gpus (it passed:
// the untargeted server's processes were ours, so neither foreign nor
// claimed).
func TestTargetCountsUntargetedMemory(t *testing.T) {
	st, obs := stateFrom(run(t, tc{hcl: qwenServer}))
	second := strings.NewReplacer(`"qwen"`, `"qwen2"`, "8000", "8001", "0.9", "0.5").Replace(qwenServer)
	hcl := qwenServer + second
	for _, targets := range [][]string{nil, {"qwen2"}} {
		p := run(t, tc{hcl: hcl, prior: st, observed: obs, targets: targets})
		var found *hcl2Diag
		for _, d := range p.Diagnostics {
			if d.Summary == "Servers on one GPU do not fit together" {
				found = &hcl2Diag{d.Detail, d.Subject.Start.Line}
			}
		}
		if found == nil {
			t.Fatalf("targets %v: no memory error: %v", targets, summaries(p))
		}
		if wantLine := strings.Count(baseHCL+qwenServer, "\n") + 5; found.line != wantLine {
			t.Errorf("targets %v: error on line %d, want %d (qwen2's gpus)", targets, found.line, wantLine)
		}
		if targets != nil && !strings.Contains(found.detail, "qwen (not targeted, running)") {
			t.Errorf("targets %v: %s", targets, found.detail)
		}
	}
}

type hcl2Diag struct {
	detail string
	line   int
}
