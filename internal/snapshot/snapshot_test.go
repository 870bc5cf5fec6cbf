package snapshot

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/gpu/gputest"
	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/state"
)

func TestTakeAttributesAndHidesSecrets(t *testing.T) {
	snap := gputest.H100s(2)
	snap.GPUs[0].Processes = []gpu.Process{
		{PID: 100, UsedMemoryBytes: 70 << 30, Name: "python3", Cmdline: []string{"vllm", "serve", "--api-key", "sk-supersecret"}},
		{PID: 200, UsedMemoryBytes: 2 << 30, Name: "Xorg"},
	}
	st := state.NewFile()
	st.Set(&state.Server{Name: "web", Status: state.StatusReady, Env: map[string]string{"HF_TOKEN": state.RedactValue("hf_abc")}})
	healthy := true
	in := &plan.Inputs{Prior: st, Snapshot: snap,
		Observed: map[string]*plan.Observation{"web": {Alive: true, Healthy: &healthy, GPUPids: []int{100}}},
		Engines:  map[string]plan.EngineResult{"broken": {Err: errors.New("no such file")}},
		Models:   map[string]plan.ModelResult{},
		Calibrations: &state.Calibrations{FormatVersion: 1, Records: []state.Calibration{
			{Key: state.CalibrationKey{Engine: "vllm", MaxModelLen: 8192}, Server: "web", KVTokens: 351264}}}}
	f := Take(in, nil, "gpu-01", time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	var buf bytes.Buffer
	if err := f.Write(&buf); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"sk-supersecret", "hf_abc"} {
		if strings.Contains(buf.String(), secret) {
			t.Errorf("the snapshot holds %q", secret)
		}
	}
	if len(f.GPUProcesses) != 2 || f.GPUProcesses[0].Server != "web" || f.GPUProcesses[1].Server != "" {
		t.Errorf("attribution: %+v", f.GPUProcesses)
	}
	if snap.GPUs[0].Processes[0].Cmdline == nil {
		t.Error("Take changed its input")
	}
	path := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	pin := back.Inputs(nil)
	if o := pin.Observed["web"]; o == nil || !o.Alive || len(o.GPUPids) != 1 || back.Host != "gpu-01" || pin.Snapshot == nil || pin.Snapshot.Fingerprint() != f.GPUs.Fingerprint() {
		t.Errorf("round trip: %+v", pin.Observed["web"])
	}
	// The calibrations travel, so that a review plan predicts as the host's.
	if c := pin.Calibrations.Exact(state.CalibrationKey{Engine: "vllm", MaxModelLen: 8192}); c == nil || c.KVTokens != 351264 {
		t.Errorf("calibrations lost: %+v", pin.Calibrations)
	}
	if back.Engines["broken"].Error != "no such file" {
		t.Errorf("engine error lost: %+v", back.Engines["broken"])
	}
	if err := os.WriteFile(path, bytes.Replace(buf.Bytes(), []byte(`"format_version": "1.0"`), []byte(`"format_version": "2.0"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(path); err == nil || !strings.Contains(err.Error(), `snapshot format "2.0"`) {
		t.Errorf("a newer format is not refused: %v", err)
	}
	if err := os.WriteFile(path, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(path); err == nil {
		t.Error("a broken file is accepted")
	}
}

// TestSave: the file holds what Write writes, reads back, is readable by
// others (0644), and a path that cannot be written says so.
func TestSave(t *testing.T) {
	f := Take(&plan.Inputs{Prior: state.NewFile(), Snapshot: gputest.H100s(1)}, nil, "gpu-01", time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	var want bytes.Buffer
	if err := f.Write(&want); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "s.json")
	if err := f.Save(path); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("saved %d bytes (%v), want what Write writes (%d)", len(got), err, want.Len())
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	if back, err := Read(path); err != nil || back.Host != "gpu-01" {
		t.Errorf("Read = %+v, %v", back, err)
	}
	if err := f.Save(filepath.Join(t.TempDir(), "missing", "s.json")); err == nil || !strings.Contains(err.Error(), "writing the snapshot") {
		t.Errorf("Save into a missing directory: %v", err)
	}
}

// TestReadRefusesDevicesAndFIFOs: plan -snapshot=FILE refuses what is not a
// regular file at once: a FIFO blocked the open forever, /dev/zero read as
// "invalid character '\x00'".
func TestReadRefusesDevicesAndFIFOs(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, "/dev/zero"} {
		done := make(chan error, 1)
		go func() { _, err := Read(path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("Read(%s) = %v", path, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Read(%s) did not return in 10 s", path)
		}
	}
}

// TestObservationsTravel: what the host's refresh saw that steers its plan
// reaches the review plan. A proxy gone in front of a running engine is an
// update on the host (a new proxy); a review plan that lost it showed
// "running but not healthy" and no change. The proxy's backend port
// decides which instance of an interrupted rollout serves.
func TestObservationsTravel(t *testing.T) {
	unhealthy := false
	in := &plan.Inputs{Prior: state.NewFile(), Snapshot: gputest.H100s(1),
		Observed: map[string]*plan.Observation{"web": {Alive: true, Healthy: &unhealthy, ProxyGone: true, ProxyPort: 41234,
			Detail: "the proxy on port 8000 (pid 8) is gone; the engine (pid 1) still runs behind it"}}}
	f := Take(in, nil, "gpu-01", time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	path := filepath.Join(t.TempDir(), "s.json")
	if err := f.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	o := back.Inputs(nil).Observed["web"]
	if o == nil || !o.ProxyGone || o.ProxyPort != 41234 || !o.Alive || o.Healthy == nil || *o.Healthy {
		t.Errorf("observation after the snapshot file: %+v, want the proxy gone and the backend port 41234", o)
	}
}
