package process

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/state"
)

// The test binary doubles as the engine (the go-task sleepit pattern): with
// helperEnv set it runs one of the behaviours below instead of the tests.
const helperEnv = "ROOFLINE_DRIVER_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helper(mode))
	}
	os.Exit(m.Run())
}

func helper(mode string) int {
	switch mode {
	case "sleep":
		fmt.Println("ready")
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
	case "spawn", "spawn-newgroup":
		// An engine that forks a worker, as vLLM and SGLang do. The worker
		// ignores SIGTERM so only the final SIGKILL of Stop can end it.
		self, _ := os.Executable()
		child := exec.Command(self)
		child.Env = append(os.Environ(), helperEnv+"=ignore-term")
		if mode == "spawn-newgroup" {
			child.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		}
		child.Stdout = os.Stdout
		if err := child.Start(); err != nil {
			fmt.Println("spawn failed:", err)
			return 1
		}
		fmt.Printf("child %d\n", child.Process.Pid)
	case "escape":
		// An engine whose child leaves the session (setsid) and ignores
		// SIGTERM: only the launch id in its environment ties it to us.
		self, _ := os.Executable()
		child := exec.Command(self)
		child.Env = append(os.Environ(), helperEnv+"=ignore-term")
		child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		child.Stdout = os.Stdout
		if err := child.Start(); err != nil {
			fmt.Println("spawn failed:", err)
			return 1
		}
		fmt.Printf("child %d\n", child.Process.Pid)
	case "exit3":
		fmt.Println("failing")
		return 3
	case "env":
		env := os.Environ()
		sort.Strings(env)
		fmt.Println(strings.Join(env, "\n"))
		return 0
	case "fds":
		// What a started engine inherits: the targets of its descriptors.
		entries, _ := os.ReadDir("/proc/self/fd")
		for _, e := range entries {
			target, _ := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
			fmt.Printf("fd %s %s\n", e.Name(), target)
		}
		return 0
	case "launch":
		// A whole roofline in one: start a sleeper, print its handle, exit.
		h, err := New().Start(context.Background(), driver.LaunchSpec{
			Name: "adopted", Argv: []string{os.Args[0]}, LogPath: os.Getenv("HELPER_LOG"),
			Env: map[string]string{helperEnv: "sleep"},
		})
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		b, _ := json.Marshal(h)
		fmt.Println(string(b))
		return 0
	default:
		fmt.Println("unknown helper mode", mode)
		return 2
	}
	for {
		time.Sleep(time.Hour)
	}
}

// helperSpec is a spec that runs the test binary in mode.
func helperSpec(t testing.TB, name, mode string) driver.LaunchSpec {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return driver.LaunchSpec{
		Name:    name,
		Argv:    []string{self, "-test.run=^$"},
		Env:     map[string]string{helperEnv: mode},
		LogPath: filepath.Join(t.TempDir(), name+".log"),
	}
}

// eventWithin bounds the wait for a helper process to start, log or exit
// (milliseconds on a quiet machine). It is generous because CI runs these
// beside every other package on two cores; a real hang still fails.
const eventWithin = time.Minute

// waitLog polls the log at path until it contains want.
func waitLog(t *testing.T, path, want string) string {
	t.Helper()
	deadline := time.Now().Add(eventWithin)
	for {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), want) {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("log %s never contained %q; it holds:\n%s", path, want, b)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// gone reports whether pid has exited (a zombie counts as exited).
func gone(pid int) bool {
	st, err := liveProc.stat(pid)
	return err != nil || st.State == 'Z'
}

// stopAll makes sure nothing a test started outlives it.
func stopAll(t *testing.T, d *Driver, h state.Instance) {
	t.Cleanup(func() { _ = d.Stop(context.Background(), h, 0) })
}
