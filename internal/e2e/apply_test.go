package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// base declares the rehearsal engines and a Qwen3-8B folder. Engines load
// in 300 ms so the suite stays quick.
const base = `
roofline {
  inventory = "gpus.json"
}

engine "vllm" {
  kind      = "vllm"
  version   = "0.16.0"
  rehearsal = true
  env       = { ROOFLINE_REHEARSAL_LOAD_TIME = "300ms", ROOFLINE_REHEARSAL_TTFT = "5ms", ROOFLINE_REHEARSAL_ITL = "2ms" }
}

engine "sglang" {
  kind      = "sglang"
  version   = "0.5.6.post2"
  rehearsal = true
  env       = { ROOFLINE_REHEARSAL_LOAD_TIME = "300ms", ROOFLINE_REHEARSAL_TTFT = "5ms", ROOFLINE_REHEARSAL_ITL = "2ms" }
}

model "qwen" {
  path        = "@MODELS@/qwen3-8b"
  served_name = "qwen3-8b"
}
`

const twoServers = base + `
server "a" {
  engine           = engine.vllm
  model            = model.qwen
  gpus             = [0]
  port             = @PORT_A@
  max_model_len    = 32768
  tool_call_parser = "hermes"
  gate {
    smoke_toolcall = true
  }
}

server "b" {
  engine           = engine.sglang
  model            = model.qwen
  gpus             = [1]
  port             = @PORT_B@
  max_model_len    = 16384
  tool_call_parser = "qwen25"
  gate {
    smoke_toolcall = true
  }
}
`

func chat(url, body string) error {
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("reading the stream: %w", err)
	}
	if resp.StatusCode != 200 {
		return fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	if !strings.Contains(string(b), "data: [DONE]") {
		return fmt.Errorf("stream ended without [DONE]: %q", b)
	}
	return nil
}

func TestApplyFromEmptyThenNothing(t *testing.T) {
	e := newEnv(t, twoServers)
	e.mustRun(0, "validate")
	plan := e.mustRun(2, "plan", "-detailed-exitcode")
	if !strings.Contains(plan.stdout, "Plan: 2 to add, 0 to change, 0 to destroy.") {
		t.Fatalf("plan:\n%s", plan)
	}
	r := e.mustRun(0, "apply", "-auto-approve")
	if !strings.Contains(r.stdout, "Apply complete! Resources: 2 added, 0 changed, 0 destroyed.") {
		t.Fatalf("apply:\n%s", r)
	}
	st := e.status()
	for _, n := range []string{"a", "b"} {
		s := st[n]
		if !s.Running || s.Healthy == nil || !*s.Healthy || s.PID == 0 {
			t.Fatalf("server %s: %+v", n, s)
		}
	}
	// Both answer on their ports.
	for _, p := range []string{"@PORT_A@", "@PORT_B@"} {
		body := `{"model": "qwen3-8b", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, "stream": true}`
		if err := chat(fmt.Sprintf("http://127.0.0.1:%d", e.ports[p]), body); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	// A second apply changes nothing and starts nothing.
	e.mustRun(0, "plan", "-detailed-exitcode")
	r = e.mustRun(0, "apply", "-auto-approve")
	if !strings.Contains(r.stdout, "No changes.") {
		t.Fatalf("second apply:\n%s", r)
	}
	st2 := e.status()
	for _, n := range []string{"a", "b"} {
		if st2[n].PID != st[n].PID {
			t.Errorf("server %s restarted: pid %d -> %d", n, st[n].PID, st2[n].PID)
		}
	}
	// The log is there and diagnose reads it.
	if r := e.mustRun(0, "logs", "a", "-n", "5"); r.stdout == "" {
		t.Error("logs a printed nothing")
	}
	e.mustRun(0, "destroy", "-auto-approve")
	if pids := launchedPids(e.dir); len(pids) > 0 {
		t.Fatalf("destroy left processes: %v", pids)
	}
}

const rollout = base + `
server "q" {
  engine           = engine.vllm
  model            = model.qwen
  gpus             = [0]
  port             = @PORT_Q@
  max_model_len    = MAXLEN
  gpu_memory_utilization = 0.45
  tool_call_parser = "hermes"
  env              = { EXTRA }
  gate {
    smoke_toolcall = true
  }
  lifecycle {
    create_before_destroy = true
  }
}
`

func rolloutConfig(maxLen, extra string) string {
	return strings.NewReplacer("MAXLEN", maxLen, "EXTRA", extra).Replace(rollout)
}

// TestRolloutWithoutFailedRequests: a changed max_model_len on a
// create_before_destroy server; a client sends requests throughout.
func TestRolloutWithoutFailedRequests(t *testing.T) {
	e := newEnv(t, rolloutConfig("32768", ""))
	e.mustRun(0, "apply", "-auto-approve")
	before := e.status()["q"]
	url := fmt.Sprintf("http://127.0.0.1:%d", e.ports["@PORT_Q@"])
	c := startClient(t, url, "qwen3-8b", 4)
	time.Sleep(200 * time.Millisecond)

	e.write(rolloutConfig("16384", ""))
	plan := e.mustRun(2, "plan", "-detailed-exitcode")
	if !strings.Contains(plan.stdout, "+/- server \"q\"") || !strings.Contains(plan.stdout, "max_model_len changed") {
		t.Fatalf("plan should replace create-before-destroy:\n%s", plan)
	}
	e.mustRun(0, "apply", "-auto-approve")
	time.Sleep(200 * time.Millisecond)
	ok, failed := c.finish()
	after := e.status()["q"]
	if after.PID == before.PID || !after.Running {
		t.Fatalf("not replaced: before %+v after %+v", before, after)
	}
	if len(failed) > 0 || ok == 0 {
		for _, l := range logLines(e, "q") {
			if strings.Contains(l, "ERROR") || strings.Contains(l, "rror") || strings.Contains(l, "Shutting") || strings.Contains(l, "SIG") {
				t.Log(l)
			}
		}
		b, _ := os.ReadFile(filepath.Join(e.dir, ".roofline", "proxy", "q.log"))
		t.Logf("proxy log: %s", b)
		t.Fatalf("%d requests ok, %d failed during the rollout: %v", ok, len(failed), failed[:min(5, len(failed))])
	}
	t.Logf("rollout: %d requests, none failed", ok)
}

// TestFailingNewServerKeepsOld injects each failure class into the new
// server of a rollout: apply fails naming the class, the old one serves on.
func TestFailingNewServerKeepsOld(t *testing.T) {
	classes := []string{"oom_weights", "kv_too_small", "no_kv_memory", "free_mem_below_util", "missing_files",
		"unsupported_arch", "driver_mismatch", "nccl_error", "oom_cudagraph", "port_in_use"}
	if testing.Short() {
		classes = classes[:2]
	}
	e := newEnv(t, rolloutConfig("32768", ""))
	e.mustRun(0, "apply", "-auto-approve")
	old := e.status()["q"]
	url := fmt.Sprintf("http://127.0.0.1:%d", e.ports["@PORT_Q@"])
	for _, class := range classes {
		t.Run(class, func(t *testing.T) {
			e.write(rolloutConfig("16384", fmt.Sprintf("ROOFLINE_REHEARSAL_FAIL = %q", class)))
			r := e.run("apply", "-auto-approve")
			if r.code != 1 {
				t.Fatalf("want exit 1:\n%s", r)
			}
			if !strings.Contains(r.stderr, "Cause ("+class+")") {
				t.Fatalf("the output should name %s:\n%s", class, r.stderr)
			}
			if !strings.Contains(r.stderr, "keeps serving") {
				t.Errorf("the output should say the old server keeps serving:\n%s", r.stderr)
			}
			now := e.status()["q"]
			if now.PID != old.PID || !now.Running {
				t.Fatalf("the old server must be untouched: %+v, was %+v", now, old)
			}
			body := `{"model": "qwen3-8b", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, "stream": true}`
			if err := chat(url, body); err != nil {
				t.Fatalf("the old server stopped serving: %v", err)
			}
			// The log the state names is the one the serving engine
			// writes, and it was never deleted under it.
			writes, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/1", old.PID))
			if err != nil {
				t.Fatal(err)
			}
			named, _ := filepath.EvalSymlinks(now.LogPath)
			if writes != named {
				t.Errorf("the serving engine writes %s; the state names %s", writes, now.LogPath)
			}
		})
	}
}

// TestCrashShowsAsDriftAndIsRestarted kills the engine behind roofline's back.
func TestCrashShowsAsDriftAndIsRestarted(t *testing.T) {
	e := newEnv(t, twoServers)
	e.mustRun(0, "apply", "-auto-approve")
	a := e.status()["a"]
	if err := syscall.Kill(-a.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, a.PID)
	// A scheduled drift check reads the exit code: 2 on drift (status
	// checks its own code against the rows, see env.status).
	if st := e.status(); st["a"].Running {
		t.Fatalf("status: a still running: %+v", st["a"])
	}
	ro := e.mustRun(2, "plan", "-refresh-only", "-detailed-exitcode")
	if !strings.Contains(ro.stdout, "server.a: the process is gone") {
		t.Fatalf("refresh-only:\n%s", ro)
	}
	plan := e.mustRun(2, "plan", "-detailed-exitcode")
	if !strings.Contains(plan.stdout, "Objects have changed outside of roofline") || !strings.Contains(plan.stdout, "server.a: the process is gone") {
		t.Fatalf("drift not shown:\n%s", plan)
	}
	if !strings.Contains(plan.stdout, "Plan: 1 to add, 0 to change, 0 to destroy.") {
		t.Fatalf("plan:\n%s", plan)
	}
	e.mustRun(0, "apply", "-auto-approve")
	if s := e.status()["a"]; !s.Running || s.PID == a.PID {
		t.Fatalf("not restarted: %+v", s)
	}
}

// TestHungServerIsDriftNotNoChanges stops (SIGSTOP) a running engine: its
// health check times out, which plan reports as drift with exit 2 under
// -detailed-exitcode, never "No changes", and status exits 2.
func TestHungServerIsDriftNotNoChanges(t *testing.T) {
	e := newEnv(t, twoServers)
	e.mustRun(0, "apply", "-auto-approve")
	e.mustRun(0, "plan", "-refresh-only", "-detailed-exitcode")
	a := e.status()["a"]
	if err := syscall.Kill(-a.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(-a.PID, syscall.SIGCONT)
	if h := e.status()["a"].Healthy; h == nil || *h {
		t.Fatalf("a stopped but not reported unhealthy")
	}
	p := e.mustRun(2, "plan", "-detailed-exitcode")
	if strings.Contains(p.stdout, "No changes.") || !strings.Contains(p.stdout, "server.a: running but not healthy") ||
		!strings.Contains(p.stdout, "No changes to apply, but the servers drifted.") {
		t.Fatalf("plan:\n%s", p)
	}
	e.mustRun(0, "plan") // without -detailed-exitcode, drift is not an error
	e.mustRun(2, "plan", "-refresh-only", "-detailed-exitcode")
	syscall.Kill(-a.PID, syscall.SIGCONT)
}

// waitGone waits for pid to exit (a zombie counts): a SIGKILLed process is
// gone in milliseconds, or seconds on a loaded machine.
func waitGone(t *testing.T, pid int) {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		if err := syscall.Kill(pid, 0); err != nil {
			return
		}
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && i+2 < len(b) && b[i+2] == 'Z' {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("pid %d did not exit", pid)
}

// TestConcurrentApplies: the second apply waits for the lock; nothing is
// started twice.
func TestConcurrentApplies(t *testing.T) {
	e := newEnv(t, twoServers)
	done := make(chan result, 2)
	for i := 0; i < 2; i++ {
		go func() { done <- e.run("apply", "-auto-approve", "-lock-timeout=2m") }()
	}
	r1, r2 := <-done, <-done
	if r1.code != 0 || r2.code != 0 {
		t.Fatalf("both applies must succeed:\n%s\n%s", r1, r2)
	}
	// One of them created both servers; the other found nothing to do.
	created := strings.Count(r1.stdout+r2.stdout, "Creation complete")
	if created != 2 {
		t.Fatalf("want 2 creations in total, got %d:\n%s\n%s", created, r1, r2)
	}
	if pids := launchedPids(e.dir); len(pids) != 4 { // two engines, each with its worker
		t.Logf("live processes: %v", pids)
	}
	st := e.status()
	if len(st) != 2 {
		t.Fatalf("status: %v", st)
	}
}

// TestFailedStartIsExplained: a start that fails is classified, stopped and
// recorded as failed; diagnose names it again later.
func TestFailedStartIsExplained(t *testing.T) {
	cfg := strings.Replace(twoServers, `tool_call_parser = "hermes"`, "tool_call_parser = \"hermes\"\n  env = { ROOFLINE_REHEARSAL_FAIL = \"oom_weights\" }", 1)
	e := newEnv(t, cfg)
	r := e.run("apply", "-auto-approve")
	if r.code != 1 || !strings.Contains(r.stderr, "Cause (oom_weights)") || !strings.Contains(r.stderr, "Action:") {
		t.Fatalf("apply:\n%s", r)
	}
	st := e.status()
	if st["a"].Status != "failed" || st["a"].PID != 0 || !st["b"].Running {
		t.Fatalf("status: %+v", st)
	}
	d := e.mustRun(0, "diagnose", "a", "-json")
	if !strings.Contains(d.stdout, `"class": "oom_weights"`) {
		t.Fatalf("diagnose:\n%s", d)
	}
}

// logLines returns the lines of the server's log, for debugging failures.
func logLines(e *env, name string) []string {
	f, err := os.Open(filepath.Join(e.dir, ".roofline", "logs", name+".log"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// TestBenchGateRollsBack: thresholds that cannot be met keep the old server.
func TestBenchGateRollsBack(t *testing.T) {
	e := newEnv(t, rolloutConfig("32768", ""))
	e.mustRun(0, "apply", "-auto-approve")
	old := e.status()["q"]
	strict := strings.Replace(rolloutConfig("16384", ""), "smoke_toolcall = true", `smoke_toolcall = true
    bench {
      concurrency                  = 4
      requests                     = 8
      input_tokens                 = 64
      output_tokens                = 16
      min_output_tokens_per_second = 1000000
    }`, 1)
	e.write(strict)
	r := e.run("apply", "-auto-approve")
	if r.code != 1 || !strings.Contains(r.stderr, "bench:") || !strings.Contains(r.stderr, "min_output_tokens_per_second") {
		t.Fatalf("apply should fail the bench gate:\n%s", r)
	}
	if now := e.status()["q"]; now.PID != old.PID || !now.Running {
		t.Fatalf("the old server must keep serving: %+v", now)
	}
	// apply showed each gate, the bench figures against the threshold, and
	// the engine's lines rather than its access log.
	for _, want := range []string{"Gate health: passed", "Gate smoke: passed", "Gate bench: FAILED", "(min 1000000.0 tok/s)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("apply's output should show %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stderr, `HTTP/1.1" 200`) {
		t.Errorf("the log tail shows access-log lines:\n%s", r.stderr)
	}
	// The failed rollout is in the journal with its cause.
	if j := e.mustRun(0, "journal", "q"); !strings.Contains(j.stdout, "FAILED in gates") || !strings.Contains(j.stdout, "min_output_tokens_per_second") {
		t.Errorf("the journal should record the failed rollout and its cause:\n%s", j.stdout)
	}
	// A reachable threshold passes and the journal records the bench.
	e.write(strings.Replace(strict, "1000000", "10", 1))
	ok := e.mustRun(0, "apply", "-auto-approve")
	if !strings.Contains(ok.stdout, "Gate bench: passed") || !strings.Contains(ok.stdout, "drained and stopped") {
		t.Errorf("apply's output should show the passed bench and the drain:\n%s", ok.stdout)
	}
	j := e.mustRun(0, "journal", "q", "-json")
	if !strings.Contains(j.stdout, `"output_throughput"`) {
		t.Fatalf("journal:\n%s", j)
	}
	// The next rollout's plan shows that bench beside the new gate.
	e.write(strings.Replace(strings.Replace(strict, "1000000", "10", 1), "16384", "8192", 1))
	p := e.mustRun(2, "plan", "-detailed-exitcode")
	if !strings.Contains(p.stdout, "last bench of the running server") || !strings.Contains(p.stdout, "must pass its bench gate") {
		t.Fatalf("plan should show the last bench beside the gate:\n%s", p)
	}
}

// TestStalePlanFileIsRefused: a saved plan applies exactly once; after the
// state changed it is refused.
func TestStalePlanFileIsRefused(t *testing.T) {
	e := newEnv(t, twoServers)
	e.mustRun(0, "plan", "-out=first.plan")
	e.mustRun(0, "plan", "-out=second.plan")
	r := e.mustRun(0, "apply", "first.plan")
	if !strings.Contains(r.stdout, "Apply complete! Resources: 2 added") {
		t.Fatalf("apply of a saved plan:\n%s", r)
	}
	r = e.mustRun(1, "apply", "second.plan")
	if !strings.Contains(r.stderr, "Saved plan is stale") {
		t.Fatalf("a stale plan must be refused:\n%s", r)
	}
	e.mustRun(0, "show", "first.plan")
}

// TestEngineBehindProxyDies: the engine of a create-before-destroy server
// dies; its proxy keeps the port. The next apply starts a new engine behind
// the same proxy.
func TestEngineBehindProxyDies(t *testing.T) {
	e := newEnv(t, rolloutConfig("32768", ""))
	e.mustRun(0, "apply", "-auto-approve")
	q := e.status()["q"]
	if err := syscall.Kill(-q.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, q.PID)
	p := e.mustRun(2, "plan", "-detailed-exitcode")
	if !strings.Contains(p.stdout, "server.q: the process is gone") {
		t.Fatalf("plan:\n%s", p)
	}
	e.mustRun(0, "apply", "-auto-approve")
	body := `{"model": "qwen3-8b", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, "stream": true}`
	if err := chat(fmt.Sprintf("http://127.0.0.1:%d", e.ports["@PORT_Q@"]), body); err != nil {
		t.Fatalf("the public port does not serve after the restart: %v", err)
	}
}
