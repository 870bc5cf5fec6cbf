// Package driver is the one contract between roofline and what runs its
// engines. It knows instances, not engine flags: the engine layer renders
// the command line and a driver runs it. Implementations: process (a local
// process group), docker (a container); a Set routes between them by name.
//
// The contract mirrors Terraform's provider lifecycle: Read is refresh,
// Start and Stop are apply. A state.Instance is what the state records of a
// started server, so that a later roofline (after a restart, or on the next
// plan) can find the same instance again and prove it is the same one.
package driver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/roofline/roofline/internal/state"
)

// Driver runs engine instances: local processes, containers, later pods.
// Every implementation passes drivertest.TestDriver.
type Driver interface {
	// Start launches spec and returns as soon as it exists, without waiting
	// for it to load or listen: the caller records the Instance in the state
	// before waiting on anything. What it starts outlives roofline, and
	// carries spec.LaunchID so that Find sees it even when the Instance
	// never reached the state.
	Start(ctx context.Context, spec LaunchSpec) (state.Instance, error)
	// Read observes the instance. It returns an Observed (never nil without
	// an error); Alive false means nothing of the started run serves any
	// more (exited, rebooted since, its pid now another process's, removed
	// by hand), with Detail saying which. An error means it could not look.
	Read(ctx context.Context, i state.Instance) (*Observed, error)
	// Stop asks the instance and everything it started to exit (SIGTERM),
	// waits up to grace, then kills what is left (SIGKILL). Stopping what is
	// already gone, or an instance that records nothing started, is not an
	// error.
	Stop(ctx context.Context, i state.Instance, grace time.Duration) error
	// Find returns the instances (newest first) whose LaunchSpec carried
	// launchID, running or with something left to stop.
	Find(ctx context.Context, launchID string) ([]state.Instance, error)
}

// LaunchEnv names the variable that carries the launch id into what a
// driver starts (containers also carry it as a label).
const LaunchEnv = "ROOFLINE_LAUNCH_ID"

// LaunchSpec is one instance to start.
type LaunchSpec struct {
	// Driver names the driver that starts it (Set routes on it).
	Driver string
	Name   string   // the server's name ("NAME-proxy" for its proxy), for messages and names
	Argv   []string // Argv[0] is a path or a name looked up in the PATH of the child's environment
	// Env is set on top of the base environment (see BuildEnv); it wins
	// over a base variable of the same name.
	Env map[string]string
	// Dir is the working directory; "" means roofline's. It is also the
	// state directory, which container drivers label their containers with.
	Dir string
	// LogPath receives the instance's stdout and stderr.
	LogPath string
	// LaunchID is recorded in the state before the start; the driver hands
	// it to what it starts (LaunchEnv, a label) for Find.
	LaunchID string
	// StateLogs are the log files the state names, of every instance. When
	// not nil, a process start also removes the older logs set aside for
	// engines that have since stopped (LOG.N, N ≥ 2) unless a process
	// holds one or StateLogs names it.
	StateLogs []string

	// For container drivers: the image, the GPUs, the model folder to
	// mount read-only at the same path, and what ties the container to
	// the state (its lineage, the planner's hash of the server).
	Image      string
	GPUs       []int
	ModelPath  string
	Lineage    string
	ConfigHash string
}

// EnvWithLaunchID returns spec.Env with LaunchEnv set to spec.LaunchID
// (when there is one), without changing spec.Env.
func (spec LaunchSpec) EnvWithLaunchID() map[string]string {
	if spec.LaunchID == "" {
		return spec.Env
	}
	env := make(map[string]string, len(spec.Env)+1)
	for k, v := range spec.Env {
		env[k] = v
	}
	env[LaunchEnv] = spec.LaunchID
	return env
}

// Observed is what Read saw.
type Observed struct {
	// Alive is true while what Start launched runs. It can be false with
	// PIDs not empty: the main process died and left workers behind (they
	// may still hold GPU memory; Stop ends them).
	Alive bool
	// Detail says what became of it when it is not alive: "pid 42 is no
	// longer running", "container 0a1b exited with status 137 (...)".
	Detail string
	PID    int
	// Cmdline is the live command line. CmdlineChanged is true when it no
	// longer matches the recorded one; identity rests on pid, start time and
	// boot id, because engines may rename their processes (setproctitle).
	Cmdline        []string
	CmdlineChanged bool
	RSSBytes       uint64 // resident memory of the main process
	// PIDs are the live host processes of the instance (main process
	// first, when alive): engine workers included. Plan matches them
	// against the GPU processes NVML reports.
	PIDs []int
}

// Remains reports whether anything of the instance still runs: it is alive
// or left workers that Stop would end.
func (o *Observed) Remains() bool { return o != nil && (o.Alive || len(o.PIDs) > 0) }

// BaseEnvKeys are the variables a started process inherits from roofline's
// environment. Everything else comes from LaunchSpec.Env, that is from the
// configuration: an engine must not behave differently because of the shell
// apply was run from (a stray CUDA_VISIBLE_DEVICES, a proxy, a
// PYTHONPATH). What the engine needs beyond these (LD_LIBRARY_PATH,
// CUDA_HOME, HF_HOME) is declared in the engine's env, where plan shows it.
var BaseEnvKeys = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR"}

// DefaultPath is PATH when roofline's environment has none.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// BuildEnvList is BuildEnv of env given as KEY=VALUE entries (an engine
// probe's).
func BuildEnvList(env []string, lookup func(string) (string, bool)) []string {
	vars := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	return BuildEnv(vars, lookup)
}

// BuildEnv returns the environment of a started process: BaseEnvKeys from
// lookup (os.LookupEnv when nil), then env on top, sorted by name.
func BuildEnv(env map[string]string, lookup func(string) (string, bool)) []string {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	vars := map[string]string{}
	for _, k := range BaseEnvKeys {
		if v, ok := lookup(k); ok {
			vars[k] = v
		}
	}
	if vars["PATH"] == "" {
		vars["PATH"] = DefaultPath
	}
	for k, v := range env {
		vars[k] = v
	}
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// NewLaunchID is a fresh launch id for a LaunchSpec: what Find looks
// instances up by.
func NewLaunchID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
