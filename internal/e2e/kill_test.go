package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKill9DuringApply kills roofline with SIGKILL at random moments of an
// apply, again and again. Each time the state must parse, the next plan must
// describe reality, the next apply must converge, and no engine process may
// be left that the state does not track.
func TestKill9DuringApply(t *testing.T) {
	rounds := 20
	if v, err := strconv.Atoi(os.Getenv("ROOFLINE_E2E_KILLS")); err == nil {
		rounds = v
	}
	if testing.Short() {
		rounds = 3
	}
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	e := newEnv(t, killConfig(0))
	for i := 0; i < rounds; i++ {
		e.write(killConfig(i))
		cmd := exec.Command(bin, "-no-color", "apply", "-auto-approve")
		cmd.Dir = e.dir
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		delay := time.Duration(rng.Intn(1500)) * time.Millisecond
		time.Sleep(delay)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()

		// The state parses and plan works on what is there. A child that
		// apply was forking when it was killed holds a copy of the lock's
		// descriptor until it execs (close-on-exec), a few milliseconds on
		// a loaded machine: plan waits for the lock as a script would.
		e.mustRun(0, "state", "list")
		if r := e.run("plan", "-lock-timeout=10s"); r.code != 0 {
			t.Fatalf("round %d (killed after %s): plan failed:\n%s", i, delay, r)
		}
		// The next apply converges, and then nothing is left to do.
		r := e.run("apply", "-auto-approve", "-lock-timeout=30s")
		if r.code != 0 {
			t.Fatalf("round %d (killed after %s): apply did not converge:\n%s", i, delay, r)
		}
		summary := "nothing left to do"
		if i := strings.Index(r.stdout, "Apply complete!"); i >= 0 {
			summary = strings.TrimSpace(r.stdout[i:])
		}
		t.Logf("round %d: killed after %s; the next apply: %s %s", i, delay, summary, strings.TrimSpace(r.stderr))
		if r := e.run("plan", "-detailed-exitcode"); r.code != 0 {
			t.Fatalf("round %d: plan after apply still has changes:\n%s", i, r)
		}
		checkTracked(t, e, i)
	}
}

// killConfig alternates between two context lengths so that every round
// replaces the server (create before destroy for s1, destroy first for s2).
func killConfig(round int) string {
	l := []string{"32768", "16384"}[round%2]
	// Engines load for 1 s so that most kills land inside the apply.
	return strings.ReplaceAll(base, `"300ms"`, `"1s"`) + fmt.Sprintf(`
server "s1" {
  engine                 = engine.vllm
  model                  = model.qwen
  gpus                   = [0]
  port                   = @PORT_1@
  max_model_len          = %s
  gpu_memory_utilization = 0.45
  lifecycle {
    create_before_destroy = true
  }
}

server "s2" {
  engine        = engine.sglang
  model         = model.qwen
  gpus          = [1]
  port          = @PORT_2@
  max_model_len = %s
}
`, l, l)
}

// checkTracked: every live process started for this env belongs to the
// session of a process the state records (engine or proxy), or carries the
// launch id of an intent the state records without a pid yet: written
// before a start, it is what the next plan finds the process by when
// roofline was killed between the start and the write of the pid
// (docs/apply.md).
func checkTracked(t *testing.T, e *env, round int) {
	t.Helper()
	r := e.mustRun(0, "show", "-json")
	tracked := map[int]bool{}
	for _, field := range []string{`"pid": `} {
		for _, part := range strings.Split(r.stdout, field)[1:] {
			n, _ := strconv.Atoi(strings.TrimFunc(strings.SplitN(part, ",", 2)[0], func(r rune) bool { return r < '0' || r > '9' }))
			if n > 0 {
				tracked[n] = true
			}
		}
	}
	// Launch ids of intents: instances recorded without a pid yet.
	type inst struct {
		PID      int    `json:"pid"`
		LaunchID string `json:"launch_id"`
	}
	type server struct {
		Instance inst    `json:"instance"`
		Proxy    *inst   `json:"proxy"`
		Deposed  *server `json:"deposed"`
	}
	var doc struct {
		Servers map[string]*server `json:"servers"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("round %d: show -json: %v", round, err)
	}
	launches := map[string]bool{}
	for _, s := range doc.Servers {
		for ; s != nil; s = s.Deposed {
			for _, i := range []*inst{&s.Instance, s.Proxy} {
				if i != nil && i.PID == 0 && i.LaunchID != "" {
					launches[i.LaunchID] = true
				}
			}
		}
	}
	for _, pid := range launchedPids(e.dir) {
		sid := sessionOf(pid)
		if sid == 0 {
			continue // exited meanwhile
		}
		if !tracked[sid] && !launches[launchIDOf(pid)] {
			t.Fatalf("round %d: process %d (session %d) runs but the state does not track it:\n%s", round, pid, sid, r.stdout)
		}
	}
}

// launchIDOf is the ROOFLINE_LAUNCH_ID in pid's environment ("" if none).
func launchIDOf(pid int) string {
	env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	for _, kv := range strings.Split(string(env), "\x00") {
		if v, ok := strings.CutPrefix(kv, "ROOFLINE_LAUNCH_ID="); ok {
			return v
		}
	}
	return ""
}

func sessionOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+1:])
	if len(f) < 4 || f[0] == "Z" {
		return 0
	}
	sid, _ := strconv.Atoi(f[3])
	return sid
}
