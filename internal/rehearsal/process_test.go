package rehearsal

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/model/modeltest"
)

// childrenOf lists the pids whose parent is pid (Linux /proc).
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, s := range stats {
		raw, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut at the last ')'.
		rest := string(raw[strings.LastIndexByte(string(raw), ')')+1:])
		f := strings.Fields(rest)
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			n, _ := strconv.Atoi(filepath.Base(filepath.Dir(s)))
			out = append(out, n)
		}
	}
	return out
}

func waitGone(t *testing.T, pids []int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for _, pid := range pids {
		for alive(pid) && !zombie(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d still runs", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func zombie(pid int) bool {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	rest := string(raw[strings.LastIndexByte(string(raw), ')')+1:])
	f := strings.Fields(rest)
	return len(f) > 0 && f[0] == "Z"
}

// The engine starts a worker child; SIGTERM stops both and exits 0.
func TestSIGTERMStopsChildren(t *testing.T) {
	qwen := writeModel(t, modeltest.Qwen3_8B)
	for _, spec := range []string{"vllm@0.16.0", "sglang@0.5.6.post2"} {
		t.Run(spec, func(t *testing.T) {
			t.Parallel()
			kind, _, _ := strings.Cut(spec, "@")
			port := freePort(t)
			p := startEngine(t, spec, nil, engineArgs(kind, qwen, port)...)
			p.waitFor("ready", startWithin, func() bool { return healthCode(port) == 200 })
			kids := childrenOf(t, p.cmd.Process.Pid)
			if len(kids) != 1 {
				t.Fatalf("want one worker child, found %v", kids)
			}
			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if code := p.wait(startWithin); code != 0 {
				t.Errorf("exit status %d after SIGTERM, want 0; output:\n%s", code, p.out)
			}
			waitGone(t, kids, startWithin)
			if !strings.Contains(p.out.String(), "Application shutdown complete.") {
				t.Errorf("no shutdown lines:\n%s", p.out)
			}
		})
	}
}

// A worker whose parent is killed outright exits by itself.
func TestWorkerDiesWithParent(t *testing.T) {
	qwen := writeModel(t, modeltest.Qwen3_8B)
	port := freePort(t)
	p := startEngine(t, "vllm@0.16.0", nil, engineArgs(KindVLLM, qwen, port)...)
	p.waitFor("ready", startWithin, func() bool { return healthCode(port) == 200 })
	kids := childrenOf(t, p.cmd.Process.Pid)
	if len(kids) != 1 {
		t.Fatalf("want one worker child, found %v", kids)
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.wait(startWithin)
	waitGone(t, kids, startWithin)
}

// loadWindow is the load time (and SGLang's warm-up) of TestLoadTimeSemantics:
// the test must look at /health within it after the engine logs the step,
// so it is long enough for a loaded machine's pauses.
const loadWindow = 3 * time.Second

// vLLM refuses connections while it loads; SGLang refuses while it loads,
// then answers 503 until warm-up ends.
func TestLoadTimeSemantics(t *testing.T) {
	qwen := writeModel(t, modeltest.Qwen3_8B)
	t.Run("vllm", func(t *testing.T) {
		t.Parallel()
		port := freePort(t)
		start := time.Now()
		p := startEngine(t, "vllm@0.16.0", []string{"ROOFLINE_REHEARSAL_LOAD_TIME=" + loadWindow.String()}, engineArgs(KindVLLM, qwen, port)...)
		p.waitFor("the weights loading", startWithin, func() bool { return strings.Contains(p.out.String(), "Starting to load model") })
		if c := healthCode(port); c != 0 {
			t.Errorf("while loading /health answered %d; vLLM refuses connections", c)
		}
		p.waitFor("ready", startWithin, func() bool { return healthCode(port) == 200 })
		if el := time.Since(start); el < loadWindow {
			t.Errorf("ready after %v, before the load time", el)
		}
	})
	t.Run("sglang", func(t *testing.T) {
		t.Parallel()
		port := freePort(t)
		p := startEngine(t, "sglang@0.5.6.post2", []string{"ROOFLINE_REHEARSAL_LOAD_TIME=" + loadWindow.String(), "ROOFLINE_REHEARSAL_WARMUP=" + loadWindow.String()},
			engineArgs(KindSGLang, qwen, port)...)
		p.waitFor("the weights loading", startWithin, func() bool { return strings.Contains(p.out.String(), "Load weight begin") })
		if c := healthCode(port); c != 0 {
			t.Errorf("while loading /health answered %d; SGLang does not listen yet", c)
		}
		p.waitFor("503 while warming up", startWithin, func() bool { return healthCode(port) == 503 })
		p.waitFor("ready", startWithin, func() bool { return healthCode(port) == 200 })
		// The line follows the state change that /health shows, and the
		// output reaches the test through a pipe: it may come a moment later.
		p.waitFor("the ready line", startWithin, func() bool {
			return strings.Contains(p.out.String(), "The server is fired up and ready to roll!")
		})
	})
}

func TestLifecycleInjection(t *testing.T) {
	qwen := writeModel(t, modeltest.Qwen3_8B)
	t.Run("crash_after", func(t *testing.T) {
		t.Parallel()
		port := freePort(t)
		p := startEngine(t, "vllm@0.16.0", []string{EnvFail + "=crash_after=300ms"}, engineArgs(KindVLLM, qwen, port)...)
		p.waitFor("ready", startWithin, func() bool { return healthCode(port) == 200 })
		if code := p.wait(startWithin); code == 0 {
			t.Errorf("exit status 0 after a crash")
		}
		out := p.out.String()
		if !strings.Contains(out, "an illegal memory access was encountered") || !strings.Contains(out, "died unexpectedly") {
			t.Errorf("crash lines missing:\n%s", out)
		}
	})
	t.Run("never_healthy vllm", func(t *testing.T) {
		t.Parallel()
		port := freePort(t)
		p := startEngine(t, "vllm@0.16.0", []string{EnvFail + "=never_healthy"}, engineArgs(KindVLLM, qwen, port)...)
		time.Sleep(1500 * time.Millisecond)
		if c := healthCode(port); c != 0 {
			t.Errorf("/health %d, want connection refused", c)
		}
		select {
		case <-p.done:
			t.Errorf("exited (%d); it should hang", p.code)
		default:
		}
	})
	t.Run("never_healthy sglang", func(t *testing.T) {
		t.Parallel()
		port := freePort(t)
		p := startEngine(t, "sglang@0.5.6.post2", []string{EnvFail + "=never_healthy"}, engineArgs(KindSGLang, qwen, port)...)
		p.waitFor("503", startWithin, func() bool { return healthCode(port) == 503 })
		time.Sleep(800 * time.Millisecond)
		if c := healthCode(port); c != 503 {
			t.Errorf("/health %d, want 503 for good", c)
		}
	})
	t.Run("unhealthy_after", func(t *testing.T) {
		t.Parallel()
		port := freePort(t)
		p := startEngine(t, "sglang@0.5.6.post2", []string{EnvFail + "=unhealthy_after=500ms", "ROOFLINE_REHEARSAL_WARMUP=0s"}, engineArgs(KindSGLang, qwen, port)...)
		p.waitFor("ready", startWithin, func() bool { return healthCode(port) == 200 })
		p.waitFor("503", startWithin, func() bool { return healthCode(port) == 503 })
		// Logged after the state change /health shows (see the ready line).
		p.waitFor("the health-check line", startWithin, func() bool { return strings.Contains(p.out.String(), "Health check failed.") })
	})
}

func TestKnobErrors(t *testing.T) {
	qwen := writeModel(t, modeltest.Qwen3_8B)
	for _, env := range []string{EnvTTFT + "=fast", EnvFail + "=kv_too_small", EnvFail + "=explode", EnvThinking + "=maybe"} {
		p := startEngine(t, "sglang@0.5.6.post2", []string{env}, engineArgs(KindSGLang, qwen, freePort(t))...)
		if code := p.wait(startWithin); code != 1 || !strings.Contains(p.out.String(), "rehearsal: ROOFLINE_REHEARSAL_") {
			t.Errorf("%s: exit %d, output %q", env, code, p.out)
		}
	}
}

// While requests run, vLLM logs its throughput line every VLLM_LOG_STATS_INTERVAL.
func TestStatsLogLine(t *testing.T) {
	qwen := writeModel(t, modeltest.Qwen3_8B)
	port := freePort(t)
	p := startEngine(t, "vllm@0.16.0", []string{"VLLM_LOG_STATS_INTERVAL=0.2"}, engineArgs(KindVLLM, qwen, port, "--served-model-name", "m")...)
	p.waitFor("ready", startWithin, func() bool { return healthCode(port) == 200 })
	body := `{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":60,"ignore_eos":true}`
	resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/v1/chat/completions", port), "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	line := regexp.MustCompile(`Engine 000: Avg prompt throughput: [\d.]+ tokens/s, Avg generation throughput: [1-9][\d.]* tokens/s, Running: \d reqs`)
	p.waitFor("a stats line with the generation rate", startWithin, func() bool { return line.MatchString(p.out.String()) })
}
