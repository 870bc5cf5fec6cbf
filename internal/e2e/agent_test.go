package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/journal"
	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/testload"
	"github.com/roofline/roofline/internal/testnet"
)

// agentConfig is one vLLM server with env added to its engine's.
func agentConfig(env string) string {
	cfg := base
	if env != "" {
		cfg = strings.Replace(cfg, `ROOFLINE_REHEARSAL_ITL = "2ms" }`, `ROOFLINE_REHEARSAL_ITL = "2ms", `+env+` }`, 1)
	}
	return cfg + `
server "a" {
  engine        = engine.vllm
  model         = model.qwen
  gpus          = [0]
  port          = @PORT_A@
  max_model_len = 32768
}
`
}

// agentProc is a running roofline agent.
type agentProc struct {
	t    testing.TB
	cmd  *exec.Cmd
	url  string
	mu   sync.Mutex
	log  bytes.Buffer
	done chan struct{}
}

func (a *agentProc) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.log.Write(p)
}

func (a *agentProc) logText() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.log.String()
}

// fastAgent are settings that make the agent's loop run in seconds.
var fastAgent = []string{"-tick=200ms", "-generate-every=1s", "-backoff-initial=500ms", "-backoff-max=2s", "-max-restarts=3", "-hang-checks=2"}

// startAgent starts roofline agent in e's directory with fastAgent and
// waits until it has observed once. It is stopped with SIGTERM at the end of
// the test (before the env's destroy).
func (e *env) startAgent(extra ...string) *agentProc {
	e.t.Helper()
	return startAgentIn(e.t, e.dir, append(append([]string(nil), fastAgent...), extra...)...)
}

// startAgentIn starts roofline agent in dir with args and a free loopback
// port.
func startAgentIn(tb testing.TB, dir string, args ...string) *agentProc {
	tb.Helper()
	port := testnet.FreePort(tb)
	args = append([]string{"-no-color", "agent", fmt.Sprintf("-listen=127.0.0.1:%d", port)}, args...)
	a := &agentProc{t: tb, url: fmt.Sprintf("http://127.0.0.1:%d", port), done: make(chan struct{})}
	a.cmd = exec.Command(bin, args...)
	a.cmd.Dir = dir
	a.cmd.Stdout, a.cmd.Stderr = a, a
	if err := a.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() { _ = a.cmd.Wait(); close(a.done) }()
	tb.Cleanup(a.stop)
	a.waitFor(60*time.Second, "its first observation", func() bool {
		code, _ := a.get("/healthz")
		return code == 200
	})
	return a
}

func (a *agentProc) stop() {
	select {
	case <-a.done:
		return
	default:
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.done:
	case <-time.After(30 * time.Second):
		a.t.Errorf("the agent did not stop within 30 s of SIGTERM; its log:\n%s", a.logText())
		_ = a.cmd.Process.Kill()
		<-a.done
	}
}

func (a *agentProc) kill() {
	_ = a.cmd.Process.Signal(syscall.SIGKILL)
	<-a.done
}

func (a *agentProc) get(path string) (int, string) {
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get(a.url + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitFor polls cond until it holds, failing the test with the agent's log
// after limit.
func (a *agentProc) waitFor(limit time.Duration, what string, cond func() bool) time.Duration {
	a.t.Helper()
	start := time.Now()
	for time.Since(start) < limit {
		if cond() {
			return time.Since(start)
		}
		select {
		case <-a.done:
			a.t.Fatalf("the agent exited while waiting for %s; its log:\n%s", what, a.logText())
		case <-time.After(50 * time.Millisecond):
		}
	}
	a.t.Fatalf("no %s within %s; the agent's log:\n%s", what, limit, a.logText())
	return 0
}

// serving reports whether server name runs with a pid other than old, past
// its gates, and answers /health.
func (e *env) serving(name string, old int) (int, bool) {
	st, err := state.NewFilesystem(filepath.Join(e.dir, ".roofline")).Read()
	if err != nil {
		return 0, false
	}
	s := st.Server(name)
	if s == nil || s.Status != state.StatusReady || s.PID == 0 || s.PID == old {
		return 0, false
	}
	// A refusal is immediate; the long timeout keeps a slow answer on a
	// loaded machine from reading as one (some callers check only once).
	resp, err := (&http.Client{Timeout: 15 * time.Second}).Get(fmt.Sprintf("http://127.0.0.1:%d/health", s.Port))
	if err != nil {
		return 0, false
	}
	resp.Body.Close()
	return s.PID, resp.StatusCode == 200
}

func agentEntries(t *testing.T, e *env, action string) []journal.Entry {
	t.Helper()
	all, err := journal.Read(filepath.Join(e.dir, ".roofline", journal.FileName))
	if err != nil {
		t.Fatal(err)
	}
	var out []journal.Entry
	for _, x := range all {
		if x.Kind == journal.KindAgent && x.Agent != nil && x.Agent.Action == action {
			out = append(out, x)
		}
	}
	return out
}

// TestAgentRestartsKilledEngine: an engine killed with SIGKILL is back and
// healthy within 15 s plus its load time (300 ms here).
func TestAgentRestartsKilledEngine(t *testing.T) {
	e := newEnv(t, agentConfig(""))
	e.mustRun(0, "apply", "-auto-approve")
	old := e.status()["a"].PID
	settings := filepath.Join(e.dir, "agent.json")
	writeFile(t, settings, `{"max_restarts": 3}`)
	a := e.startAgent("-settings=" + settings)

	_ = syscall.Kill(-old, syscall.SIGKILL)
	killed := time.Now()
	var pid int
	a.waitFor(60*time.Second, "restart", func() bool {
		p, ok := e.serving("a", old)
		pid = p
		return ok
	})
	took := time.Since(killed)
	t.Logf("SIGKILL to healthy again: %s (new pid %d; engine load time 300 ms)", took.Round(time.Millisecond), pid)
	testload.Within(t, "SIGKILL to healthy again", took, 15*time.Second+300*time.Millisecond)
	// The agent books the restart when apply returns; the next tick
	// publishes it.
	a.waitFor(60*time.Second, "/metrics showing the restart", func() bool {
		code, body := a.get("/metrics")
		return code == 200 && strings.Contains(body, `roofline_server_restarts_total{server="a"} 1`) && strings.Contains(body, `roofline_server_up{server="a"} 1`)
	})
	if n := len(agentEntries(t, e, journal.AgentRestarted)); n != 1 {
		t.Errorf("journal: %d restarted entries, want 1", n)
	}

	// roofline check sees it healthy, and writes the textfile.
	prom := filepath.Join(t.TempDir(), "roofline.prom")
	r := e.run("check", "-json", "-textfile="+prom)
	b, _ := os.ReadFile(prom)
	if r.code != 0 || !strings.Contains(r.stdout, `"drift": 0`) || !strings.Contains(r.stdout, `"restarts": 1,`) ||
		!strings.Contains(string(b), `roofline_server_up{server="a"} 1`) || !strings.Contains(string(b), `roofline_server_restarts_total{server="a"} 1`) {
		t.Errorf("check after the restart: %s\ntextfile:\n%s", r, b)
	}

	// /snapshot is the host snapshot review plans read.
	code, snap := a.get("/snapshot")
	snapFile := filepath.Join(t.TempDir(), "snapshot.json")
	writeFile(t, snapFile, snap)
	if r := e.run("plan", "-review", "-snapshot="+snapFile); code != 200 || r.code != 0 || !strings.Contains(r.stdout, "No changes") {
		t.Errorf("/snapshot (HTTP %d) read by plan -review -snapshot: %s", code, r)
	}

	// SIGHUP re-reads the settings file; SIGTERM stops the agent and
	// leaves the server serving.
	writeFile(t, settings, `{"max_restarts": 7, "tick": "300ms"}`)
	_ = a.cmd.Process.Signal(syscall.SIGHUP)
	a.waitFor(60*time.Second, "the settings re-read on SIGHUP", func() bool {
		return strings.Contains(a.logText(), "tick 300ms, max_restarts 7")
	})
	a.stop()
	if !strings.Contains(a.logText(), "the servers keep running") {
		t.Errorf("the agent's log on SIGTERM:\n%s", a.logText())
	}
	if _, ok := e.serving("a", 0); !ok {
		t.Error("after SIGTERM to the agent the server does not serve")
	}
}

// TestAgentRefusals: a wide listen address without a token, and a second
// agent for the same state, are refused with a message.
func TestAgentRefusals(t *testing.T) {
	e := newEnv(t, agentConfig(""))
	r := e.run("agent", "-listen=0.0.0.0:0")
	if r.code != 1 || !strings.Contains(r.stderr, "ROOFLINE_AGENT_TOKEN") {
		t.Errorf("agent on 0.0.0.0 without a token: %s", r)
	}
	e.startAgent()
	r = e.run("agent", "-listen=off")
	if r.code != 1 || !strings.Contains(r.stderr, "another roofline agent runs") {
		t.Errorf("a second agent: %s", r)
	}
}

// TestAgentRestartsUnhealthyEngine: an engine whose /health turns 503 while
// its process stays (unhealthy_after) is replaced.
func TestAgentRestartsUnhealthyEngine(t *testing.T) {
	// Long enough for apply's gates (and the replacement's) to pass before
	// /health turns 503, even on a loaded machine.
	const unhealthyAfter = 8 * time.Second
	e := newEnv(t, agentConfig(fmt.Sprintf(`ROOFLINE_REHEARSAL_FAIL = "unhealthy_after=%s"`, unhealthyAfter)))
	e.mustRun(0, "apply", "-auto-approve")
	old := e.status()["a"].PID
	started := time.Now()
	a := e.startAgent()
	var pid int
	a.waitFor(60*time.Second, "replacement of the unhealthy engine", func() bool {
		p, ok := e.serving("a", old)
		pid = p
		return ok
	})
	t.Logf("unhealthy from %s after apply; replaced and healthy %s after the agent started (new pid %d)",
		unhealthyAfter, (time.Since(started)).Round(time.Millisecond), pid)
	if isAlive(old) {
		t.Errorf("the unhealthy engine (pid %d) still runs after its replacement", old)
	}
	var ents []journal.Entry
	a.waitFor(60*time.Second, "the journal entry", func() bool {
		ents = agentEntries(t, e, journal.AgentRestarted)
		return len(ents) > 0
	})
	if !strings.Contains(ents[0].Agent.Reason, "failed") {
		t.Errorf("journal: want a restarted entry naming the failed checks, got %+v", ents)
	}
}

// TestAgentGivesUp: a server that can never start (oom_weights) is retried
// with backoff, then the agent stops and reports the cause on /metrics and
// roofline check reports it too.
func TestAgentGivesUp(t *testing.T) {
	e := newEnv(t, agentConfig(`ROOFLINE_REHEARSAL_FAIL = "oom_weights"`))
	e.mustRun(1, "apply", "-auto-approve")
	a := e.startAgent()
	start := time.Now()
	a.waitFor(90*time.Second, "give-up", func() bool {
		_, body := a.get("/metrics")
		return strings.Contains(body, `roofline_server_gave_up{server="a"} 1`)
	})
	t.Logf("gave up after %s", time.Since(start).Round(time.Millisecond))
	_, body := a.get("/metrics")
	if !strings.Contains(body, `roofline_server_last_failure_info{class="oom_weights",server="a"} 1`) {
		t.Errorf("/metrics does not name the cause:\n%s", grepLines(body, "roofline_server_"))
	}
	// Prometheus' own checker accepts the real agent's output.
	if promtool, err := exec.LookPath("promtool"); err == nil {
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = strings.NewReader(body)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics on the agent's /metrics: %v\n%s", err, out)
		}
	} else if os.Getenv("ROOFLINE_PROMETHEUS_REQUIRED") == "1" {
		t.Error("promtool is not installed and ROOFLINE_PROMETHEUS_REQUIRED=1")
	}
	fails := agentEntries(t, e, journal.AgentRestartFailed)
	if len(fails) != 3 || len(agentEntries(t, e, journal.AgentGaveUp)) != 1 {
		t.Fatalf("journal: %d failed restarts and %d give-ups, want 3 and 1", len(fails), len(agentEntries(t, e, journal.AgentGaveUp)))
	}
	// Backoff: 500 ms, then 1 s between the attempts (plus the attempts).
	for i, min := range []time.Duration{500 * time.Millisecond, time.Second} {
		if gap := fails[i+1].Time.Sub(fails[i].Time); gap < min {
			t.Errorf("attempt %d came %s after the one before, want at least %s (backoff)", i+2, gap, min)
		}
	}
	// It stays given up: no further attempt.
	time.Sleep(2 * time.Second)
	if n := len(agentEntries(t, e, journal.AgentRestartFailed)); n != 3 {
		t.Errorf("%d failed restarts after giving up, want still 3", n)
	}
	r := e.run("check")
	if r.code != 2 || !strings.Contains(r.stdout, "oom_weights") || !strings.Contains(r.stdout, "gave up") {
		t.Errorf("roofline check: want exit 2 naming oom_weights and the give-up, got %s", r)
	}
}

// TestAgentKilledLeavesNoOrphan: the agent killed with SIGKILL in the middle
// of a restart leaves no untracked process, and a new agent takes over.
func TestAgentKilledLeavesNoOrphan(t *testing.T) {
	e := newEnv(t, strings.ReplaceAll(agentConfig(""), `"300ms"`, `"2s"`))
	e.mustRun(0, "apply", "-auto-approve")
	old := e.status()["a"].PID
	a := e.startAgent()
	_ = syscall.Kill(-old, syscall.SIGKILL)
	a.waitFor(60*time.Second, "a restart in progress", func() bool {
		return strings.Contains(a.logText(), "server.a: Creating...")
	})
	time.Sleep(300 * time.Millisecond) // inside the engine's 2 s load
	a.kill()
	checkTracked(t, e, 0)

	b := e.startAgent()
	start := time.Now()
	b.waitFor(60*time.Second, "the new agent's restart", func() bool {
		_, ok := e.serving("a", old)
		return ok
	})
	t.Logf("the new agent had the server healthy %s after it started", time.Since(start).Round(time.Millisecond))
	checkTracked(t, e, 1)
	if n := len(launchedPids(e.dir)); n == 0 {
		t.Fatal("no engine process runs")
	}
}

// TestApplyDuringAgentRestart: an apply that starts while the agent
// restarts a server waits for the lock and finds nothing to do: one engine,
// no deadlock.
func TestApplyDuringAgentRestart(t *testing.T) {
	e := newEnv(t, strings.ReplaceAll(agentConfig(""), `"300ms"`, `"2s"`))
	e.mustRun(0, "apply", "-auto-approve")
	old := e.status()["a"].PID
	a := e.startAgent()
	_ = syscall.Kill(-old, syscall.SIGKILL)
	a.waitFor(60*time.Second, "a restart in progress", func() bool {
		return strings.Contains(a.logText(), "server.a: Creating...")
	})
	start := time.Now()
	r := e.run("apply", "-auto-approve", "-lock-timeout=60s")
	t.Logf("apply during the restart returned after %s", time.Since(start).Round(time.Millisecond))
	if r.code != 0 || strings.Contains(r.stdout, "Creating...") {
		t.Fatalf("apply during the agent's restart: want exit 0 with nothing to start, got %s", r)
	}
	if _, ok := e.serving("a", old); !ok {
		t.Fatalf("after both, server a does not serve:\n%s", a.logText())
	}
	checkTracked(t, e, 0)
	sessions := map[int]bool{}
	for _, pid := range launchedPids(e.dir) {
		sessions[sessionOf(pid)] = true
	}
	if len(sessions) != 1 {
		t.Errorf("%d engine sessions run, want 1 (double start?)", len(sessions))
	}
}

// TestAgentAfterReboot: a simulated reboot (every engine killed, the boot
// id in the state and in the agent's record changed) brings the servers
// back when the agent starts.
func TestAgentAfterReboot(t *testing.T) {
	e := newEnv(t, twoServers)
	e.mustRun(0, "apply", "-auto-approve")
	rows := e.status()
	sd := filepath.Join(e.dir, ".roofline")
	for _, r := range rows {
		_ = syscall.Kill(-r.PID, syscall.SIGKILL)
		waitGone(t, r.PID)
	}
	fs := state.NewFilesystem(sd)
	st, err := fs.Read()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st.Servers {
		s.BootID = "00000000-0000-4000-8000-000000000000"
	}
	if err := fs.Write(st); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(sd, "agent", "boot_id"), "00000000-0000-4000-8000-000000000000\n")

	start := time.Now()
	a := e.startAgent()
	a.waitFor(60*time.Second, "both servers back", func() bool {
		_, okA := e.serving("a", rows["a"].PID)
		_, okB := e.serving("b", rows["b"].PID)
		return okA && okB
	})
	t.Logf("after the simulated reboot both servers were healthy %s after the agent started", time.Since(start).Round(time.Millisecond))
	if len(agentEntries(t, e, journal.AgentRebooted)) != 1 {
		t.Errorf("the journal has no reboot entry")
	}
}

func grepLines(s, prefix string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func isAlive(pid int) bool { return syscall.Kill(pid, 0) == nil && sessionOf(pid) != 0 }

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkAgent16Servers measures roofline agent's own cost while it
// watches 16 rehearsal servers at its default 5 s tick (a short generation
// per server every minute): CPU time per tick, CPU share, and resident
// memory. One iteration is one tick: run with -benchtime=12x (a minute).
func BenchmarkAgent16Servers(b *testing.B) {
	e := sixteenServers(b)
	defer e.run("destroy", "-auto-approve", "-lock-timeout=60s")
	if r := e.run("apply", "-auto-approve"); r.code != 0 {
		b.Fatalf("apply: %s", r)
	}
	a := startAgentIn(b, e.dir, "-tick=5s", "-generate-every=1m")
	defer a.stop()
	a.waitFor(time.Minute, "16 servers up", func() bool {
		_, body := a.get("/metrics")
		return len(regexp.MustCompile(`(?m)^roofline_server_up\{.*\} 1$`).FindAllString(body, -1)) == 16 && strings.Contains(body, "roofline_servers_drifted 0")
	})
	pid := a.cmd.Process.Pid
	cpu0 := cpuTicks(b, pid)
	start := time.Now()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		time.Sleep(5 * time.Second)
	}
	b.StopTimer()
	wall := time.Since(start)
	cpu := time.Duration(cpuTicks(b, pid)-cpu0) * 10 * time.Millisecond // USER_HZ = 100
	_, body := a.get("/metrics")
	if !strings.Contains(body, "roofline_servers_drifted 0") {
		b.Fatalf("servers drifted while measuring:\n%s", grepLines(body, "roofline_server"))
	}
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/tick")
	b.ReportMetric(100*cpu.Seconds()/wall.Seconds(), "cpu-%")
	b.ReportMetric(float64(statusKiB(b, pid, "VmRSS"))/1024, "rss-MiB")
	b.ReportMetric(float64(statusKiB(b, pid, "VmHWM"))/1024, "peak-rss-MiB")
}

// cpuTicks is utime + stime of pid in clock ticks (/proc/PID/stat).
func cpuTicks(tb testing.TB, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	var u, s int64
	fmt.Sscan(f[11], &u)
	fmt.Sscan(f[12], &s)
	return u + s
}

// statusKiB reads a "kB" field of /proc/PID/status.
func statusKiB(tb testing.TB, pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			var n int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &n)
			return n
		}
	}
	return 0
}

// TestAgentLeavesApplyAlone: while an apply starts a server (status
// "starting" for the engine's 2 s load), the agent waits for the lock and
// then leaves the server the apply finished alone.
func TestAgentLeavesApplyAlone(t *testing.T) {
	e := newEnv(t, strings.ReplaceAll(agentConfig(""), `"300ms"`, `"2s"`))
	a := e.startAgent()
	e.mustRun(0, "apply", "-auto-approve")
	pid := e.status()["a"].PID
	time.Sleep(2 * time.Second) // ten ticks
	if _, ok := e.serving("a", 0); !ok || e.status()["a"].PID != pid {
		t.Fatalf("the server apply started was replaced or is down (pid %d before); the agent's log:\n%s", pid, a.logText())
	}
	if n := len(agentEntries(t, e, journal.AgentRestarted)) + len(agentEntries(t, e, journal.AgentRestartFailed)); n != 0 {
		t.Errorf("the agent acted %d time(s) on a server an apply was starting:\n%s", n, a.logText())
	}
}

// TestAgentNeverAppliesNewConfiguration: a server whose configuration
// changed since the last apply is not restarted by the agent (with either
// configuration): that is apply's job. The agent says so, and not on every
// tick.
func TestAgentNeverAppliesNewConfiguration(t *testing.T) {
	e := newEnv(t, agentConfig(""))
	e.mustRun(0, "apply", "-auto-approve")
	old := e.status()["a"].PID
	e.write(strings.Replace(agentConfig(""), "max_model_len = 32768", "max_model_len = 16384", 1))
	a := e.startAgent()
	_ = syscall.Kill(-old, syscall.SIGKILL)
	a.waitFor(60*time.Second, "the agent's refusal", func() bool {
		return strings.Contains(a.logText(), "its configuration changed since the last apply")
	})
	refused := time.Now()
	time.Sleep(2 * time.Second) // ten ticks; backoff 0.5 s doubling to 2 s
	// The refusals the backoff allows in the time that really passed (a
	// loaded machine may sleep longer), and one more for a tick on the
	// edge; asking on every 200 ms tick would log several times as many.
	el, allowed := time.Since(refused), 2
	for at, step := 500*time.Millisecond, 500*time.Millisecond; at <= el; at += step {
		allowed++
		step = min(2*step, 2*time.Second)
	}
	if n := strings.Count(a.logText(), "its configuration changed since the last apply"); n > allowed {
		t.Errorf("the refusal was logged %d times in %s (the backoff allows %d): the agent asks again on every tick", n, el.Round(time.Millisecond), allowed)
	}
	if strings.Contains(a.logText(), "Creating...") || len(launchedPids(e.dir)) != 0 {
		t.Fatalf("the agent started the server with a configuration never applied:\n%s", a.logText())
	}
	r := e.mustRun(0, "apply", "-auto-approve", "-lock-timeout=30s")
	if !strings.Contains(r.stdout, "Apply complete!") {
		t.Fatalf("apply: %s", r)
	}
	if _, ok := e.serving("a", old); !ok {
		t.Fatal("not serving after apply")
	}
}

// TestAgentWithAPIKeys: the agent's short generations authenticate with
// each server's key (from a variable and from a file), so keyed servers are
// up and never taken for hung; a killed keyed server is restarted with its
// key; no key reaches the agent's log.
func TestAgentWithAPIKeys(t *testing.T) {
	const vkey, skey = "sk-vllm-7f3a9c21e4", "sk-sglang-0b8d55e1aa"
	e := newEnv(t, keyed)
	writeFile(t, filepath.Join(e.dir, "sglang.key"), skey+"\n")
	writeFile(t, filepath.Join(e.dir, "keys.auto.rfvars"), fmt.Sprintf("vllm_key = %q\n", vkey))
	e.mustRun(0, "apply", "-auto-approve")
	old := e.status()["v"].PID
	a := e.startAgent()
	time.Sleep(3 * time.Second) // three generations each
	_, body := a.get("/metrics")
	for _, want := range []string{`roofline_server_up{server="v"} 1`, `roofline_server_up{server="s"} 1`, "roofline_servers_drifted 0"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s:\n%s\nthe agent's log:\n%s", want, grepLines(body, "roofline_server"), a.logText())
		}
	}
	_ = syscall.Kill(-old, syscall.SIGKILL)
	a.waitFor(60*time.Second, "the keyed server back", func() bool {
		_, ok := e.serving("v", old)
		return ok
	})
	time.Sleep(2 * time.Second)
	if n := len(agentEntries(t, e, journal.AgentRestarted)); n != 1 {
		t.Errorf("%d restarts, want 1 (the killed one):\n%s", n, a.logText())
	}
	if strings.Contains(a.logText(), vkey) || strings.Contains(a.logText(), skey) {
		t.Errorf("a key is in the agent's log:\n%s", a.logText())
	}
}

// TestAgentRestartKeepsRollbackWindow: restarting one server never ends
// another server's rollback window (keep_previous): its kept previous
// instance still runs after the restart.
func TestAgentRestartKeepsRollbackWindow(t *testing.T) {
	cfg := func(round int) string {
		return strings.Replace(killRolloutConfig(round, "30s"), `drain_timeout         = "30s"`, `drain_timeout         = "30s"
    keep_previous         = "10m"`, 1) + `
server "a" {
  engine        = engine.vllm
  model         = model.qwen
  gpus          = [1]
  port          = @PORT_A@
  max_model_len = 16384
}
`
	}
	e := newEnv(t, cfg(0))
	e.mustRun(0, "apply", "-auto-approve")
	e.write(cfg(1))
	e.mustRun(0, "apply", "-auto-approve")
	st, err := state.NewFilesystem(filepath.Join(e.dir, ".roofline")).Read()
	if err != nil || st.Servers["q"].Deposed == nil || st.Servers["q"].Deposed.Status != state.StatusKept {
		t.Fatalf("the rollout kept no previous instance: %v", err)
	}
	kept := st.Servers["q"].Deposed.PID
	old := st.Servers["a"].PID
	a := e.startAgent()
	_ = syscall.Kill(-old, syscall.SIGKILL)
	a.waitFor(60*time.Second, "server a back", func() bool {
		_, ok := e.serving("a", old)
		return ok
	})
	st, _ = state.NewFilesystem(filepath.Join(e.dir, ".roofline")).Read()
	if d := st.Servers["q"].Deposed; d == nil || d.PID != kept || !isAlive(kept) {
		t.Fatalf("restarting server a ended server q's rollback window (kept pid %d):\n%s", kept, a.logText())
	}
}

// TestAgentEndsRollbackWindow: once keep_previous's window ends, the agent
// stops the kept previous instance (through apply) and journals it.
func TestAgentEndsRollbackWindow(t *testing.T) {
	cfg := func(round int) string {
		return strings.Replace(killRolloutConfig(round, "30s"), `drain_timeout         = "30s"`, `drain_timeout         = "30s"
    keep_previous         = "4s"`, 1)
	}
	e := newEnv(t, cfg(0))
	e.mustRun(0, "apply", "-auto-approve")
	e.write(cfg(1))
	e.mustRun(0, "apply", "-auto-approve")
	sd := filepath.Join(e.dir, ".roofline")
	st, _ := state.NewFilesystem(sd).Read()
	if st.Servers["q"].Deposed == nil {
		t.Fatal("the rollout kept no previous instance")
	}
	kept, ready := st.Servers["q"].Deposed.PID, st.Servers["q"].ReadyAt
	a := e.startAgent()
	a.waitFor(60*time.Second, "the kept instance stopped", func() bool {
		st, _ := state.NewFilesystem(sd).Read()
		return st != nil && st.Servers["q"].Deposed == nil
	})
	if time.Since(ready) < 4*time.Second {
		t.Errorf("stopped %s after the rollout, before its 4 s window", time.Since(ready))
	}
	waitGone(t, kept)
	a.waitFor(60*time.Second, "the journal entry", func() bool { return len(agentEntries(t, e, journal.AgentRetired)) == 1 })
	if _, ok := e.serving("q", 0); !ok {
		t.Fatal("the server does not serve after its previous instance stopped")
	}
}

// TestAgentRestartKeepsHostSecrets: a server whose engine reads a secret
// from a host file (env_from_file) gets it again when the agent restarts
// it, as apply gives it: the restarted engine's environment holds the
// file's value, and the agent's log does not.
func TestAgentRestartKeepsHostSecrets(t *testing.T) {
	const token = "hf_agent_restart_3c9d0e7a51"
	file := filepath.Join(t.TempDir(), "hf.token")
	writeFile(t, file, token+"\n")
	cfg := strings.Replace(agentConfig(""), "  max_model_len = 32768\n", fmt.Sprintf("  max_model_len = 32768\n  env_from_file = { HF_TOKEN = %q }\n", file), 1)
	e := newEnv(t, cfg)
	e.mustRun(0, "apply", "-auto-approve")
	old := e.status()["a"].PID
	if got := environOf(t, old)["HF_TOKEN"]; got != token {
		t.Fatalf("apply started the engine with HF_TOKEN=%q, want the file's value", got)
	}
	a := e.startAgent()
	_ = syscall.Kill(-old, syscall.SIGKILL)
	var pid int
	a.waitFor(60*time.Second, "the restart", func() bool {
		p, ok := e.serving("a", old)
		pid = p
		return ok
	})
	if got := environOf(t, pid)["HF_TOKEN"]; got != token {
		t.Errorf("the agent restarted the engine with HF_TOKEN=%q, want the file's value; the agent's log:\n%s", got, a.logText())
	}
	if strings.Contains(a.logText(), token) {
		t.Errorf("the secret is in the agent's log:\n%s", a.logText())
	}
}

// environOf is the environment process pid started with.
func environOf(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatalf("reading the engine's environment: %v", err)
	}
	out := map[string]string{}
	for _, kv := range strings.Split(string(b), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}

// TestLostProxyRestartsOnlyTheProxy: the proxy in front of an engine dies
// (SIGKILL) while the engine serves. plan says so and plans an update, not
// a replacement; apply starts a new proxy and leaves the engine (the same
// pid) alone; then the agent does the same on its own. A restart of the
// engine would cost minutes of weight loading on a real GPU.
func TestLostProxyRestartsOnlyTheProxy(t *testing.T) {
	e := newEnv(t, strings.Replace(agentConfig(""), "max_model_len = 32768\n", "max_model_len = 32768\n  lifecycle {\n    create_before_destroy = true\n  }\n", 1))
	e.mustRun(0, "apply", "-auto-approve")
	read := func() *state.Server {
		t.Helper()
		st, err := state.NewFilesystem(filepath.Join(e.dir, ".roofline")).Read()
		if err != nil || st.Server("a") == nil || st.Server("a").Proxy == nil {
			t.Fatalf("state: %v %+v", err, st)
		}
		return st.Server("a")
	}
	s := read()
	engine, proxy := s.PID, s.Proxy.PID
	kill := func(pid int) {
		t.Helper()
		_ = syscall.Kill(pid, syscall.SIGKILL)
		waitGone(t, pid)
	}

	kill(proxy)
	if r := e.run("status"); r.code != 2 || !strings.Contains(r.stdout+r.stderr, "the proxy on port") {
		t.Errorf("status with the proxy gone (want exit 2, saying why):\n%s", r)
	}
	r := e.run("plan", "-detailed-exitcode")
	if r.code != 2 || !strings.Contains(r.stdout, "the proxy is gone") || !strings.Contains(r.stdout, "update in-place") || strings.Contains(r.stdout, "replace") {
		t.Fatalf("plan after the proxy died:\n%s", r)
	}
	r = e.mustRun(0, "apply", "-auto-approve")
	if !strings.Contains(r.stdout, "the engine (pid "+strconv.Itoa(engine)+") was not restarted") {
		t.Errorf("apply:\n%s", r)
	}
	s = read()
	if s.PID != engine || s.Proxy.PID == proxy || s.Proxy.PID == 0 {
		t.Fatalf("after apply: engine pid %d (was %d), proxy pid %d (was %d)", s.PID, engine, s.Proxy.PID, proxy)
	}
	if _, ok := e.serving("a", 0); !ok {
		t.Fatal("the public port does not serve after apply started a new proxy")
	}
	e.mustRun(0, "plan", "-detailed-exitcode")

	// The agent, between applies.
	proxy = s.Proxy.PID
	a := e.startAgent()
	kill(proxy)
	a.waitFor(60*time.Second, "a new proxy", func() bool {
		st, err := state.NewFilesystem(filepath.Join(e.dir, ".roofline")).Read()
		if err != nil || st.Server("a") == nil || st.Server("a").Proxy == nil || st.Server("a").Proxy.PID == proxy {
			return false
		}
		_, ok := e.serving("a", 0)
		return ok
	})
	if s = read(); s.PID != engine {
		t.Errorf("the agent restarted the engine (pid %d, was %d) for a lost proxy:\n%s", s.PID, engine, a.logText())
	}
	if !strings.Contains(a.logText(), "the proxy on port") {
		t.Errorf("the agent's log does not say the proxy was gone:\n%s", a.logText())
	}
	t.Logf("engine pid %d throughout; the agent's new proxy: pid %d\n%s", engine, s.Proxy.PID, a.logText())
}
