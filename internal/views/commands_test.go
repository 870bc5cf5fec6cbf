package views

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/gpu/gputest"
	"github.com/roofline/roofline/internal/journal"
	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/state/statetest"
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
	want := map[string]bool{"qwen/old": false, "qwen/new": true, "gone/": true, "failed/": true}
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

func TestGPUViews(t *testing.T) {
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	busy := gputest.H100s(2, gputest.WithHost("gpu-1"), gputest.WithTakenAt(at), gputest.WithDriver("570.86.15", "12.8"),
		gputest.WithProcess(0, 4242, 70<<30, "vllm", "serve", "/models/"+strings.Repeat("x", 100)),
		gputest.WithProcess(1, 99, 1<<30, "bad\x1bname"), gputest.WithProcess(1, 100, 1<<30))
	runViewCases(t, []viewCase{
		{"gpu", false, func(v *View) { _ = NewGPU(ViewHuman, v).Snapshot(busy) }},
		{"gpu-none", false, func(v *View) { _ = NewGPU(ViewHuman, v).Snapshot(gputest.H100s(0, gputest.WithTakenAt(at))) }},
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
