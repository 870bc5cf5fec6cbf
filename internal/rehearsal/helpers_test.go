package rehearsal

import (
	"bytes"
	"fmt"
	"github.com/roofline/roofline/internal/testnet"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/model/modeltest"
)

// The tests drive the rehearsal engine as a separate process: the test
// binary runs sim.Main when SIM_TEST_SPEC is set (and the engine starts its
// worker child the same way).
const envTestSpec = "SIM_TEST_SPEC"

func TestMain(m *testing.M) {
	if spec := os.Getenv(envTestSpec); spec != "" {
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		os.Exit(Main(spec, os.Args[1:], Env{Stdout: os.Stdout, Stderr: os.Stderr, Self: []string{exe}}))
	}
	os.Exit(m.Run())
}

// syncBuffer collects a process's output safely across goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startWithin bounds a start, a failed start (200 ms of load time) or an
// exit, and any step that must follow at once from one of these. It is
// generous because CI runs these beside every other package on two cores; a
// real hang still fails, with the goroutines of both processes (dump).
const startWithin = time.Minute

// engineProc is a rehearsal engine started as a process of its own group.
type engineProc struct {
	t    *testing.T
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	code int
}

// startEngine runs the engine spec with args; env adds KEY=VALUE pairs.
func startEngine(t *testing.T, spec string, env []string, args ...string) *engineProc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(append(os.Environ(), envTestSpec+"="+spec, "ROOFLINE_REHEARSAL_LOAD_TIME=200ms",
		"ROOFLINE_REHEARSAL_WARMUP=200ms"), env...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &engineProc{t: t, cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		p.code = 0
		if ee, ok := err.(*exec.ExitError); ok {
			p.code = ee.ExitCode()
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	})
	return p
}

// wait returns the exit status, failing the test after timeout.
func (p *engineProc) wait(timeout time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(timeout):
		p.t.Fatalf("the engine did not exit within %v; output, then the goroutines of its processes:\n%s", timeout, p.dump())
		return -1
	}
}

// dump asks every process of the engine's group (API server and worker are
// Go processes) to print its goroutines, and returns the output with them,
// so that a hang names where it hangs.
func (p *engineProc) dump() string {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGQUIT)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
	}
	return p.out.String()
}

// waitFor polls cond until it holds, failing after timeout.
func (p *engineProc) waitFor(what string, timeout time.Duration, cond func() bool) {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			p.t.Fatalf("timed out waiting for %s; output, then the goroutines of its processes:\n%s", what, p.dump())
		}
		select {
		case <-p.done:
			if !cond() {
				p.t.Fatalf("the engine exited (status %d) before %s; output:\n%s", p.code, what, p.out)
			}
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// freePort returns a TCP port that was free a moment ago.
func freePort(t *testing.T) int { return testnet.FreePort(t) }

// writeModel writes a sparse synthetic model folder (real shapes, no data).
func writeModel(t *testing.T, arch modeltest.Arch, opts ...modeltest.Option) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), strings.ToLower(arch.Name))
	if err := modeltest.Write(dir, arch, opts...); err != nil {
		t.Fatal(err)
	}
	return dir
}

// healthCode is GET /health's status, or 0 when the connection is refused.
// The timeout is long: a refusal is immediate, and an answer slowed by a
// loaded machine must not read as one.
func healthCode(port int) int {
	c := &http.Client{Timeout: 15 * time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/health", port))
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }
