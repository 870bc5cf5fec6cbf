package e2e

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/driver/docker"
	"github.com/roofline/roofline/internal/driver/docker/dockertest"
	"github.com/roofline/roofline/internal/state"
)

// The docker tests run the rehearsal engine images (.ci/docker-setup.sh)
// on a real Docker daemon: real containers, pinned by digest, behind
// roofline's proxy. Without a daemon they skip and say how to run them.

const dockerBase = `
roofline {
  inventory = "gpus.json"
}

engine "vllm_085" {
  kind    = "vllm"
  version = "0.8.5"
  image   = "@IMAGE_VLLM_0_8_5@"
  env     = { ROOFLINE_REHEARSAL_LOAD_TIME = "300ms", ROOFLINE_REHEARSAL_TTFT = "5ms", ROOFLINE_REHEARSAL_ITL = "2ms" }
}

engine "vllm_016" {
  kind    = "vllm"
  version = "0.16.0"
  image   = "@IMAGE_VLLM_0_16_0@"
  env     = { ROOFLINE_REHEARSAL_LOAD_TIME = "300ms", ROOFLINE_REHEARSAL_TTFT = "5ms", ROOFLINE_REHEARSAL_ITL = "2ms" }
}

model "qwen" {
  path        = "@MODELS@/qwen3-8b"
  served_name = "qwen3-8b"
}
`

const dockerServer = `
server "q" {
  engine                 = engine.ENGINE
  model                  = model.qwen
  gpus                   = [0]
  port                   = @PORT_Q@
  max_model_len          = 16384
  gpu_memory_utilization = 0.45
  tool_call_parser       = "hermes"
  gate {
    smoke_toolcall = true
  }
  lifecycle {
    create_before_destroy = CBD
  }
}
`

// dockerEnv is an env whose configuration names the rehearsal images. The
// containers of its state directory are listed through c; once the test
// and its destroy are over, none may be left.
type dockerEnv struct {
	*env
	c    *docker.Client
	imgs dockertest.Images
	cbd  bool // the server has create_before_destroy (and a proxy)
}

func newDockerEnv(t *testing.T, engineName string, cbd bool) *dockerEnv {
	c, imgs := dockertest.Require(t)
	de := &dockerEnv{c: c, imgs: imgs, cbd: cbd}
	// Registered before newEnv's cleanup, so it runs after its destroy.
	t.Cleanup(func() {
		// Probe containers of a roofline the test SIGKILLed mid-probe
		// (TestDockerKill9DuringApply): its pid is gone, so a sweep takes
		// them now rather than a later probe after a minute.
		docker.New(c).SweepProbes(context.Background())
		for _, ct := range de.containers(t) {
			t.Errorf("container %s (%s) is left after destroy", ct.ID[:12], ct.State)
			c.ContainerRemove(context.Background(), ct.ID)
		}
	})
	de.env = newEnv(t, de.config(engineName))
	return de
}

func (de *dockerEnv) config(engineName string) string {
	src := dockerBase + strings.NewReplacer("ENGINE", engineName, "CBD", strconv.FormatBool(de.cbd)).Replace(dockerServer)
	for k, v := range de.imgs {
		src = strings.ReplaceAll(src, "@IMAGE_"+k+"@", v)
	}
	return src
}

// containers are those labelled with this env's state directory.
func (de *dockerEnv) containers(t *testing.T) []docker.ContainerSummary {
	t.Helper()
	dir, _ := filepath.EvalSymlinks(de.dir)
	var out []docker.ContainerSummary
	for _, d := range slices.Compact([]string{de.dir, dir}) {
		list, err := de.c.ContainerList(context.Background(), docker.LabelStateDir+"="+filepath.Join(d, ".roofline"))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, list...)
	}
	return out
}

func (de *dockerEnv) state(t *testing.T) *state.File {
	t.Helper()
	st, err := state.Read(filepath.Join(de.dir, ".roofline", state.StateFileName))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// running returns the one running container of the env, failing when
// there is not exactly one.
func (de *dockerEnv) running(t *testing.T) *docker.Container {
	t.Helper()
	var ids []string
	for _, s := range de.containers(t) {
		if s.State == "running" {
			ids = append(ids, s.ID)
		}
	}
	if len(ids) != 1 {
		t.Fatalf("%d running containers, want 1: %v", len(ids), ids)
	}
	ct, err := de.c.ContainerInspect(context.Background(), ids[0])
	if err != nil {
		t.Fatal(err)
	}
	return ct
}

// TestDockerLifecycle: apply a server on an engine image pinned by digest,
// apply again (nothing changes), roll it to another engine image without a
// failed request, destroy (no container left).
func TestDockerLifecycle(t *testing.T) {
	de := newDockerEnv(t, "vllm_085", true)
	e := de.env
	e.mustRun(0, "validate")
	plan := e.mustRun(2, "plan", "-detailed-exitcode")
	if !strings.Contains(plan.stdout, "Plan: 1 to add, 0 to change, 0 to destroy.") {
		t.Fatalf("plan:\n%s", plan)
	}
	e.mustRun(0, "apply", "-auto-approve")
	first := de.running(t)
	st := de.state(t)
	s := st.Servers["q"]
	switch {
	case s.ID != first.ID || s.Driver != state.DriverDocker:
		t.Fatalf("state records %s (%s), the daemon runs %s", s.ID, s.Driver, first.ID)
	case first.Config.Image != de.imgs["VLLM_0_8_5"]:
		t.Errorf("container runs %s, want the pinned %s", first.Config.Image, de.imgs["VLLM_0_8_5"])
	case first.Config.Labels[docker.LabelConfigHash] != s.ConfigHash || first.Config.Labels[docker.LabelLineage] != st.Lineage ||
		first.Config.Labels[docker.LabelServer] != "server.q" || first.Config.Labels[docker.LabelLaunchID] != s.LaunchID:
		t.Errorf("labels %v do not tie the container to the state (config hash %s, lineage %s)", first.Config.Labels, s.ConfigHash, st.Lineage)
	}
	row := e.status()["q"]
	if !row.Running || row.Healthy == nil || !*row.Healthy {
		t.Fatalf("status: %+v", row)
	}
	url := fmt.Sprintf("http://127.0.0.1:%d", e.ports["@PORT_Q@"])
	if err := chat(url, `{"model": "qwen3-8b", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, "stream": true}`); err != nil {
		t.Fatal(err)
	}
	// The log comes from the daemon: the engine's start-up lines, and
	// status read its footprint from them.
	if r := e.mustRun(0, "logs", "q", "-n", "200"); !strings.Contains(r.stdout, "Maximum concurrency for 16,384 tokens per request") {
		t.Errorf("logs q lacks the engine's start-up lines:\n%s", r.stdout)
	}

	// A second apply changes nothing and starts nothing.
	e.mustRun(0, "plan", "-detailed-exitcode")
	if r := e.mustRun(0, "apply", "-auto-approve"); !strings.Contains(r.stdout, "No changes.") {
		t.Fatalf("second apply:\n%s", r)
	}
	if again := de.running(t); again.ID != first.ID {
		t.Fatalf("second apply replaced the container: %s -> %s", first.ID[:12], again.ID[:12])
	}

	// The engine image changes: create-before-destroy behind the proxy.
	c := startClient(t, url, "qwen3-8b", 4)
	time.Sleep(200 * time.Millisecond)
	e.write(de.config("vllm_016"))
	plan = e.mustRun(2, "plan", "-detailed-exitcode")
	if !strings.Contains(plan.stdout, "+/- server \"q\"") || !strings.Contains(plan.stdout, "engine changed") {
		t.Fatalf("plan should replace create-before-destroy:\n%s", plan)
	}
	e.mustRun(0, "apply", "-auto-approve")
	time.Sleep(200 * time.Millisecond)
	ok, failed := c.finish()
	if len(failed) > 0 || ok == 0 {
		t.Fatalf("%d requests ok, %d failed during the rollout: %v", ok, len(failed), failed[:min(5, len(failed))])
	}
	t.Logf("rollout 0.8.5 -> 0.16.0: %d requests through the proxy, none failed", ok)
	second := de.running(t)
	if second.ID == first.ID || second.Config.Image != de.imgs["VLLM_0_16_0"] {
		t.Fatalf("not rolled: %s (%s)", second.ID[:12], second.Config.Image)
	}
	if _, err := de.c.ContainerInspect(context.Background(), first.ID); !docker.IsNotFound(err) {
		t.Errorf("the old container is still there: %v", err)
	}
	if all := de.containers(t); len(all) != 1 {
		t.Errorf("%d containers after the rollout, want 1", len(all))
	}

	e.mustRun(0, "destroy", "-auto-approve")
	if left := de.containers(t); len(left) > 0 {
		t.Fatalf("destroy left %d containers", len(left))
	}
}

// TestDockerKilledContainer: a container killed behind roofline's back
// (docker kill) is drift, and apply starts a new one and removes the dead.
// (Without create_before_destroy: with a proxy in front, plan currently
// takes the port the proxy holds for a foreign one once the engine died.)
func TestDockerKilledContainer(t *testing.T) {
	de := newDockerEnv(t, "vllm_016", false)
	e := de.env
	e.mustRun(0, "apply", "-auto-approve")
	second := de.running(t)
	if err := de.c.ContainerKill(context.Background(), second.ID, "SIGKILL"); err != nil {
		t.Fatal(err)
	}
	plan := e.mustRun(2, "plan", "-detailed-exitcode")
	if !strings.Contains(plan.stdout, "Objects have changed outside of roofline") || !strings.Contains(plan.stdout, "exited with status 137") ||
		!strings.Contains(plan.stdout, "Plan: 1 to add, 0 to change, 0 to destroy.") {
		t.Fatalf("drift not shown:\n%s", plan)
	}
	e.mustRun(0, "apply", "-auto-approve")
	third := de.running(t)
	if third.ID == second.ID {
		t.Fatal("not restarted")
	}
	if _, err := de.c.ContainerInspect(context.Background(), second.ID); !docker.IsNotFound(err) {
		t.Errorf("the killed container was not removed: %v", err)
	}
	if row := e.status()["q"]; !row.Running || row.Healthy == nil || !*row.Healthy {
		t.Fatalf("status after restart: %+v", row)
	}

	e.mustRun(0, "destroy", "-auto-approve")
	if left := de.containers(t); len(left) > 0 {
		t.Fatalf("destroy left %d containers", len(left))
	}
}

// TestDockerImageErrors: an image by tag is a validate error; an image the
// host lacks is a plan error with the way to load it, and nothing is pulled.
func TestDockerImageErrors(t *testing.T) {
	de := newDockerEnv(t, "vllm_016", false)
	e := de.env
	tagged := strings.Replace(de.config("vllm_016"), de.imgs["VLLM_0_16_0"], "vllm/vllm-openai:v0.16.0", 1)
	e.write(tagged)
	r := e.mustRun(1, "validate")
	if !strings.Contains(r.stderr+r.stdout, "Image not pinned by digest") || !strings.Contains(r.stderr+r.stdout, `The tag "v0.16.0" can point at a different image tomorrow`) {
		t.Errorf("validate of a tagged image:\n%s", r)
	}
	e.mustRun(1, "plan")

	absent := strings.Replace(de.config("vllm_016"), de.imgs["VLLM_0_16_0"], de.imgs["ABSENT"], 1)
	e.write(absent)
	e.mustRun(0, "validate")
	r = e.mustRun(1, "plan")
	out := r.stdout + r.stderr
	for _, w := range []string{"Engine not usable", "is not on this host", "roofline never pulls", "docker load -i engine.tar"} {
		if !strings.Contains(out, w) {
			t.Errorf("plan of a missing image lacks %q:\n%s", w, out)
		}
	}
	if _, err := de.c.ImageInspect(context.Background(), de.imgs["ABSENT"]); !docker.IsNotFound(err) {
		t.Errorf("plan pulled the image: %v", err)
	}
	if left := de.containers(t); len(left) > 0 {
		t.Errorf("a failed plan left containers: %v", left)
	}
}

// TestDockerKill9DuringApply kills roofline with SIGKILL at random moments
// of applies that start and replace containers. After each, the next
// apply converges and every container of the state directory is one the
// state records: none is lost (adopted by its launch id label when its id
// never reached the state).
func TestDockerKill9DuringApply(t *testing.T) {
	rounds := 6
	if v, err := strconv.Atoi(os.Getenv("ROOFLINE_E2E_DOCKER_KILLS")); err == nil {
		rounds = v
	}
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	de := newDockerEnv(t, "vllm_085", false)
	e := de.env
	for i := 0; i < rounds; i++ {
		e.write(de.config([]string{"vllm_085", "vllm_016"}[i%2]))
		cmd := exec.Command(bin, "-no-color", "apply", "-auto-approve")
		cmd.Dir = e.dir
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		delay := time.Duration(rng.Intn(1500)) * time.Millisecond
		time.Sleep(delay)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()

		e.mustRun(0, "state", "list")
		r := e.run("apply", "-auto-approve", "-lock-timeout=30s")
		if r.code != 0 {
			t.Fatalf("round %d (killed after %s): apply did not converge:\n%s", i, delay, r)
		}
		if r := e.run("plan", "-detailed-exitcode"); r.code != 0 {
			t.Fatalf("round %d: plan after apply still has changes:\n%s", i, r)
		}
		tracked := map[string]bool{}
		for _, s := range de.state(t).Servers {
			tracked[s.ID] = true
			if s.Deposed != nil {
				tracked[s.Deposed.ID] = true
			}
		}
		for _, ct := range de.containers(t) {
			if !tracked[ct.ID] {
				t.Fatalf("round %d (killed after %s): container %s (%s) is not in the state", i, delay, ct.ID[:12], ct.State)
			}
		}
		t.Logf("round %d: killed after %s; %s", i, delay, strings.TrimSpace(r.stderr))
	}
}

// TestDockerAdoptsUnrecordedContainer: roofline killed between starting a
// container and writing its id leaves a state with the launch id only. The
// next plan finds the container by its launch id label and reports it
// (writing nothing); apply records it first, then replaces the ungated
// instance without leaking it.
func TestDockerAdoptsUnrecordedContainer(t *testing.T) {
	de := newDockerEnv(t, "vllm_016", false)
	e := de.env
	e.mustRun(0, "apply", "-auto-approve")
	ct := de.running(t)
	fs := state.NewFilesystem(filepath.Join(e.dir, ".roofline"))
	st := de.state(t)
	s := st.Servers["q"]
	s.ID, s.PID, s.StartTime, s.Cmdline, s.Status = "", 0, 0, nil, state.StatusStarting
	if err := fs.Write(st); err != nil {
		t.Fatal(err)
	}
	plan := e.mustRun(2, "plan", "-detailed-exitcode")
	if !strings.Contains(plan.stderr, "server.q: docker "+ct.ID[:12]+"; apply records them first") {
		t.Fatalf("plan did not find the container:\n%s", plan)
	}
	if got := de.state(t).Servers["q"].ID; got != "" {
		t.Fatalf("plan wrote the state (it records container %q); plan never writes", got)
	}
	applied := e.mustRun(0, "apply", "-auto-approve")
	if !strings.Contains(applied.stdout, "Recorded docker "+ct.ID[:12]) {
		t.Errorf("apply did not record the container first:\n%s", applied)
	}
	if now := de.running(t); now.ID == ct.ID {
		t.Error("the ungated instance was kept")
	}
	if _, err := de.c.ContainerInspect(context.Background(), ct.ID); !docker.IsNotFound(err) {
		t.Errorf("the adopted container was not removed: %v", err)
	}
}

// TestDockerFailedStartIsExplained: a container whose engine fails at
// start is classified from the log the daemon kept (mirrored before the
// container is removed), and nothing is left running.
func TestDockerFailedStartIsExplained(t *testing.T) {
	de := newDockerEnv(t, "vllm_016", false)
	e := de.env
	failing := strings.Replace(de.config("vllm_016"), `image   = "`+de.imgs["VLLM_0_16_0"]+`"
  env     = { `, `image   = "`+de.imgs["VLLM_0_16_0"]+`"
  env     = { ROOFLINE_REHEARSAL_FAIL = "oom_weights", `, 1)
	if failing == de.config("vllm_016") {
		t.Fatal("the failure was not injected into the configuration")
	}
	e.write(failing)
	r := e.mustRun(1, "apply", "-auto-approve")
	if out := r.stdout + r.stderr; !strings.Contains(out, "Cause (oom_weights)") || !strings.Contains(out, "torch.OutOfMemoryError") {
		t.Fatalf("apply does not explain the failed start:\n%s", r)
	}
	if r := e.mustRun(0, "diagnose", "q"); !strings.Contains(r.stdout, "Diagnosis: oom_weights") {
		t.Errorf("diagnose:\n%s", r)
	}
	for _, ct := range de.containers(t) {
		t.Errorf("container %s (%s) left after a failed start", ct.ID[:12], ct.State)
	}
}

// TestDockerAgentRestartsKilledContainer: roofline agent restarts a server
// whose container was killed, through the docker driver, as apply would.
func TestDockerAgentRestartsKilledContainer(t *testing.T) {
	de := newDockerEnv(t, "vllm_016", false)
	e := de.env
	e.mustRun(0, "apply", "-auto-approve")
	first := de.running(t)
	a := e.startAgent()
	if err := de.c.ContainerKill(context.Background(), first.ID, "SIGKILL"); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	a.waitFor(60*time.Second, "a new container serving", func() bool {
		st := de.state(t)
		s := st.Server("q")
		if s == nil || s.Status != state.StatusReady || s.ID == "" || s.ID == first.ID {
			return false
		}
		_, ok := e.serving("q", 0)
		return ok
	})
	t.Logf("container SIGKILLed → a new one healthy after %s", time.Since(killed).Round(time.Millisecond))
	if _, err := de.c.ContainerInspect(context.Background(), first.ID); !docker.IsNotFound(err) {
		t.Errorf("the killed container was not removed: %v", err)
	}
	a.stop()
	e.mustRun(0, "destroy", "-auto-approve")
}
