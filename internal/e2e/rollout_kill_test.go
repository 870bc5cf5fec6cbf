package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/testload"
)

// rolloutStep is a moment of a create-before-destroy rollout where apply
// is interrupted: the line of apply's output that announces it, and the
// signal sent when it appears.
type rolloutStep struct {
	name string
	line string // substring of apply's stdout that marks the step
	sig  syscall.Signal
	// wait, after the line, before the signal: lands the kill inside the
	// step (the gates take a few hundred ms).
	wait time.Duration
	// until, when set, is polled (every ms, up to 2 s) after the line and
	// before the signal: the kill waits for the state to show the step.
	until func(state string) bool
}

var rolloutSteps = []rolloutStep{
	// "Replacing..." comes right before the intent is written; the kill
	// waits for the state to show it (it may land on the start that
	// follows: a process start takes about as long as one poll).
	{name: "intent written", line: "Replacing...", sig: syscall.SIGKILL, until: func(st string) bool { return strings.Contains(st, "status starting") }},
	{name: "new pid recorded", line: "Started pid", sig: syscall.SIGKILL},
	{name: "gates running", line: "running the gates", sig: syscall.SIGKILL, wait: 100 * time.Millisecond},
	{name: "switch", line: "switched to the new instance", sig: syscall.SIGKILL},
	{name: "drain", line: "Draining", sig: syscall.SIGKILL},
	{name: "old stopped", line: "drained and stopped", sig: syscall.SIGKILL},
	{name: "SIGINT during the drain", line: "Draining", sig: syscall.SIGINT},
}

func killRolloutConfig(round int, drain string) string {
	l := []string{"32768", "16384"}[round%2]
	return strings.ReplaceAll(base, `"300ms"`, `"1s"`) + fmt.Sprintf(`
server "q" {
  engine                 = engine.vllm
  model                  = model.qwen
  gpus                   = [0]
  port                   = @PORT_Q@
  max_model_len          = %s
  gpu_memory_utilization = 0.45
  lifecycle {
    create_before_destroy = true
    drain_timeout         = %q
  }
}
`, l, drain)
}

// stateView is the part of the state file the test reads.
type stateView struct {
	Servers map[string]struct {
		Instance instanceView `json:"instance"`
		Status   string       `json:"status"`
		Deposed  *struct {
			Instance instanceView `json:"instance"`
		} `json:"deposed"`
	} `json:"servers"`
}

type instanceView struct {
	PID int `json:"pid"`
}

func (e *env) stateOf(name string) string {
	b, err := os.ReadFile(filepath.Join(e.dir, ".roofline", "state.json"))
	if err != nil {
		return "no state"
	}
	var st stateView
	if err := json.Unmarshal(b, &st); err != nil {
		return "unreadable state: " + err.Error()
	}
	s, ok := st.Servers[name]
	if !ok {
		return "no server"
	}
	dep := "none"
	if s.Deposed != nil {
		dep = fmt.Sprintf("pid %d", s.Deposed.Instance.PID)
	}
	return fmt.Sprintf("status %s, pid %d, deposed %s", s.Status, s.Instance.PID, dep)
}

// interruptAt runs apply and sends step.sig when its output reaches the
// step. It returns apply's output and whether the step was reached.
func (e *env) interruptAt(step rolloutStep) (string, bool) {
	e.t.Helper()
	cmd := exec.Command(bin, "-no-color", "apply", "-auto-approve", "-lock-timeout=30s")
	cmd.Dir = e.dir
	out, err := cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	var text strings.Builder
	reached := false
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		text.WriteString(sc.Text() + "\n")
		if !reached && strings.Contains(sc.Text(), step.line) {
			reached = true
			time.Sleep(step.wait)
			for deadline := time.Now().Add(2 * time.Second); step.until != nil && !step.until(e.stateOf("q")) && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			_ = cmd.Process.Signal(step.sig)
			if step.sig == syscall.SIGKILL {
				break
			}
		}
	}
	_, _ = io.Copy(&text, out)
	_ = cmd.Wait()
	return text.String(), reached
}

// streamClient streams completions of n tokens through url until stopped;
// a request that fails or whose stream ends without [DONE] is counted.
func streamClient(t *testing.T, url string, workers, tokens int) *client {
	c := &client{stop: make(chan struct{})}
	body := fmt.Sprintf(`{"model": "qwen3-8b", "messages": [{"role": "user", "content": "tell me a story"}], "max_tokens": %d, "stream": true, "ignore_eos": true}`, tokens)
	for i := 0; i < workers; i++ {
		c.done.Add(1)
		go func() {
			defer c.done.Done()
			for {
				select {
				case <-c.stop:
					return
				default:
				}
				err := chat(url, body)
				c.mu.Lock()
				if err != nil {
					c.failed = append(c.failed, time.Now().Format("15:04:05.000")+" "+err.Error())
				} else {
					c.ok++
				}
				c.mu.Unlock()
			}
		}()
	}
	return c
}

// TestInterruptedRolloutsNeverDropTraffic interrupts apply at every step of
// a create-before-destroy rollout (SIGKILL at each, SIGINT during the
// drain) while a streaming client goes through the public port, then
// applies again. Across all trials no request fails or is cut, every apply
// after an interruption converges, and the plan after it is empty.
func TestInterruptedRolloutsNeverDropTraffic(t *testing.T) {
	rounds := 3
	if v, err := strconv.Atoi(os.Getenv("ROOFLINE_E2E_ROLLOUT_ROUNDS")); err == nil {
		rounds = v
	}
	e := newEnv(t, killRolloutConfig(0, "30s"))
	e.mustRun(0, "apply", "-auto-approve")
	url := fmt.Sprintf("http://127.0.0.1:%d", e.ports["@PORT_Q@"])
	// 200 tokens at 2 ms: streams of about half a second, so that every
	// switch leaves some in flight to the old instance.
	c := streamClient(t, url, 4, 200)
	trials := 0
	for r := 0; r < rounds; r++ {
		for _, step := range rolloutSteps {
			trials++
			e.write(killRolloutConfig(trials, "30s"))
			out, reached := e.interruptAt(step)
			after := e.stateOf("q")
			if !reached {
				t.Fatalf("trial %d (%s): apply never reached the step:\n%s", trials, step.name, out)
			}
			if step.sig == syscall.SIGINT && (!strings.Contains(out, "Interrupt received") || !strings.Contains(out, "drained and stopped") || !strings.Contains(out, "Apply interrupted")) {
				t.Fatalf("trial %d: after one SIGINT the drain in flight should finish, and apply say so:\n%s", trials, out)
			}
			// The state parses and plan works on what is there.
			if p := e.run("plan"); p.code != 0 {
				t.Fatalf("trial %d (%s): plan failed:\n%s", trials, step.name, p)
			}
			res := e.run("apply", "-auto-approve", "-lock-timeout=30s")
			if res.code != 0 {
				t.Fatalf("trial %d (%s, state then: %s): apply did not converge:\n%s\n--- the interrupted apply:\n%s", trials, step.name, after, res, out)
			}
			if p := e.run("plan", "-detailed-exitcode"); p.code != 0 {
				t.Fatalf("trial %d (%s): plan after apply still has changes:\n%s", trials, step.name, p)
			}
			checkTracked(t, e, trials)
			t.Logf("trial %d: %s; state after the interruption: %s", trials, step.name, after)
		}
	}
	time.Sleep(300 * time.Millisecond)
	ok, failed := c.finish()
	if len(failed) > 0 {
		b, _ := os.ReadFile(filepath.Join(e.dir, ".roofline", "proxy", "q.log"))
		t.Logf("proxy log: %s", b)
		t.Fatalf("%d trials: %d requests ok, %d failed or cut: %v", trials, ok, len(failed), failed[:min(5, len(failed))])
	}
	if ok == 0 {
		t.Fatal("the client completed no request")
	}
	t.Logf("%d interrupted rollouts: %d streamed requests through the public port, none failed or cut", trials, ok)
}

// TestDrainLimitCutsOnlyTheLongStream: a stream that outlasts the drain
// limit is cut when the old instance stops (that is what the limit is for);
// apply succeeds and says how many it cut, and no other request fails.
func TestDrainLimitCutsOnlyTheLongStream(t *testing.T) {
	// The drain limit is 4 s: the short streams (50 tokens, about 100 ms)
	// end within it even when a loaded machine slows them tenfold, so only
	// the long one can be cut.
	const drain = "4s"
	e := newEnv(t, killRolloutConfig(0, drain))
	e.mustRun(0, "apply", "-auto-approve")
	url := fmt.Sprintf("http://127.0.0.1:%d", e.ports["@PORT_Q@"])
	c := streamClient(t, url, 2, 50)

	// One stream of 30000 tokens at 2 ms: at least 60 s, far beyond the
	// limit, and longer than the rollout takes on a loaded machine (with
	// 20000 tokens it ended on its own once in about six runs at load 200).
	long := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		body := `{"model": "qwen3-8b", "messages": [{"role": "user", "content": "a long one"}], "max_tokens": 30000, "stream": true, "ignore_eos": true}`
		resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			close(started)
			long <- err
			return
		}
		defer resp.Body.Close()
		br := bufio.NewReader(resp.Body)
		_, _ = br.ReadString('\n')
		close(started)
		b, err := io.ReadAll(br)
		if err == nil && !strings.Contains(string(b), "[DONE]") {
			err = fmt.Errorf("stream ended without [DONE]")
		}
		if err == nil {
			t.Logf("the long stream ended: %d bytes, ...%s", len(b), b[max(0, len(b)-400):])
		}
		long <- err
	}()
	<-started

	e.write(killRolloutConfig(1, drain))
	r := e.mustRun(0, "apply", "-auto-approve")
	if !strings.Contains(r.stdout, "1 request(s) of the old instance cut at the drain limit") {
		t.Fatalf("apply should say it cut 1 request at the drain limit:\n%s", r)
	}
	select {
	case err := <-long:
		if err == nil {
			t.Fatal("the long stream was not cut")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the long stream still runs after the old instance stopped")
	}
	ok, failed := c.finish()
	if len(failed) > 0 || ok == 0 {
		t.Fatalf("other requests: %d ok, %d failed: %v", ok, len(failed), failed[:min(5, len(failed))])
	}
	if p := e.run("plan", "-detailed-exitcode"); p.code != 0 {
		t.Fatalf("plan after apply still has changes:\n%s", p)
	}
	t.Logf("the long stream was cut at the drain limit; %d other requests, none failed", ok)
}

// TestInterruptTheTerraformWay: the first SIGINT lets the server being
// created finish (gates included) and starts no other, with a summary per
// server; a second SIGINT exits at once; the next apply converges.
func TestInterruptTheTerraformWay(t *testing.T) {
	cfg := strings.ReplaceAll(base, `"300ms"`, `"1s"`) + `
server "a" {
  engine        = engine.vllm
  model         = model.qwen
  gpus          = [0]
  port          = @PORT_A@
  max_model_len = 16384
}

server "b" {
  engine        = engine.vllm
  model         = model.qwen
  gpus          = [1]
  port          = @PORT_B@
  max_model_len = 16384
}
`
	e := newEnv(t, cfg)
	start := func() (*exec.Cmd, *bufio.Scanner) {
		cmd := exec.Command(bin, "-no-color", "apply", "-auto-approve", "-parallelism=1")
		cmd.Dir = e.dir
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = cmd.Stdout
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, bufio.NewScanner(out)
	}

	// One SIGINT while the first server loads.
	cmd, sc := start()
	var text strings.Builder
	for sc.Scan() {
		text.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "Started pid") {
			_ = cmd.Process.Signal(syscall.SIGINT)
		}
	}
	err := cmd.Wait()
	out := text.String()
	if err == nil || !strings.Contains(out, "Interrupt received") || !strings.Contains(out, "Apply interrupted") {
		t.Fatalf("the interrupted apply should say so and fail:\n%s", out)
	}
	if !strings.Contains(out, "Creation complete") || !regexp.MustCompile(`server\.\w\s+done\s+state: ready`).MatchString(out) ||
		!regexp.MustCompile(`server\.\w\s+not started\s+not in the state`).MatchString(out) {
		t.Fatalf("the server in flight should finish and the other not start:\n%s", out)
	}
	st := e.status()
	if n := len(st); n != 1 {
		t.Fatalf("want one server running after the interrupt, got %v", st)
	}
	for _, row := range st {
		if row.Status != "ready" || !row.Running {
			t.Fatalf("the server in flight should be ready: %+v", row)
		}
	}

	// Two SIGINTs: roofline exits at once, and says so.
	e.mustRun(0, "destroy", "-auto-approve")
	cmd, sc = start()
	text.Reset()
	var sent time.Time
	first := false
	for sc.Scan() {
		text.WriteString(sc.Text() + "\n")
		switch {
		case strings.Contains(sc.Text(), "Started pid") && !first:
			first = true
			_ = cmd.Process.Signal(syscall.SIGINT)
		case strings.Contains(sc.Text(), "Interrupt received") && sent.IsZero():
			// The second once roofline has taken the first: two SIGINTs
			// pending at once (a process not scheduled in between, on a
			// loaded machine) are one signal.
			sent = time.Now()
			_ = cmd.Process.Signal(syscall.SIGINT)
		}
	}
	_ = cmd.Wait()
	if !strings.Contains(text.String(), "Second interrupt: roofline exits now") {
		t.Fatalf("a second interrupt should exit at once, and say so:\n%s", text.String())
	}
	testload.Within(t, "the exit after a second interrupt", time.Since(sent), 2*time.Second)
	e.mustRun(0, "apply", "-auto-approve", "-lock-timeout=30s")
	if p := e.run("plan", "-detailed-exitcode"); p.code != 0 {
		t.Fatalf("plan after apply still has changes:\n%s", p)
	}
	checkTracked(t, e, 0)
}

// TestPortMoveMovesTheProxy: a new port for a create-before-destroy server
// is a new endpoint: a new proxy listens there, the old one stops after the
// old instance drained, and moving back works (the old port is free).
func TestPortMoveMovesTheProxy(t *testing.T) {
	cfg := func(port string) string {
		return strings.ReplaceAll(killRolloutConfig(0, "30s"), "@PORT_Q@", port)
	}
	e := newEnv(t, cfg("@PORT_A@"))
	e.mustRun(0, "apply", "-auto-approve")
	a, b := e.ports["@PORT_A@"], freePort(t)
	body := `{"model": "qwen3-8b", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, "stream": true}`
	if err := chat(fmt.Sprintf("http://127.0.0.1:%d", a), body); err != nil {
		t.Fatal(err)
	}
	for i, move := range [][2]int{{a, b}, {b, a}} {
		from, to := move[0], move[1]
		e.write(cfg(fmt.Sprint(to)))
		p := e.mustRun(2, "plan", "-detailed-exitcode")
		if !strings.Contains(p.stdout, fmt.Sprintf("a new proxy listens on %d", to)) {
			t.Fatalf("move %d: the plan should show the new endpoint:\n%s", i, p)
		}
		r := e.mustRun(0, "apply", "-auto-approve")
		if !strings.Contains(r.stdout, fmt.Sprintf("The old endpoint's proxy on port %d stopped", from)) {
			t.Errorf("move %d: apply should stop the old endpoint's proxy:\n%s", i, r.stdout)
		}
		if err := chat(fmt.Sprintf("http://127.0.0.1:%d", to), body); err != nil {
			t.Fatalf("move %d: the new port does not serve: %v", i, err)
		}
		if err := chat(fmt.Sprintf("http://127.0.0.1:%d", from), body); err == nil {
			t.Fatalf("move %d: the old port %d still answers", i, from)
		}
		if pl := e.run("plan", "-detailed-exitcode"); pl.code != 0 {
			t.Fatalf("move %d: plan after apply has changes:\n%s", i, pl)
		}
		checkTracked(t, e, i)
	}
}

// TestRollbackToTheKeptInstance: with keep_previous, a rollout keeps the
// old instance, drained; roofline rollback switches back to it in under a
// second with no failed request, and again forward; the window's end (or
// destroy) stops it.
func TestRollbackToTheKeptInstance(t *testing.T) {
	cfg := func(round int) string {
		return strings.Replace(killRolloutConfig(round, "30s"), `drain_timeout         = "30s"`, `drain_timeout         = "30s"
    keep_previous         = "10m"`, 1)
	}
	e := newEnv(t, cfg(0))
	e.mustRun(0, "apply", "-auto-approve")
	firstServing := time.Now() // the first instance was ready before this
	first := e.status()["q"].PID
	url := fmt.Sprintf("http://127.0.0.1:%d", e.ports["@PORT_Q@"])
	c := streamClient(t, url, 4, 50)

	e.write(cfg(1))
	r := e.mustRun(0, "apply", "-auto-approve")
	if !strings.Contains(r.stdout, "is kept for 10m0s") || !strings.Contains(r.stdout, "1 added, 0 changed, 0 destroyed") || !strings.Contains(r.stdout, "Plan: 1 to add, 0 to change, 0 to destroy") || !strings.Contains(r.stdout, "Rollback: the old instance (pid ") {
		t.Fatalf("the rollout should keep the previous instance:\n%s", r.stdout)
	}
	second := e.status()["q"].PID
	if p := e.run("plan", "-detailed-exitcode"); p.code != 0 {
		t.Fatalf("a kept instance within its window is no change:\n%s", p)
	}
	for i, want := range []int{first, second} {
		r := e.mustRun(0, "rollback", "q")
		m := regexp.MustCompile(`switched back to pid (\d+) in ([0-9.]+m?s)`).FindStringSubmatch(r.stdout)
		if m == nil {
			t.Fatalf("rollback %d:\n%s", i, r)
		}
		took, _ := time.ParseDuration(m[2])
		if m[1] != strconv.Itoa(want) {
			t.Fatalf("rollback %d: want pid %d, got %s", i, want, r.stdout)
		}
		testload.Within(t, fmt.Sprintf("rollback %d", i), took, time.Second)
		asked := time.Now()
		if now := e.status()["q"]; now.PID != want || !now.Running {
			t.Fatalf("rollback %d: status %+v", i, now)
		} else if served := asked.Sub(firstServing).Seconds(); i == 0 && now.UptimeSec < served {
			// Its uptime counts from its own ready time, not the switch.
			t.Errorf("rollback to the first instance: uptime %.1f s, but it had served for over %.1f s", now.UptimeSec, served)
		}
		time.Sleep(300 * time.Millisecond)
	}
	ok, failed := c.finish()
	if len(failed) > 0 || ok == 0 {
		t.Fatalf("%d ok, %d failed across the rollout and two rollbacks: %v", ok, len(failed), failed[:min(5, len(failed))])
	}
	// Without keep_previous the window is over: apply stops the kept one.
	e.write(killRolloutConfig(1, "30s"))
	r = e.mustRun(0, "apply", "-auto-approve")
	if !strings.Contains(r.stdout, "rollback window ended") {
		t.Fatalf("apply should stop the kept instance:\n%s", r.stdout)
	}
	if p := e.run("plan", "-detailed-exitcode"); p.code != 0 {
		t.Fatalf("plan after apply has changes:\n%s", p)
	}
	checkTracked(t, e, 0)
	t.Logf("a rollout and two rollbacks: %d requests, none failed", ok)
}
