package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/roofline/roofline/internal/fsx"
	"github.com/roofline/roofline/internal/state"
)

// ReadToken reads the bearer token of the agent's endpoint: a file's first
// line, else $ROOFLINE_AGENT_TOKEN (getenv). Never a flag value: argv is
// visible to every user.
func ReadToken(file string, getenv func(string) string) (string, error) {
	if file != "" {
		b, err := fsx.ReadFile(file, 64<<10)
		if err != nil {
			return "", fmt.Errorf("reading the token: %w", err)
		}
		tok, _, _ := strings.Cut(string(b), "\n")
		tok = strings.TrimSpace(tok)
		if tok == "" {
			return "", fmt.Errorf("the token file %s is empty", file)
		}
		return tok, nil
	}
	return strings.TrimSpace(getenv("ROOFLINE_AGENT_TOKEN")), nil
}

// Lock makes sure one agent runs per state directory: an flock on
// agent/agent.lock, released by the kernel when the agent dies, so that a
// new agent can take over from a killed one. The file names the holder's
// pid. release unlocks.
func Lock(stateDir string) (release func(), err error) {
	dir := filepath.Join(stateDir, "agent")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "agent.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(path)
		f.Close()
		holder := strings.TrimSpace(string(b))
		if holder == "" {
			holder = "unknown"
		}
		return nil, fmt.Errorf("another roofline agent runs for %s (pid %s); one agent per state directory", stateDir, holder)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return func() { f.Close() }, nil
}

// HostBootID reads the kernel's boot id.
func HostBootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// KeptInstances are the servers of st that keep a previous instance for
// rollback (keep_previous).
func KeptInstances(st *state.File) []string {
	var out []string
	for _, name := range st.Names() {
		if s := st.Servers[name]; s.Deposed != nil && s.Deposed.Status == state.StatusKept {
			out = append(out, name)
		}
	}
	return out
}

// WindowsEnded are those of kept whose rollback window ended at now:
// keepFor is the server's keep_previous in the configuration, false when
// the configuration no longer declares it (its window ends too).
func WindowsEnded(st *state.File, kept []string, keepFor func(name string) (time.Duration, bool), now time.Time) []string {
	var out []string
	for _, name := range kept {
		keep, declared := keepFor(name)
		if !declared || now.After(st.Servers[name].WindowStart().Add(keep)) {
			out = append(out, name)
		}
	}
	return out
}
