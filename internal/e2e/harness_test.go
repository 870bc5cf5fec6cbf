// Package e2e runs real roofline binaries against the rehearsal engine:
// real processes, real HTTP, real files. Nothing here is mocked.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/roofline/roofline/internal/testnet"
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

var (
	bin    string // the roofline binary under test
	models string // synthesized model folders
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("e2e: skipped with -short")
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "roofline-e2e-")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "roofline")
	build := exec.Command("go", "build", "-o", bin, "github.com/roofline/roofline/cmd/roofline")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Println("e2e: building roofline failed:", err)
		os.Exit(1)
	}
	models = filepath.Join(dir, "models")
	if err := modeltest.Write(filepath.Join(models, "qwen3-8b"), modeltest.Qwen3_8B); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// env is one configuration directory with its own state.
type env struct {
	t     *testing.T
	dir   string
	ports map[string]int
}

// newEnv writes the configuration from tmpl: @MODELS@ becomes the model
// folder root, @INVENTORY@ a 4×H100 snapshot, @PORT_X@ a free port.
func newEnv(t *testing.T, tmpl string) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), ports: map[string]int{}}
	inv, err := os.ReadFile("../../examples/rehearsal/gpus.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.dir, "gpus.json"), inv, 0o644); err != nil {
		t.Fatal(err)
	}
	e.write(tmpl)
	t.Cleanup(e.cleanup)
	return e
}

// write (re)writes main.hcl from tmpl, keeping the ports already chosen.
func (e *env) write(tmpl string) {
	e.t.Helper()
	src := strings.ReplaceAll(tmpl, "@MODELS@", models)
	for {
		i := strings.Index(src, "@PORT_")
		if i < 0 {
			break
		}
		j := strings.Index(src[i+1:], "@")
		name := src[i : i+j+2]
		if _, ok := e.ports[name]; !ok {
			e.ports[name] = freePort(e.t)
		}
		src = strings.ReplaceAll(src, name, fmt.Sprint(e.ports[name]))
	}
	if err := os.WriteFile(filepath.Join(e.dir, "main.hcl"), []byte(src), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func freePort(t *testing.T) int { return testnet.FreePort(t) }

type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout\n%s\n--- stderr\n%s", r.code, r.stdout, r.stderr)
}

// run runs roofline in the env's directory.
func (e *env) run(args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"-no-color"}, args...)...)
	cmd.Dir = e.dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("roofline %v: %v", args, err)
	}
	return result{code, out.String(), errb.String()}
}

// mustRun fails the test unless roofline exits with want.
func (e *env) mustRun(want int, args ...string) result {
	e.t.Helper()
	r := e.run(args...)
	if r.code != want {
		e.t.Fatalf("roofline %s: want exit %d, got %s", strings.Join(args, " "), want, r)
	}
	return r
}

type statusRow struct {
	Name        string  `json:"name"`
	PID         int     `json:"pid"`
	Port        int     `json:"port"`
	BackendPort int     `json:"backend_port"`
	Status      string  `json:"status"`
	Running     bool    `json:"running"`
	Healthy     *bool   `json:"healthy"`
	LogPath     string  `json:"log_path"`
	UptimeSec   float64 `json:"uptime_seconds"`
}

func (e *env) status() map[string]statusRow {
	e.t.Helper()
	r := e.run("status", "-json")
	var rows []statusRow
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		e.t.Fatalf("status -json: %v\n%s", err, r.stdout)
	}
	out := map[string]statusRow{}
	want := 0
	for _, row := range rows {
		out[row.Name] = row
		if !row.Running || (row.Healthy != nil && !*row.Healthy) || row.Status == "failed" {
			want = 2 // status's documented code for a server not healthy
		}
	}
	if r.code != want {
		e.t.Fatalf("status -json: want exit %d for these rows, got %s", want, r)
	}
	return out
}

// cleanup stops whatever the env left running, through roofline and then
// by force for anything roofline lost track of (which is itself a failure).
func (e *env) cleanup() {
	e.run("destroy", "-auto-approve", "-lock-timeout=30s")
	for _, pid := range launchedPids(e.dir) {
		e.t.Errorf("process %d of this test is still running after destroy", pid)
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// launchedPids lists live processes started for the state dir of dir:
// those whose environment carries a roofline launch id and whose command
// line or working directory lies in dir.
func launchedPids(dir string) []int {
	var out []int
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		env, err := os.ReadFile(filepath.Join(p, "environ"))
		if err != nil || !bytes.Contains(env, []byte("ROOFLINE_LAUNCH_ID=")) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join(p, "stat")); err == nil {
			if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
				continue // a zombie is gone already
			}
		}
		cmd, _ := os.ReadFile(filepath.Join(p, "cmdline"))
		cwd, _ := os.Readlink(filepath.Join(p, "cwd"))
		if bytes.Contains(cmd, []byte(dir)) || strings.HasPrefix(cwd, dir) {
			var pid int
			fmt.Sscanf(filepath.Base(p), "%d", &pid)
			out = append(out, pid)
		}
	}
	return out
}

// client sends chat requests in a loop and counts failures.
type client struct {
	mu     sync.Mutex
	ok     int
	failed []string
	stop   chan struct{}
	done   sync.WaitGroup
}

func startClient(t *testing.T, url, model string, workers int) *client {
	c := &client{stop: make(chan struct{})}
	body := fmt.Sprintf(`{"model": %q, "messages": [{"role": "user", "content": "hello there"}], "max_tokens": 8, "stream": true}`, model)
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
					c.failed = append(c.failed, err.Error())
				} else {
					c.ok++
				}
				c.mu.Unlock()
			}
		}()
	}
	return c
}

func (c *client) finish() (ok int, failed []string) {
	close(c.stop)
	c.done.Wait()
	return c.ok, c.failed
}

// planDocument is the whole plan of a plan -json stream: the "plan"
// message, last.
func planDocument(t *testing.T, stream string) []byte {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stream), "\n")
	var msg struct {
		Type string          `json:"type"`
		Plan json.RawMessage `json:"plan"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &msg); err != nil || msg.Type != "plan" {
		t.Fatalf("plan -json: the last message is not the plan (%v):\n%s", err, stream)
	}
	return msg.Plan
}
