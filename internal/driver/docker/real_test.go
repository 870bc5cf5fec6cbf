package docker_test

import (
	"context"
	"fmt"
	"github.com/roofline/roofline/internal/testnet"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/driver/docker"
	"github.com/roofline/roofline/internal/driver/docker/dockertest"
	"github.com/roofline/roofline/internal/driver/drivertest"
	"github.com/roofline/roofline/internal/model/modeltest"
	"github.com/roofline/roofline/internal/state"
)

// These tests run the rehearsal engine images on a real Docker daemon
// (.ci/docker-setup.sh); without one they skip.

func freePort(t *testing.T) int { return testnet.FreePort(t) }

func TestRealLifecycle(t *testing.T) {
	c, imgs := dockertest.Require(t)
	d := docker.New(c)
	ctx := context.Background()
	model := filepath.Join(t.TempDir(), "qwen3-8b")
	if err := modeltest.Write(model, modeltest.Qwen3_8B); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	launch := fmt.Sprintf("real%012d", time.Now().UnixNano()%1e12)
	spec := docker.Spec{Name: "real", Image: imgs["VLLM_0_16_0"], LaunchID: launch,
		Argv: []string{"vllm", "serve", model, "--served-model-name", "m", "--port", fmt.Sprint(port), "--max-model-len", "4096"},
		Env:  map[string]string{"ROOFLINE_REHEARSAL_LOAD_TIME": "300ms", "ROOFLINE_LAUNCH_ID": launch, "HF_HUB_OFFLINE": "1"},
		GPUs: []int{0, 1}, ModelPath: model, LogPath: filepath.Join(t.TempDir(), "real.log"),
		Labels: map[string]string{docker.LabelLineage: "test-lineage"}}
	p, err := d.StartContainer(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.ContainerRemove(context.Background(), p.ID) })
	if p.PID <= 0 || p.StartTime == 0 {
		t.Errorf("Start = %+v", p)
	}

	// Host networking: the engine answers on the host's port; it read the
	// model through the read-only mount.
	// Seconds on a quiet machine; CI starts containers beside every other
	// package on two cores.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/health", port))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			st, _ := d.Check(ctx, p, "", "")
			t.Fatalf("no healthy engine after 2 minutes (%+v); log:\n%s", st, readLog(t, spec.LogPath))
		}
		time.Sleep(100 * time.Millisecond)
	}
	ct, err := c.ContainerInspect(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	hc := ct.HostConfig
	switch {
	case hc.NetworkMode != "host" || hc.IpcMode != "host" || hc.Init == nil || !*hc.Init || hc.RestartPolicy.Name != "no":
		t.Errorf("host config %+v", hc)
	case hc.LogConfig.Type != "json-file" || hc.LogConfig.Config["max-size"] != "50m":
		t.Errorf("log config %+v", hc.LogConfig)
	case len(hc.Mounts) != 1 || !hc.Mounts[0].ReadOnly || hc.Mounts[0].Target != model:
		t.Errorf("mounts %+v", hc.Mounts)
	case len(hc.DeviceRequests) != 1 || !slices.Equal(hc.DeviceRequests[0].DeviceIDs, []string{"0", "1"}) || hc.DeviceRequests[0].Driver != "nvidia":
		t.Errorf("device requests %+v", hc.DeviceRequests)
	case ct.Config.Labels[docker.LabelLaunchID] != launch || ct.Config.Labels[docker.LabelLineage] != "test-lineage" || ct.Name != "/"+docker.ContainerName("real", launch):
		t.Errorf("container %s labels %v", ct.Name, ct.Config.Labels)
	}

	st, err := d.Check(ctx, p, "real", launch)
	if err != nil || !st.Alive {
		t.Fatalf("Check = %+v, %v", st, err)
	}
	// docker-init, the API server and its EngineCore worker.
	if len(st.PIDs) < 3 || !slices.Contains(st.PIDs, p.PID) {
		t.Errorf("container pids %v (init %d)", st.PIDs, p.PID)
	}
	if log := readLog(t, spec.LogPath); !strings.Contains(log, "Starting vLLM API server") {
		t.Errorf("log mirror lacks the start-up lines:\n%s", log)
	}

	// SIGTERM reaches the engine through docker-init: it shuts down
	// cleanly, well before the grace period ends in SIGKILL.
	start := time.Now()
	if err := d.Stop(ctx, *p, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 15*time.Second {
		t.Errorf("stop took %s: the engine did not get SIGTERM", el)
	}
	if _, err := c.ContainerInspect(ctx, p.ID); !docker.IsNotFound(err) {
		t.Errorf("container still there after Stop: %v", err)
	}
	if log := readLog(t, spec.LogPath); !strings.Contains(log, "Application shutdown complete") {
		t.Errorf("log mirror lacks the shutdown lines:\n%s", log)
	}
}

func readLog(t *testing.T, path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// TestRealRunImage: probes run the image itself, with the entrypoint
// replaced, and see its exit status.
func TestRealRunImage(t *testing.T) {
	c, imgs := dockertest.Require(t)
	d := docker.New(c)
	ctx := context.Background()
	for _, tt := range []struct {
		img  string
		argv []string
		out  string
		exit int
	}{
		{imgs["VLLM_0_16_0"], []string{"vllm", "--version"}, "0.16.0\n", 0},
		{imgs["VLLM_0_8_5"], []string{"vllm", "--version"}, "0.8.5\n", 0},
		{imgs["SGLANG_0_5_6_POST2"], []string{"python3", "-c", "import sglang; print(sglang.__version__)"}, "0.5.6.post2\n", 0},
		{imgs["VLLM_0_8_5"], []string{"vllm", "serve", "--help=all"}, "", 2},
	} {
		res, err := d.RunImage(ctx, tt.img, tt.argv, []string{"NO_COLOR=1"})
		if err != nil {
			t.Fatalf("%v: %v", tt.argv, err)
		}
		if string(res.Stdout) != tt.out || res.ExitCode != tt.exit {
			t.Errorf("%v in %s = %q, exit %d; stderr %q", tt.argv, tt.img, res.Stdout, res.ExitCode, res.Stderr)
		}
	}
}

// TestRealResolveImage: a pin by image id (what docker load keeps) resolves
// on a real daemon; a pin the host lacks is refused without a pull.
func TestRealResolveImage(t *testing.T) {
	c, imgs := dockertest.Require(t)
	d := docker.New(c)
	ctx := context.Background()
	_, img, err := d.ResolveImage(ctx, imgs["VLLM_0_16_0"])
	if err != nil {
		t.Fatal(err)
	}
	repo, _, _ := strings.Cut(imgs["VLLM_0_16_0"], "@")
	ref, byID, err := d.ResolveImage(ctx, repo+"@"+img.ID)
	if err != nil || ref != img.ID || byID.ID != img.ID {
		t.Errorf("by image id: %q %v", ref, err)
	}
	if _, _, err := d.ResolveImage(ctx, imgs["ABSENT"]); err == nil || !strings.Contains(err.Error(), "docker load") {
		t.Errorf("absent image: %v", err)
	} else if _, err := c.ImageInspect(ctx, imgs["ABSENT"]); !docker.IsNotFound(err) {
		t.Errorf("the absent image is on the host now (pulled?): %v", err)
	}
}

// TestRealMemlock: where the kernel refuses memlock=unlimited (unprivileged
// sandboxes), the error says so.
func TestRealMemlock(t *testing.T) {
	c, imgs := dockertest.Require(t)
	d := docker.New(c)
	d.Ulimits = []docker.Ulimit{{Name: "memlock", Soft: -1, Hard: -1}}
	p, err := d.StartContainer(context.Background(), docker.Spec{Name: "memlock", Image: imgs["VLLM_0_16_0"], LaunchID: "memlock",
		Argv: []string{"vllm", "--version"}})
	if err == nil {
		d.Stop(context.Background(), *p, time.Second)
		t.Skip("this kernel allows memlock=unlimited")
	}
	if !strings.Contains(err.Error(), "memlock = unlimited is refused") {
		t.Errorf("error %v", err)
	}
	if _, err := c.ContainerInspect(context.Background(), docker.ContainerName("memlock", "memlock")); !docker.IsNotFound(err) {
		t.Errorf("the failed container was left: %v", err)
	}
}

// TestRealConformance runs the driver suite on a real daemon: the rehearsal
// engine image in containers, as apply runs them.
func TestRealConformance(t *testing.T) {
	c, imgs := dockertest.Require(t)
	model := filepath.Join(t.TempDir(), "qwen3-8b")
	if err := modeltest.Write(model, modeltest.Qwen3_8B); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	suffix := fmt.Sprintf("%d", time.Now().UnixNano()%1e9)
	drivertest.TestDriver(t, docker.New(c), drivertest.Options{
		Spec: func(t *testing.T, name, launchID string) driver.LaunchSpec {
			return driver.LaunchSpec{Driver: state.DriverDocker, Name: name, Image: imgs["VLLM_0_16_0"], LaunchID: launchID + "-" + suffix,
				Argv: []string{"vllm", "serve", model, "--served-model-name", "m", "--port", fmt.Sprint(freePort(t)), "--max-model-len", "4096"},
				Env:  map[string]string{"ROOFLINE_REHEARSAL_LOAD_TIME": "100ms", "HF_HUB_OFFLINE": "1"},
				GPUs: []int{0}, ModelPath: model, LogPath: filepath.Join(dir, name+".log"), Dir: dir, Lineage: "conformance"}
		},
		Stale: map[string]func(state.Instance) state.Instance{
			"another container": func(i state.Instance) state.Instance { i.ID = strings.Repeat("0", 64); return i },
		},
		Grace: 20 * time.Second,
	})
}
