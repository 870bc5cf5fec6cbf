package views

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/roofline/roofline/internal/agent"
	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/engine/kinds"
	"github.com/roofline/roofline/internal/engine/logdiag"
	"github.com/roofline/roofline/internal/enginelock"
	"github.com/roofline/roofline/internal/gate"
	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/gpu/gputest"
	"github.com/roofline/roofline/internal/journal"
	"github.com/roofline/roofline/internal/model"
	"github.com/roofline/roofline/internal/model/modeltest"
	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/state/statetest"
	"github.com/roofline/roofline/internal/vram"
	"github.com/roofline/roofline/internal/vram/fromodel"
	"github.com/zclconf/go-cty/cty"
)

// testView returns a view writing into two buffers.
func testView(color bool) (*View, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	return &View{Out: &out, Err: &errOut, Color: color}, &out, &errOut
}

// viewCase is one rendering of a command's view: its stdout (and stderr,
// after a "--- stderr" line when there is any) is compared with a golden file.
type viewCase struct {
	name   string
	color  bool
	render func(v *View)
}

func runViewCases(t *testing.T, cases []viewCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, out, errOut := testView(c.color)
			c.render(v)
			got := out.String()
			if errOut.Len() > 0 {
				got += "--- stderr\n" + errOut.String()
			}
			golden(t, filepath.Join("testdata", "commands", c.name+".golden"), got)
		})
	}
}

func ptr[T any](v T) *T { return &v }

func statusRows() []StatusRow {
	fp := &Footprint{WeightsGiB: 15.3, KVCacheGiB: 50.1, KVTokens: 364912, MaxConcurrency: 11.1}
	return []StatusRow{
		{Name: "qwen", Instance: "old", Engine: "vllm", EngineKind: "vllm", Version: "0.16.0", Model: "/models/Qwen3-8B", ServedName: "qwen3-8b",
			Port: 8000, BackendPort: 18000, GPUs: []int{0}, PID: 4242, Status: state.StatusReady, Running: true, Healthy: ptr(true),
			UptimeSec: 3725.4, Measured: fp, Predicted: &Footprint{KVTokens: 360000}, Prediction: "measured", GPUMemoryBytes: 70 << 30, LogPath: "/s/logs/qwen.log"},
		{Name: "qwen", Instance: "new", Engine: "vllm", EngineKind: "vllm", Version: "0.16.1", Model: "/models/Qwen3-8B", ServedName: "qwen3-8b",
			Port: 8000, BackendPort: 18001, GPUs: []int{1}, PID: 4343, Status: state.StatusStarting, Running: true, Healthy: ptr(false),
			Detail: "GET /health: connection refused", Predicted: &Footprint{KVTokens: 360000}, LogPath: "/s/logs/qwen.next.log"},
		{Name: "gone", Engine: "sg", EngineKind: "sglang", Version: "0.5.6", ServedName: "llama", Port: 8001, GPUs: []int{2, 3},
			PID: 99, Status: state.StatusReady, Detail: "pid 99 is gone", LogPath: "/s/logs/gone.log"},
		{Name: "failed", Engine: "vllm", EngineKind: "vllm", Version: "0.16.0", ServedName: "m", Port: 8002, Status: state.StatusFailed},
		{Name: "kept", Instance: "previous", Engine: "vllm", EngineKind: "vllm", Version: "0.16.0", ServedName: "m", Port: 8003, BackendPort: 18002, GPUs: []int{4},
			PID: 4999, Status: state.StatusKept, Running: true, Healthy: ptr(true), UptimeSec: 3600},
		{Name: "kept", Engine: "vllm", EngineKind: "vllm", Version: "0.16.1", ServedName: "m", Port: 8003, BackendPort: 18003, GPUs: []int{4},
			PID: 5000, Status: state.StatusReady, Running: true, Healthy: ptr(true), UptimeSec: 60},
	}
}

func TestStatusViews(t *testing.T) {
	runViewCases(t, []viewCase{
		{"status", false, func(v *View) { NewStatus(ViewHuman, v).Rows(statusRows()) }},
		{"status-color", true, func(v *View) { NewStatus(ViewHuman, v).Rows(statusRows()) }},
		{"status-empty", false, func(v *View) { NewStatus(ViewHuman, v).Rows(nil) }},
		{"status.json", false, func(v *View) { NewStatus(ViewJSON, v).Rows(statusRows()) }},
	})
	unhealthy := map[string]bool{}
	for _, r := range statusRows() {
		unhealthy[r.Name+"/"+r.Instance] = r.Unhealthy()
	}
	want := map[string]bool{"qwen/old": false, "qwen/new": true, "gone/": true, "failed/": true, "kept/": false, "kept/previous": false}
	for k, w := range want {
		if unhealthy[k] != w {
			t.Errorf("%s: Unhealthy() = %v, want %v", k, unhealthy[k], w)
		}
	}
}

func TestShowStateViews(t *testing.T) {
	st := state.NewFile()
	s := statetest.Server("web")
	s.Argv = []string{"vllm", "serve", "/models/m", "--port", "8000"}
	st.Set(s)
	runViewCases(t, []viewCase{
		{"show-state", false, func(v *View) { NewShow(ViewHuman, v).State(st) }},
		{"show-state-empty", false, func(v *View) { NewShow(ViewHuman, v).State(state.NewFile()) }},
	})
	v, out, _ := testView(false)
	NewShow(ViewJSON, v).State(st)
	if !strings.Contains(out.String(), `"web"`) || !strings.HasSuffix(out.String(), "}\n") {
		t.Errorf("show -json of the state:\n%s", out)
	}
}

func TestJournalViews(t *testing.T) {
	entries, err := journal.Read(filepath.Join("testdata", "commands", "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	runViewCases(t, []viewCase{
		{"journal", false, func(v *View) { NewJournal(ViewHuman, v).Entries("/s/journal.jsonl", entries) }},
		{"journal-empty", false, func(v *View) { NewJournal(ViewHuman, v).Entries("/s/journal.jsonl", nil) }},
		{"journal-empty.json", false, func(v *View) { NewJournal(ViewJSON, v).Entries("/s/journal.jsonl", nil) }},
		{"journal.json", false, func(v *View) { NewJournal(ViewJSON, v).Entries("/s/journal.jsonl", entries[:1]) }},
	})
}

func TestCheckViews(t *testing.T) {
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	rep := &agent.Report{Time: at, BootID: "b1", Drift: 1, Servers: []agent.ServerReport{
		{Name: "qwen", Status: state.StatusReady, PID: 4242, Port: 8000, Alive: true, Healthy: ptr(true), Up: true, Restarts: 1},
		{Name: "llama", Status: state.StatusReady, PID: 99, Port: 8001, Detail: "pid 99 is gone", Drift: "the process is gone",
			Restarts: 3, Failures: 3, GaveUp: true, FailureClass: "oom_weights", FailureCause: "CUDA out of memory while loading the weights"},
	}}
	runViewCases(t, []viewCase{
		{"check", false, func(v *View) { NewCheck(ViewHuman, v).Report(rep) }},
		{"check-empty", false, func(v *View) { NewCheck(ViewHuman, v).Report(&agent.Report{Time: at}) }},
		{"check.json", false, func(v *View) { NewCheck(ViewJSON, v).Report(rep) }},
	})
}

func TestGPUViews(t *testing.T) {
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	busy := gputest.H100s(2, gputest.WithHost("gpu-1"), gputest.WithTakenAt(at), gputest.WithDriver("570.86.15", "12.8"),
		gputest.WithProcess(0, 4242, 70<<30, "vllm", "serve", "/models/"+strings.Repeat("x", 100)),
		gputest.WithProcess(1, 99, 1<<30, "bad\x1bname"), gputest.WithProcess(1, 100, 1<<30))
	runViewCases(t, []viewCase{
		{"gpu", false, func(v *View) { _ = NewGPU(ViewHuman, v).Snapshot(busy) }},
		{"gpu-none", false, func(v *View) { _ = NewGPU(ViewHuman, v).Snapshot(gputest.H100s(0, gputest.WithTakenAt(at))) }},
		{"gpu-warning", false, func(v *View) {
			s := gputest.H100s(1, gputest.WithTakenAt(at))
			s.Warnings = []string{"GPU 0: memory: Not Supported"}
			_ = NewGPU(ViewHuman, v).Snapshot(s)
		}},
	})
	v, out, _ := testView(false)
	if err := NewGPU(ViewJSON, v).Snapshot(busy); err != nil || !strings.Contains(out.String(), `"gpu-1"`) {
		t.Errorf("gpu -json: %v\n%s", err, out)
	}
}

func TestValidateViews(t *testing.T) {
	src := []byte("server \"a\" {\n  port = 80000\n}\n")
	files := map[string]*hcl.File{"main.hcl": {Bytes: src}}
	rng := &hcl.Range{Filename: "main.hcl", Start: hcl.Pos{Line: 2, Column: 10, Byte: 22}, End: hcl.Pos{Line: 2, Column: 15, Byte: 27}}
	errs := hcl.Diagnostics{
		{Severity: hcl.DiagError, Summary: "Invalid port", Detail: "A port is 1 to 65535.", Subject: rng},
		{Severity: hcl.DiagWarning, Summary: "Open server", Detail: "It binds every address."},
	}
	warns := errs[1:]
	runViewCases(t, []viewCase{
		{"validate-errors", false, func(v *View) { NewValidate(ViewHuman, v).Results(files, errs) }},
		{"validate-warnings", true, func(v *View) { NewValidate(ViewHuman, v).Results(files, warns) }},
		{"validate-ok", false, func(v *View) { NewValidate(ViewHuman, v).Results(nil, nil) }},
		{"validate-errors.json", false, func(v *View) { NewValidate(ViewJSON, v).Results(files, errs) }},
	})
}

func TestVersionViews(t *testing.T) {
	v, out, _ := testView(false)
	NewVersion(ViewHuman, v).Version()
	if !strings.HasPrefix(out.String(), "roofline v") || strings.Count(out.String(), "\n") != 2 {
		t.Errorf("version:\n%s", out)
	}
	v, out, _ = testView(false)
	NewVersion(ViewJSON, v).Version()
	for _, k := range []string{`"roofline_version"`, `"go_version"`, `"platform"`} {
		if !strings.Contains(out.String(), k) {
			t.Errorf("version -json lacks %s:\n%s", k, out)
		}
	}
}

func TestModelViews(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny")
	if err := modeltest.Write(dir, modeltest.Tiny, modeltest.Shards(2), modeltest.DropFile("tokenizer.json")); err != nil {
		t.Fatal(err)
	}
	info, err := model.Inspect(dir)
	if err != nil {
		t.Fatal(err)
	}
	info.Dir = "/models/tiny"
	res := &model.VerifyResult{Checked: 4, Bytes: 3 << 30, Missing: []string{"tokenizer.json"}, Extra: []string{"notes.txt"},
		Mismatched: []model.Mismatch{{File: "model-00001-of-00002.safetensors", Want: "ab12", Got: "cd34"}}}
	ok := &model.VerifyResult{Checked: 4, Bytes: 5 << 20}
	runViewCases(t, []viewCase{
		{"model-inspect", false, func(v *View) { _ = NewModelInspect(ViewHuman, v).Inspect(info, false) }},
		{"model-verify-failed", false, func(v *View) { NewModelVerify(ViewHuman, v).Verify("/models/tiny", res) }},
		{"model-verify-ok", false, func(v *View) { NewModelVerify(ViewHuman, v).Verify("/models/tiny", ok) }},
		{"model-verify-failed.json", false, func(v *View) { NewModelVerify(ViewJSON, v).Verify("/models/tiny", res) }},
		{"model-verify-ok.json", false, func(v *View) { NewModelVerify(ViewJSON, v).Verify("/models/tiny", ok) }},
		{"model-inspect.json", false, func(v *View) { _ = NewModelInspect(ViewJSON, v).Inspect(info, false) }},
		{"model-manifest", false, func(v *View) { v.ModelManifestWritten(12, "/models/tiny.sha256", "/models/tiny") }},
		{"model-synth", false, func(v *View) { v.ModelSynthWritten("Tiny", "roofline/tiny", "/models/tiny", info) }},
	})
	v, out, _ := testView(false)
	if err := NewModelInspect(ViewJSON, v).Inspect(info, true); err != nil || !strings.Contains(out.String(), `"tensors": [`) || !strings.Contains(out.String(), `"ok": false`) {
		t.Errorf("inspect -json -tensors: %v\n%.400s", err, out)
	}
	// A progress bar draws only on a terminal.
	v, _, errOut := testView(false)
	bar, progress := v.Progress("hashing", false)
	if bar != nil || progress != nil {
		t.Error("a progress bar off a terminal")
	}
	bar.Finish()
	bar, progress = v.Progress("hashing", true)
	progress(1<<30, 2<<30)
	progress(2<<30, 2<<30)
	bar.Finish()
	if s := errOut.String(); !strings.Contains(s, "hashing [") || !strings.Contains(s, "100.0%") || !strings.HasSuffix(s, "\n") {
		t.Errorf("progress bar: %q", s)
	}
}

func TestVRAMViews(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "qwen")
	if err := modeltest.Write(dir, modeltest.Qwen3_8B); err != nil {
		t.Fatal(err)
	}
	info, err := model.Inspect(dir)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := fromodel.Spec(info)
	if err != nil {
		t.Fatal(err)
	}
	h100, _ := gpu.Preset("h100")
	g := &VRAMGPUs{Name: h100.Name, Indexes: []int{3}, Total: h100.CUDATotalBytes(), NVML: h100.MemoryTotalBytes, CC: h100.ComputeCapability, Source: "preset h100"}
	estimate := func(ctx int) VRAMEstimate {
		r, err := vram.Estimate(vram.Input{Engine: kinds.VLLM, Model: spec, GPUMemoryBytes: g.Total, NVMLTotalBytes: g.NVML, GPUName: g.Name,
			ComputeCapability: g.CC, TP: 1, PP: 1, MaxModelLen: ctx, KVCacheDtype: "auto", Concurrency: 1})
		if err != nil {
			t.Fatal(err)
		}
		return VRAMEstimate{ModelDir: "/models/qwen", Model: &spec, GPUs: g, Problems: []string{"shard 2 is truncated"}, Result: r}
	}
	runViewCases(t, []viewCase{
		{"vram-fits", false, func(v *View) { _ = NewVRAM(ViewHuman, v).Estimate(estimate(32768)) }},
		{"vram-too-long", false, func(v *View) { _ = NewVRAM(ViewHuman, v).Estimate(estimate(8 << 20)) }},
	})
	v, out, _ := testView(false)
	if err := NewVRAM(ViewJSON, v).Estimate(estimate(32768)); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"prediction": "uncalibrated"`, `"model_problems": [`, `"indexes": [`, `"fits": true`} {
		if !strings.Contains(out.String(), k) {
			t.Errorf("vram -json lacks %s:\n%.600s", k, out)
		}
	}
	if strings.Contains(out.String(), "preset h100") {
		t.Error("vram -json shows the source, which only the human view says")
	}
}

func TestDiagnoseViews(t *testing.T) {
	d := logdiag.Diagnosis{Class: "oom_weights", Title: "Out of memory loading the weights", Summary: "The weights do not fit.",
		Cause: "torch.OutOfMemoryError while loading", Action: "Raise tensor_parallel_size.",
		Evidence: []string{"INFO loading", "torch.OutOfMemoryError: CUDA out of memory"}, EvidenceLines: []int{9, 112}}
	none := logdiag.Diagnosis{Class: "unknown", Title: "Unknown", Summary: "No known cause.", Cause: "-", Action: "Read the log."}
	runViewCases(t, []viewCase{
		{"diagnose", false, func(v *View) { NewDiagnose(ViewHuman, v).Diagnosis(d, "/s/logs/qwen.log") }},
		{"diagnose-bold", true, func(v *View) { NewDiagnose(ViewHuman, v).Diagnosis(d, "/s/logs/qwen.log") }},
		{"diagnose-none-stdin", false, func(v *View) { NewDiagnose(ViewHuman, v).Diagnosis(none, "-") }},
		{"diagnose.json", false, func(v *View) { NewDiagnose(ViewJSON, v).Diagnosis(d, "/s/logs/qwen.log") }},
		{"diagnose-none.json", false, func(v *View) { NewDiagnose(ViewJSON, v).Diagnosis(none, "-") }},
	})
}

func TestOutputViews(t *testing.T) {
	outs := []OutputValue{
		{Name: "base_url", Value: cty.StringVal("http://127.0.0.1:8000/v1")},
		{Name: "key", Value: cty.StringVal("sk-secret"), Sensitive: true},
		{Name: "none"},
		{Name: "ports", Value: cty.ObjectVal(map[string]cty.Value{"web": cty.NumberIntVal(8000), "batch": cty.NumberIntVal(8001)})},
	}
	one := func(vt ViewType, o OutputValue) func(v *View) {
		return func(v *View) {
			if !NewOutput(vt, v, v.Out).Output(o) {
				fmt.Fprintln(v.Out, "(failed)")
			}
		}
	}
	runViewCases(t, []viewCase{
		{"output-list", false, func(v *View) { NewOutput(ViewHuman, v, nil).Outputs(outs) }},
		{"output-list-empty", false, func(v *View) { NewOutput(ViewHuman, v, nil).Outputs(nil) }},
		{"output-list.json", false, func(v *View) { NewOutput(ViewJSON, v, nil).Outputs(outs) }},
		{"output-one-sensitive", false, one(ViewHuman, outs[1])},
		{"output-one-object", false, one(ViewHuman, outs[3])},
		{"output-one-object.json", false, one(ViewJSON, outs[3])},
		{"output-one-raw", false, one(ViewRaw, outs[0])},
		{"output-one-raw-number", false, one(ViewRaw, OutputValue{Name: "n", Value: cty.NumberFloatVal(1.5)})},
		{"output-one-raw-object", false, one(ViewRaw, outs[3])},
		{"output-one-novalue", false, one(ViewJSON, outs[2])},
	})
	// -raw and -json NAME write to the unmasked stream, the list never.
	var plain bytes.Buffer
	v, out, _ := testView(false)
	NewOutput(ViewRaw, v, &plain).Output(outs[1])
	NewOutput(ViewJSON, v, &plain).Output(outs[1])
	if out.Len() != 0 || plain.String() != "sk-secret\"sk-secret\"\n" {
		t.Errorf("masked %q, plain %q", out, plain.String())
	}
}

func TestInitView(t *testing.T) {
	runViewCases(t, []viewCase{
		{"init-failed", false, func(v *View) {
			i := NewInit(v)
			i.Probing("/srv/.roofline")
			i.Engines([]InitEngine{{Name: "vllm", Installed: "vllm 0.16.0", Flags: 412}, {Name: "a-b", Err: errors.New("no such file")},
				{Name: "a", Installed: "sglang 0.5.5", Pinned: "0.5.6"}})
			i.LockChanged("vllm", "roofline.lock.hcl", "flags changed")
			old := &enginelock.Entry{Name: "y", Kind: "vllm", Version: "0.15.1", Identity: "exe:1", FlagsHash: "h1", Flags: []string{"--gone", "--kept"}}
			now := &enginelock.Entry{Name: "y", Kind: "vllm", Version: "0.16.0", Identity: "exe:2", FlagsHash: "h2", Flags: []string{"--kept", "--new"}}
			i.LockWritten("roofline.lock.hcl", []enginelock.Change{
				{Name: "x", Now: &enginelock.Entry{Name: "x", Kind: "vllm", Version: "0.16.0", Flags: make([]string, 412)}},
				{Name: "y", Old: old, Now: now},
				{Name: "z", Old: old, Now: now, Refused: true},
			})
			i.GPUs("", 0, errors.New("NVML is not available"))
			i.Done(true)
		}},
		{"init-ok", true, func(v *View) {
			i := NewInit(v)
			i.GPUs("snapshot gpus.json", 8, nil)
			i.Done(false)
		}},
	})
}

func TestFmtView(t *testing.T) {
	src := []byte("server \"a\" {\nport=1\n")
	_, diags := hclsyntax.ParseConfig(src, "bad.hcl", hcl.InitialPos)
	runViewCases(t, []viewCase{
		{"fmt", false, func(v *View) {
			f := NewFmt(v)
			f.Changed("main.hcl")
			f.Diff("main.hcl", "a=1\n", "a = 1\n")
			f.Formatted([]byte("a = 1\n"))
			f.SyntaxErrors("bad.hcl", src, diags)
		}},
	})
}

func TestPlanViews(t *testing.T) {
	dir := t.TempDir()
	if err := modeltest.Write(filepath.Join(dir, "qwen3-8b"), modeltest.Qwen3_8B); err != nil {
		t.Fatal(err)
	}
	p := makePlan(t, dir, engines+batchServer, nil, nil)
	src := []byte("server \"a\" {\n  port = 80000\n}\n")
	files := map[string]*hcl.File{"main.hcl": {Bytes: src}}
	rng := &hcl.Range{Filename: "main.hcl", Start: hcl.Pos{Line: 2, Column: 10, Byte: 22}, End: hcl.Pos{Line: 2, Column: 15, Byte: 27}}
	diags := hcl.Diagnostics{
		{Severity: hcl.DiagError, Summary: "Invalid port", Detail: "A port is 1 to 65535.", Subject: rng},
		{Severity: hcl.DiagWarning, Summary: "Open server", Detail: "It binds every address."},
	}
	closing := func(vt ViewType) func(v *View) {
		return func(v *View) {
			pv := NewPlan(vt, v)
			pv.Errors(false)
			pv.Errors(true)
			pv.ClusterErrors()
			pv.Saved("tfplan", true)
			pv.Saved("tfplan", false)
			pv.NotSaved()
		}
	}
	runViewCases(t, []viewCase{
		{"plan-create", false, func(v *View) {
			var b bytes.Buffer
			tv := *v
			tv.Out = &b
			NewPlan(ViewHuman, &tv).Plan(p)
			fmt.Fprint(v.Out, strings.ReplaceAll(b.String(), dir, "DIR"))
		}},
		{"plan-closing", false, closing(ViewHuman)},
		{"plan-closing-json", false, closing(ViewJSON)},
		{"plan-closing-markdown", false, closing(ViewMarkdown)},
		{"plan-load-failed", false, func(v *View) { NewPlan(ViewHuman, v).LoadFailed(files, diags) }},
		{"plan-load-failed-markdown", false, func(v *View) { NewPlan(ViewMarkdown, v).LoadFailed(files, diags) }},
		{"plan-load-failed-compact", false, func(v *View) {
			v.CompactWarnings = true
			NewPlan(ViewHuman, v).LoadFailed(files, diags)
		}},
	})
	// The stream's timestamps vary: check its shape.
	v, out, _ := testView(false)
	NewPlan(ViewJSON, v).LoadFailed(files, diags)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], `"type":"version"`) || !strings.Contains(lines[1], `"type":"diagnostic"`) {
		t.Errorf("plan -json of a configuration that did not load:\n%s", out)
	}
	v, out, _ = testView(false)
	NewPlan(ViewJSON, v).Plan(p)
	if last := strings.Split(strings.TrimSpace(out.String()), "\n"); !strings.Contains(last[len(last)-1], `"type":"plan"`) {
		t.Errorf("plan -json does not end with the plan:\n%s", out)
	}
	v, out, _ = testView(false)
	NewPlan(ViewMarkdown, v).Plan(p)
	if !strings.Contains(out.String(), "server.batch") {
		t.Errorf("plan -format=markdown:\n%s", out)
	}
}

func TestRecordedGateLine(t *testing.T) {
	tests := []struct{ name, raw, want string }{
		{"health", `{"ok":true,"checks":[{"name":"/health","ok":true},{"name":"/v1/models","ok":true}]}`, "health: pass, 2 checks"},
		{"smoke", `{"ok":false,"steps":[{"name":"tool call","ok":false,"detail":"no tool_calls"},{"name":"x","ok":true}]}`, "smoke: fail, 2 checks; failed: tool call (no tool_calls)"},
		{"bench", `{"max_concurrency":16,"completed":64,"failed":0,"output_throughput":1363.4,"request_throughput":21.29,"p99_ttft_ms":54,"p99_tpot_ms":12.2,"p99_itl_ms":38.8}`,
			"bench: pass; 64 requests (0 failed) at concurrency 16: 1363 output tok/s, 21.29 req/s, TTFT p99 54 ms, TPOT p99 12.2 ms, ITL p99 38.8 ms"},
		{"bench", ``, ""},
	}
	for _, tt := range tests {
		if got := recordedGateLine(tt.name, []byte(tt.raw)); got != tt.want {
			t.Errorf("recordedGateLine(%s, %s) = %q, want %q", tt.name, tt.raw, got, tt.want)
		}
	}
}

func TestStateViews(t *testing.T) {
	full := statetest.Server("web")
	full.Status, full.ReadyAt = state.StatusReady, time.Date(2026, 1, 2, 3, 10, 0, 0, time.UTC)
	full.BackendPort, full.LaunchID, full.GateHash = 18000, "launch-1", "gate:1"
	full.Cmdline = []string{"python", "-m", "vllm serve", "--port", "18000"}
	full.Env["API_NOTE"] = "a b"
	full.Proxy = &state.Instance{Driver: state.DriverProcess, PID: 5000, Group: 5000, StartTime: 9, LogPath: "/s/logs/web.proxy.log"}
	full.Gate = &state.GateResult{Passed: false, CheckedAt: time.Date(2026, 1, 2, 3, 11, 0, 0, time.UTC),
		Health: gateReport(t, healthReport()), Smoke: gateReport(t, smokeReport())}
	full.Footprint = &state.Footprint{WeightsGiB: 15.27, KVCacheGiB: 50.24, KVTokens: 365824, MaxConcurrency: 11.16}
	full.Predicted = &state.Footprint{WeightsGiB: 15.27, KVCacheGiB: 50, KVTokens: 360000, MaxConcurrency: 11}
	old := statetest.Server("web")
	old.Status = state.StatusReady
	full.Deposed = old
	box := statetest.Server("box")
	box.Driver, box.ID, box.PID = state.DriverDocker, "c0ffee", 0
	idle := statetest.Server("idle")
	idle.PID, idle.Status = 0, state.StatusFailed

	f := state.NewFile()
	f.Set(full)
	f.Set(box)
	f.Serial, f.Lineage = 7, "lin-1"
	// The drivers word identities and hints (driver.About), as cli's set does.
	drivers := testDrivers
	seen := func(i state.Instance, port int, obs *driver.Observed, err error) *ProcessSeen {
		return &ProcessSeen{Hint: drivers.StopHint(i, port, obs, err)}
	}
	runViewCases(t, []viewCase{
		{"state-show", false, func(v *View) { NewStateShow(ViewHuman, v).Server(full, drivers) }},
		{"state-show-docker", false, func(v *View) { NewStateShow(ViewHuman, v).Server(box, drivers) }},
		{"state-list", false, func(v *View) { NewStateList(ViewHuman, v).List("/s/state.json", f) }},
		{"state-list-empty", false, func(v *View) { NewStateList(ViewHuman, v).List("/s/state.json", state.NewFile()) }},
		{"state-list.json", false, func(v *View) { NewStateList(ViewJSON, v).List("/s/state.json", f) }},
		{"state-rm", false, func(v *View) {
			v.StateRm([]StateForgotten{
				{Server: full, Main: seen(full.Instance, full.BackendPort, &driver.Observed{Alive: true, PIDs: []int{full.PID}}, nil),
					Proxy:   seen(*full.Proxy, full.Port, nil, errors.New("permission denied")),
					Deposed: seen(old.Instance, old.Port, &driver.Observed{PIDs: []int{4243, 4244}}, nil)},
				{Server: box, Main: seen(box.Instance, box.Port, &driver.Observed{Alive: true}, nil)},
				{Server: idle},
			}, false, 8)
		}},
		{"state-rm-dry-run", false, func(v *View) {
			gone := statetest.Server("gone")
			v.StateRm([]StateForgotten{{Server: gone, Main: seen(gone.Instance, gone.Port, &driver.Observed{Detail: "gone"}, nil)}}, true, 8)
		}},
	})
	v, out, _ := testView(false)
	NewStateShow(ViewJSON, v).Server(full, drivers)
	var back state.Server
	if err := json.Unmarshal(out.Bytes(), &back); err != nil || back.LaunchID != "launch-1" {
		t.Errorf("state show -json does not read back: %v\n%s", err, out)
	}
}

func TestHelpView(t *testing.T) {
	runViewCases(t, []viewCase{
		{"help", false, func(v *View) {
			v.Help([]HelpCommand{{"apply", "Start and stop servers to match the configuration"}, {"state list", "List the servers in the state"}})
		}},
		{"usage", false, func(v *View) { v.Usage(UsageVersion + "\n\n") }},
	})
	// Every help text starts with its usage line and ends with one newline.
	for name, u := range map[string]string{"state": UsageState, "status": UsageStatus, "plan": UsagePlan, "vram": UsageVRAM,
		"model synth": UsageModelSynth([]string{"qwen3-8b"}), "state rm": UsageStateRm, "flags": UsageFlags, "gpu": UsageGPU} {
		if !strings.HasPrefix(u, "Usage: roofline ") || !strings.HasSuffix(u, "\n") || strings.HasSuffix(u, "\n\n") || !strings.Contains(u, strings.Fields(name)[0]) {
			t.Errorf("%s: help text %.60q...", name, u)
		}
	}
	if !strings.Contains(UsageModelSynth([]string{"a", "b"}), "One of: a, b.") {
		t.Error("model synth's help lacks the architectures")
	}
}

func TestForceUnlockView(t *testing.T) {
	info := &state.LockInfo{ID: "lock-1", Operation: "apply", Who: "ops", Host: "gpu-host-elsewhere", PID: 4242, Path: "/s/state.json"}
	runViewCases(t, []viewCase{
		{"force-unlock", false, func(v *View) {
			f := NewForceUnlock(v)
			f.NotLocked("/s/state.lock")
			f.Mismatch("lock-2", info)
			f.Confirm(state.LockStatus{Info: info, Held: false})
			f.Answered()
			f.Confirm(state.LockStatus{Info: info, Held: true})
			f.Answered()
			f.Cancelled(true)
			f.Cancelled(false)
			f.Unlocked("lock-1")
		}},
	})
}

func TestViewMessages(t *testing.T) {
	runViewCases(t, []viewCase{
		{"messages", false, func(v *View) {
			v.Errorf("no server %q in the configuration.%s", "web", ` Did you mean "webs"?`)
			v.Warnf("engine %q pins %s, but %s is installed.\n", "vllm", "0.16.0", "0.15.1")
			v.UsageError("state show", "expected one address, server.NAME")
		}},
	})
}

func TestUnrecordedAndStaleLock(t *testing.T) {
	runViewCases(t, []viewCase{
		{"unrecorded", false, func(v *View) {
			v.Unrecorded(map[string]*plan.Observation{
				"web":   {Found: &state.Instance{Driver: state.DriverProcess, ID: "42", PID: 42}},
				"batch": {Found: &state.Instance{Driver: state.DriverDocker, ID: "c0ffee"}},
				"quiet": {Alive: true},
			})
			v.Unrecorded(map[string]*plan.Observation{"quiet": {Alive: true}}) // prints nothing
		}},
	})
	v, _, errOut := testView(false)
	v.StaleLockTakenOver(&state.LockInfo{Operation: "apply", Who: "ops", PID: 7, Host: "h", Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local)})
	if want := "Note: the previous lock (apply by ops, pid 7 on h, " + time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local).Format(time.RFC3339) + ") was left"; !strings.HasPrefix(errOut.String(), want) {
		t.Errorf("stale lock note: %q", errOut)
	}
}

func TestLogsView(t *testing.T) {
	runViewCases(t, []viewCase{
		{"logs", false, func(v *View) {
			l := NewLogs(v)
			l.Lines([]string{"INFO starting", "INFO ready"})
			if err := l.Copy(strings.NewReader("whole log\n")); err != nil {
				t.Fatal(err)
			}
			l.Follow([]byte("INFO more\x1b[0m\n"))
		}},
	})
}

func TestVRAMUnusable(t *testing.T) {
	runViewCases(t, []viewCase{
		{"vram-unusable", false, func(v *View) {
			NewVRAM(ViewJSON, v).Unusable("/models/x", errors.New("config.json: no num_hidden_layers"), []string{"shard 2 is missing"})
		}},
	})
}

// healthReport and smokeReport are gate reports as the gates write them.
func healthReport() *gate.HealthResult {
	return &gate.HealthResult{Target: gate.Target{BaseURL: "http://127.0.0.1:18000", Model: "qwen3-8b", Engine: "vllm", APIKey: "never-printed"},
		OK: true, Version: "0.16.0", Engine: "vllm", Checks: []gate.Check{
			{Name: "/health", OK: true, Detail: "200 OK", ElapsedMS: 1.25},
			{Name: "/v1/models", OK: true, Detail: "serves qwen3-8b <max_model_len 32768>", ElapsedMS: 3.5},
			{Name: "/metrics", OK: true, Skipped: true, Detail: "not asked for"}}}
}

func smokeReport() *gate.SmokeResult {
	return &gate.SmokeResult{Target: gate.Target{BaseURL: "http://127.0.0.1:18000", Model: "qwen3-8b", Engine: "vllm"},
		Steps: []gate.Check{{Name: "chat", OK: false, Detail: "empty reply", ElapsedMS: 812.5}}}
}

// gateReport is a report as the state records it.
func gateReport(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
