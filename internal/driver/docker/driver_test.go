package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/driver/drivertest"
	"github.com/roofline/roofline/internal/state"
)

var update = flag.Bool("update", false, "rewrite golden files")

const (
	testRef = "vllm/vllm-openai@sha256:1111111111111111111111111111111111111111111111111111111111111111"
	testID  = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

// newTestDriver is a driver on a fake daemon (API 1.41) that has the test
// image.
func newTestDriver(t *testing.T) (*fakeDaemon, *Driver) {
	t.Helper()
	f, c := newFakeDaemon(t, "1.41")
	f.addImage(testID, testRef)
	return f, New(c)
}

func testSpec(t *testing.T) Spec {
	return Spec{Name: "qwen3", Image: testRef, Argv: []string{"vllm", "serve", "/models/qwen3", "--port", "8000"},
		Env: map[string]string{"HF_HUB_OFFLINE": "1", "ROOFLINE_LAUNCH_ID": "0123456789abcdef"}, GPUs: []int{2, 3},
		ModelPath: "/models/qwen3", LogPath: filepath.Join(t.TempDir(), "qwen3.log"), LaunchID: "0123456789abcdef",
		Labels: map[string]string{LabelLineage: "lin-1", LabelConfigHash: "c0ffee", LabelStateDir: "/srv/.roofline"}}
}

func TestNegotiate(t *testing.T) {
	for _, tt := range []struct {
		daemon, want, err string
	}{
		{"1.41", "1.41", ""},
		{"1.52", MaxAPIVersion, ""},
		{"1.40", "1.40", ""},
		{"1.39", "", "needs 1.40 or newer"},
	} {
		t.Run(tt.daemon, func(t *testing.T) {
			f, c := newFakeDaemon(t, tt.daemon)
			v, err := c.Version(context.Background())
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "upgrade Docker") {
					t.Fatalf("Version = %q, %v; want an error with %q", v, err, tt.err)
				}
				return
			}
			if err != nil || v != tt.want {
				t.Fatalf("Version = %q, %v; want %s", v, err, tt.want)
			}
			f.addImage(testID, testRef)
			if _, err := c.ImageInspect(context.Background(), testRef); err != nil {
				t.Fatal(err)
			}
			if got := f.requests(); got[len(got)-1] != "GET /v"+tt.want+"/images/"+testRef+"/json" {
				t.Errorf("request %q does not use the negotiated version", got[len(got)-1])
			}
		})
	}
}

func TestUnreachable(t *testing.T) {
	c, err := NewClient("unix://" + filepath.Join(t.TempDir(), "none.sock"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Version(context.Background())
	var ue *UnreachableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "cannot reach the Docker daemon") || !strings.Contains(err.Error(), "systemctl start docker") {
		t.Errorf("error %v", err)
	}
	for _, host := range []string{"ssh://box", "npipe:////./pipe/docker"} {
		if _, err := NewClient(host); err == nil {
			t.Errorf("NewClient(%q) accepted", host)
		}
	}
}

// TestContainerConfig pins the create request: host network and IPC,
// docker-init, no restart policy, rotated logs, the model read-only at its
// path, the GPUs as an NVIDIA device request, the labels, the command.
func TestContainerConfig(t *testing.T) {
	d := New(nil)
	b, err := json.MarshalIndent(d.containerConfig(testSpec(t), testRef), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "create.json.golden")
	if *update {
		if err := os.WriteFile(golden, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(b)+"\n" {
		t.Errorf("create request differs from %s (run with -update after checking):\n%s", golden, b)
	}
	// Without GPUs there is no device request (it would need the NVIDIA
	// runtime for nothing).
	s := testSpec(t)
	s.GPUs = nil
	if cfg := d.containerConfig(s, testRef); cfg.HostConfig.DeviceRequests != nil {
		t.Errorf("device requests without GPUs: %+v", cfg.HostConfig.DeviceRequests)
	}
}

func TestContainerName(t *testing.T) {
	for _, tt := range []struct{ server, launch, want string }{
		{"qwen3", "0123456789abcdef", "roofline-qwen3-0123456789abcdef"},
		{"a b/c", "x", "roofline-a_b_c-x"},
	} {
		if got := ContainerName(tt.server, tt.launch); got != tt.want {
			t.Errorf("ContainerName(%q, %q) = %q, want %q", tt.server, tt.launch, got, tt.want)
		}
	}
}

func TestResolveImage(t *testing.T) {
	f, c := newFakeDaemon(t, "1.41")
	d := New(c)
	ctx := context.Background()
	f.addImage(testID, testRef)
	if ref, img, err := d.ResolveImage(ctx, testRef); err != nil || ref != testRef || img.ID != testID {
		t.Errorf("by registry digest: %q %v %v", ref, img, err)
	}
	// docker load keeps the id, not the registry digest: a pin by id works.
	byID := "vllm/vllm-openai@" + testID
	if ref, img, err := d.ResolveImage(ctx, byID); err != nil || ref != testID || img.ID != testID {
		t.Errorf("by image id: %q %v %v", ref, img, err)
	}
	missing := "vllm/vllm-openai@sha256:3333333333333333333333333333333333333333333333333333333333333333"
	_, _, err := d.ResolveImage(ctx, missing)
	var me *ImageMissingError
	if !errors.As(err, &me) {
		t.Fatalf("missing image: %v", err)
	}
	for _, w := range []string{missing + " is not on this host", "roofline never pulls", "docker save -o engine.tar " + missing,
		"docker load -i engine.tar", `image = "vllm/vllm-openai@sha256:<id>"`, "docker images --no-trunc"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("missing-image error lacks %q:\n%v", w, err)
		}
	}
	for _, r := range f.requests() {
		if strings.Contains(r, "/images/create") {
			t.Errorf("the driver pulled: %s", r)
		}
	}
}

func TestLifecycle(t *testing.T) {
	f, d := newTestDriver(t)
	ctx := context.Background()
	spec := testSpec(t)
	p, err := d.StartContainer(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if p.ID == "" || p.PID == 0 || p.StartTime == 0 || p.LogPath != spec.LogPath || !slices.Equal(p.Cmdline, spec.Argv) {
		t.Fatalf("Start = %+v", p)
	}
	fc := f.containers[p.ID]
	if fc.c.Name != "/roofline-qwen3-0123456789abcdef" || fc.cfg.Image != testRef {
		t.Errorf("container %s from %s", fc.c.Name, fc.cfg.Image)
	}
	f.log(p.ID, Stdout, "INFO starting\n")
	f.log(p.ID, Stderr, "WARNING on stderr\n")

	st, err := d.Check(ctx, p, spec.Name, spec.LaunchID)
	if err != nil || !st.Alive || !slices.Equal(st.PIDs, []int{p.PID, p.PID + 1}) {
		t.Fatalf("Check = %+v, %v", st, err)
	}
	if got := readFile(t, spec.LogPath); got != "INFO starting\nWARNING on stderr\n" {
		t.Errorf("log mirror %q", got)
	}
	tops := func() int {
		n := 0
		for _, r := range f.requests() {
			if strings.HasSuffix(r, "/top") {
				n++
			}
		}
		return n
	}
	before := tops()
	if !d.Alive(ctx, p) {
		t.Error("Alive false for a running container")
	}
	if tops() != before {
		t.Error("Alive (polled during the health wait) listed the container's processes")
	}
	if err := d.Stop(ctx, *p, 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.containers[p.ID]; ok {
		t.Error("Stop left the container")
	}
	// The last lines (those written while stopping) are copied before removal;
	// the grace went to the daemon in whole seconds, rounded up.
	if got := readFile(t, spec.LogPath); !strings.HasSuffix(got, "stopped after t=2\n") {
		t.Errorf("log after stop %q", got)
	}
	if d.Alive(ctx, p) {
		t.Error("Alive true for a removed container")
	}
	if err := d.Stop(ctx, *p, time.Second); err != nil {
		t.Errorf("stopping a removed container: %v", err)
	}
}

// TestCheck: what refresh reports for each way a container stops being
// the one roofline started.
func TestCheck(t *testing.T) {
	tests := []struct {
		name  string
		do    func(f *fakeDaemon, d *Driver, p *state.Instance)
		alive bool
		want  []string
	}{
		{"running", func(*fakeDaemon, *Driver, *state.Instance) {}, true, nil},
		{"docker kill", func(f *fakeDaemon, _ *Driver, p *state.Instance) { f.exit(p.ID, 137, false) }, false,
			[]string{"exited with status 137", "SIGKILL: docker kill"}},
		{"out of memory", func(f *fakeDaemon, _ *Driver, p *state.Instance) { f.exit(p.ID, 137, true) }, false,
			[]string{"killed for lack of host memory"}},
		{"crash", func(f *fakeDaemon, _ *Driver, p *state.Instance) { f.exit(p.ID, 1, false) }, false,
			[]string{"exited with status 1 at 2026-01-02T"}},
		{"docker restart", func(f *fakeDaemon, _ *Driver, p *state.Instance) { f.restart(p.ID) }, false,
			[]string{"restarted by hand", "not the one roofline started"}},
		{"docker rm", func(f *fakeDaemon, _ *Driver, p *state.Instance) { f.remove(p.ID) }, false,
			[]string{"was removed behind roofline's back"}},
		{"docker rm, then docker run --name", func(f *fakeDaemon, d *Driver, p *state.Instance) {
			f.remove(p.ID)
			s := testSpec(t)
			s.LaunchID = "handmade"
			if _, err := d.C.ContainerCreate(context.Background(), ContainerName("qwen3", "0123456789abcdef"), d.containerConfig(s, testRef)); err != nil {
				t.Fatal(err)
			}
		}, false, []string{"was removed", "now has its name roofline-qwen3-0123456789abcdef but roofline did not start it", `"handmade"`, "docker rm -f roofline-qwen3-0123456789abcdef"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, c := newFakeDaemon(t, "1.41")
			f.addImage(testID, testRef)
			d := New(c)
			spec := testSpec(t)
			p, err := d.StartContainer(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			tt.do(f, d, p)
			st, err := d.Check(context.Background(), p, spec.Name, spec.LaunchID)
			if err != nil {
				t.Fatal(err)
			}
			if st.Alive != tt.alive {
				t.Errorf("Alive = %v, want %v (%s)", st.Alive, tt.alive, st.Detail)
			}
			for _, w := range tt.want {
				if !strings.Contains(st.Detail, w) {
					t.Errorf("detail %q lacks %q", st.Detail, w)
				}
			}
		})
	}
}

func TestStartErrors(t *testing.T) {
	tests := []struct {
		name     string
		prepare  func(f *fakeDaemon, d *Driver)
		want     []string
		leftOver bool
	}{
		{"name in use", func(f *fakeDaemon, d *Driver) {
			s := testSpec(t)
			if _, err := d.C.ContainerCreate(context.Background(), ContainerName(s.Name, s.LaunchID), d.containerConfig(s, testRef)); err != nil {
				t.Fatal(err)
			}
		}, []string{"already exists", "docker rm -f roofline-qwen3-0123456789abcdef"}, true},
		{"no NVIDIA hook", func(f *fakeDaemon, _ *Driver) {
			f.startErr = `could not select device driver "nvidia" with capabilities: [[gpu]]`
		}, []string{"nvidia-container-toolkit", "nvidia-ctk runtime configure"}, false},
		{"memlock refused", func(f *fakeDaemon, _ *Driver) {
			f.startErr = "failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: error setting rlimits for ready process: error setting rlimit type 8: operation not permitted: unknown"
		}, []string{"error setting rlimit type 8", "memlock = unlimited is refused"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, c := newFakeDaemon(t, "1.41")
			f.addImage(testID, testRef)
			d := New(c)
			tt.prepare(f, d)
			_, err := d.StartContainer(context.Background(), testSpec(t))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if got := len(f.containers) > 0; got != tt.leftOver {
				t.Errorf("containers left: %d", len(f.containers))
			}
		})
	}
}

func TestFindByLaunchID(t *testing.T) {
	_, d := newTestDriver(t)
	ctx := context.Background()
	spec := testSpec(t)
	p, err := d.StartContainer(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	other := testSpec(t)
	other.LaunchID = "fedcba9876543210"
	if _, err := d.StartContainer(ctx, other); err != nil {
		t.Fatal(err)
	}
	cs, err := d.FindByLaunchID(ctx, spec.LaunchID)
	if err != nil || len(cs) != 1 || cs[0].ID != p.ID {
		t.Fatalf("FindByLaunchID = %v, %v", cs, err)
	}
	got := ProcessOf(cs[0], spec.LogPath)
	if got.ID != p.ID || got.PID != p.PID || got.StartTime != p.StartTime || !slices.Equal(got.Cmdline, p.Cmdline) {
		t.Errorf("ProcessOf = %+v, Start gave %+v", got, p)
	}
	if cs, _ := d.FindByLaunchID(ctx, "nothing"); len(cs) != 0 {
		t.Errorf("found %d containers for an unknown launch id", len(cs))
	}
}

func TestRunImage(t *testing.T) {
	f, d := newTestDriver(t)
	res, err := runWithOutput(t, f, d, []string{"vllm", "--version"}, "0.16.0\n", "a warning\n", 0)
	if err != nil || string(res.Stdout) != "0.16.0\n" || string(res.Stderr) != "a warning\n" || res.ExitCode != 0 {
		t.Fatalf("RunImage = %+v, %v", res, err)
	}
	body := f.bodies[len(f.bodies)-1]
	hc := body["HostConfig"].(map[string]any)
	if hc["NetworkMode"] != "none" || body["Labels"].(map[string]any)[LabelProbe] != "true" {
		t.Errorf("probe container: %v", body)
	}
	if len(f.containers) != 0 {
		t.Error("RunImage left its container")
	}
	res, err = runWithOutput(t, f, d, []string{"vllm", "serve", "--help=all"}, "", "error: unrecognized arguments: --help=all\n", 2)
	if err != nil || res.ExitCode != 2 || !bytes.Contains(res.Stderr, []byte("unrecognized")) {
		t.Errorf("failing run = %+v, %v", res, err)
	}
	if _, err := d.RunImage(context.Background(), "vllm/vllm-openai@sha256:3333333333333333333333333333333333333333333333333333333333333333", []string{"vllm"}, nil); err == nil {
		t.Error("RunImage of a missing image succeeded")
	}
}

// runWithOutput runs argv through RunImage with a fake container that
// writes stdout and stderr and exits with code when it starts.
func runWithOutput(t *testing.T, f *fakeDaemon, d *Driver, argv []string, stdout, stderr string, code int) (*RunResult, error) {
	t.Helper()
	f.mu.Lock()
	f.startHook = func(c *fakeContainer) {
		c.logs = append(c.logs, fakeLine{f.now(), Stdout, stdout}, fakeLine{f.now(), Stderr, stderr})
		c.c.State.ExitCode = code
	}
	f.mu.Unlock()
	return d.RunImage(context.Background(), testRef, argv, []string{"HF_HUB_OFFLINE=1"})
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSweepProbes: probe containers a killed roofline left are removed by
// a later probe once they are old, or at once when that roofline ran on
// this host and has exited; recent ones of a live run (another probe
// reading its output), or of another host sharing the daemon, are not.
func TestSweepProbes(t *testing.T) {
	f, d := newTestDriver(t)
	ctx := context.Background()
	host, _ := os.Hostname()
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	dead := exited.Process.Pid
	owner := ""
	mk := func(finished time.Time) string {
		labels := map[string]string{LabelProbe: "true"}
		if owner != "" {
			labels[LabelProbeOwner] = owner
		}
		id, err := d.C.ContainerCreate(ctx, "", &ContainerConfig{Image: testRef, Entrypoint: []string{"vllm"}, Labels: labels})
		if err != nil {
			t.Fatal(err)
		}
		f.mu.Lock()
		fc := f.containers[id]
		fc.c.State.Status, fc.c.State.FinishedAt = "exited", finished.Format(time.RFC3339Nano)
		f.mu.Unlock()
		return id
	}
	old := mk(time.Now().Add(-time.Hour))
	recent := mk(time.Now())
	owner = fmt.Sprintf("%s:%d", host, os.Getppid())
	live := mk(time.Now())
	owner = fmt.Sprintf("%s:%d", host, dead)
	killed := mk(time.Now())
	owner = fmt.Sprintf("other-%s:%d", host, dead)
	elsewhere := mk(time.Now())
	if _, err := runWithOutput(t, f, d, []string{"vllm", "--version"}, "0.16.0\n", "", 0); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id, what string
		kept     bool
	}{
		{old, "an hour-old probe container", false},
		{recent, "a probe container that just exited", true},
		{live, "a recent probe container of a live roofline", true},
		{killed, "a probe container of a roofline that exited", false},
		{elsewhere, "a recent probe container of another host's roofline", true},
	} {
		if _, ok := f.containers[c.id]; ok != c.kept {
			t.Errorf("%s: kept %v, want %v", c.what, ok, c.kept)
		}
	}
	var labelled string
	f.mu.Lock()
	f.startHook = func(c *fakeContainer) { labelled = c.c.Config.Labels[LabelProbeOwner] }
	f.mu.Unlock()
	if _, err := d.RunImage(ctx, testRef, []string{"vllm", "--version"}, nil); err != nil {
		t.Fatal(err)
	}
	if labelled != probeOwner() || !strings.HasSuffix(labelled, fmt.Sprintf(":%d", os.Getpid())) {
		t.Errorf("a probe's container is labelled %q, want %q", labelled, probeOwner())
	}
}

// TestConformance runs the driver suite on the fake daemon; real_test.go
// runs it on a real one. A container restarted by hand is not "stale" in
// the suite's sense: Read reports it (TestCheck), but its id is still the
// container roofline made, and Stop removes it.
func TestConformance(t *testing.T) {
	_, d := newTestDriver(t)
	dir := t.TempDir()
	drivertest.TestDriver(t, d, drivertest.Options{
		Spec: func(t *testing.T, name, launchID string) driver.LaunchSpec {
			return driver.LaunchSpec{Driver: state.DriverDocker, Name: name, Image: testRef, Argv: []string{"vllm", "serve", "/models/qwen3"},
				LogPath: filepath.Join(dir, name+".log"), LaunchID: launchID, Lineage: "lin-1", ConfigHash: "c0ffee"}
		},
		Stale: map[string]func(state.Instance) state.Instance{
			"another container": func(i state.Instance) state.Instance { i.ID = "feedfacefeedface"; return i },
		},
		Grace: time.Second,
	})
}
