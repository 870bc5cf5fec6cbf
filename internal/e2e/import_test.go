package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const importServer = `
server "qwen3" {
  engine        = engine.vllm
  model         = model.qwen
  gpus          = [0]
  port          = @PORT_I@
  max_model_len = 8192
}
`

// engineLaunch is what roofline would run for the configuration's only
// server: its argv after the command, and its environment.
func engineLaunch(t *testing.T, e *env) (args []string, envv map[string]string) {
	t.Helper()
	r := e.mustRun(0, "plan", "-json")
	var p struct {
		ResourceChanges []struct {
			After struct {
				Argv       []string          `json:"argv"`
				CommandLen int               `json:"command_len"`
				Env        map[string]string `json:"env"`
			} `json:"after"`
		} `json:"resource_changes"`
	}
	if err := json.Unmarshal(planDocument(t, r.stdout), &p); err != nil || len(p.ResourceChanges) != 1 {
		t.Fatalf("plan -json: %v\n%s", err, r)
	}
	a := p.ResourceChanges[0].After
	return a.Argv[a.CommandLen:], a.Env
}

// startByHand starts the rehearsal engine as a person would. In a shell
// (shell = true) it shares the shell's process group; otherwise it leads a
// session of its own (setsid). It returns the engine's pid.
func startByHand(t *testing.T, args []string, envv map[string]string, port int, shell bool) int {
	t.Helper()
	argv := append([]string{bin, "rehearsal", "vllm@0.16.0"}, args...)
	var cmd *exec.Cmd
	if shell {
		cmd = exec.Command("sh", append([]string{"-c", `"$@" & echo $!; wait`, "sh"}, argv...)...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	} else {
		cmd = exec.Command(argv[0], argv[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	cmd.Env = os.Environ()
	for k, v := range envv {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	pid := cmd.Process.Pid
	if shell {
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			t.Fatalf("reading the pid from the shell: %v", err)
		}
		pid, _ = strconv.Atoi(strings.TrimSpace(line))
	} else {
		go func() { _, _ = bufio.NewReader(out).WriteTo(io_discard{}) }()
	}
	deadline := time.Now().Add(2 * time.Minute) // seconds, but CI's two cores are shared
	for time.Now().Before(deadline) {
		if resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/health", port)); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return pid
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the hand-started engine (pid %d) never became healthy", pid)
	return 0
}

type io_discard struct{}

func (io_discard) Write(p []byte) (int, error) { return len(p), nil }

// TestImportHandStarted: a rehearsal engine started by hand in a shell is
// imported by port; the next plan is empty and the pid unchanged; roofline
// refuses to stop it, since it shares its shell's process group.
func TestImportHandStarted(t *testing.T) {
	e := newEnv(t, base+importServer)
	args, envv := engineLaunch(t, e)
	port := e.ports["@PORT_I@"]
	pid := startByHand(t, args, envv, port, true)

	// Without import, the port is taken by a foreign process.
	if r := e.run("plan"); r.code != 1 || !strings.Contains(r.stderr+r.stdout, "Port in use") {
		t.Fatalf("plan before the import:\n%s", r)
	}
	// An import block shows it in the plan.
	e.write(base + importServer + fmt.Sprintf("\nimport {\n  to = server.qwen3\n  id = \"port:%d\"\n}\n", port))
	r := e.mustRun(2, "plan", "-detailed-exitcode")
	if !strings.Contains(r.stdout, fmt.Sprintf("# server.qwen3 will be imported (pid %d, up ", pid)) || !strings.Contains(r.stdout, "Plan: 1 to import, 0 to add, 0 to change, 0 to destroy.") {
		t.Fatalf("plan with an import block:\n%s", r)
	}
	e.write(base + importServer)
	r = e.mustRun(0, "import", "server.qwen3", fmt.Sprintf("port:%d", port))
	if !strings.Contains(r.stdout, "Import successful!") || !strings.Contains(r.stdout, "the next plan has no changes") || !strings.Contains(r.stdout, "shares its process group") {
		t.Fatalf("import:\n%s", r)
	}
	e.mustRun(0, "plan", "-detailed-exitcode")
	st := e.status()
	if st["qwen3"].PID != pid || !st["qwen3"].Running {
		t.Fatalf("status after import: %+v (hand pid %d)", st["qwen3"], pid)
	}
	// A change that needs a restart: the stop is refused, and says why.
	e.write(strings.Replace(base+importServer, "8192", "4096", 1))
	r = e.run("apply", "-auto-approve")
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr, "group") {
		t.Errorf("apply of a restart of a process sharing its shell's group must be refused:\n%s", r)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Errorf("the imported process was stopped: %v", err)
	}
}

// TestImportGenerateConfig: -generate-config-out writes a block for a
// process roofline does not know; it validates, and after the import the
// plan is empty; a process with its own session is stopped by destroy.
func TestImportGenerateConfig(t *testing.T) {
	e := newEnv(t, base+importServer)
	args, envv := engineLaunch(t, e)
	port := e.ports["@PORT_I@"]
	pid := startByHand(t, args, envv, port, false)
	e.write(base)
	id := fmt.Sprintf("port:%d", port)
	r := e.mustRun(0, "import", "-generate-config-out=generated.hcl", "server.qwen3", id)
	if !strings.Contains(r.stdout, "Wrote server.qwen3") {
		t.Fatalf("generate:\n%s", r)
	}
	gen, err := os.ReadFile(filepath.Join(e.dir, "generated.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(string(gen)), " ")
	for _, want := range []string{`server "qwen3"`, "engine = engine.vllm", "model = model.qwen", fmt.Sprintf("port = %d", port), "max_model_len = 8192", "gpus = [0]"} {
		if !strings.Contains(flat, want) {
			t.Errorf("generated block lacks %q:\n%s", want, gen)
		}
	}
	e.mustRun(0, "validate")
	if r := e.run("import", "-generate-config-out=generated.hcl", "server.qwen3", id); r.code != 1 {
		t.Errorf("an existing file must not be overwritten:\n%s", r)
	}
	e.mustRun(0, "import", "server.qwen3", id)
	e.mustRun(0, "plan", "-detailed-exitcode")
	if st := e.status(); st["qwen3"].PID != pid {
		t.Fatalf("status after import: %+v", st)
	}
	e.mustRun(0, "destroy", "-auto-approve")
	// Stopped: gone, or a zombie until this test (its parent) reaps it.
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !strings.Contains(string(b), ") Z ") {
		t.Errorf("destroy left the imported process %d running", pid)
	}
}
