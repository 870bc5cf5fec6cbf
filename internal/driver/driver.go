// Package driver starts, observes and stops engine processes. It knows
// processes, not engine flags: the engine layer renders the command line and
// the driver runs it. Implementations: process (a local process group), fake
// (in memory, for plan and apply tests); docker later.
//
// The contract mirrors Terraform's provider lifecycle: Read is refresh,
// Start and Stop are apply. A Handle is what the state records of a started
// server, so that a later roofline (after a restart, or on the next plan)
// can find the same process again and prove it is the same one.
package driver

import (
	"context"
	"os"
	"slices"
	"sort"
	"time"

	"github.com/roofline/roofline/internal/state"
)

// Driver runs engine processes.
type Driver interface {
	// Start launches spec and returns as soon as the process exists, without
	// waiting for it to load or listen: the caller records the Handle in the
	// state before waiting on anything. The process outlives roofline.
	Start(ctx context.Context, spec LaunchSpec) (*Handle, error)
	// Read observes the process behind h. It returns nil, nil when nothing
	// of it remains (exited, rebooted since, or the pid now belongs to
	// another process). An error means it could not look.
	Read(ctx context.Context, h *Handle) (*Observed, error)
	// Stop asks the process and everything it started to exit (SIGTERM),
	// waits up to grace, then kills what is left (SIGKILL). Stopping what is
	// already gone is not an error.
	Stop(ctx context.Context, h *Handle, grace time.Duration) error
}

// LaunchSpec is one process to start.
type LaunchSpec struct {
	Name string   // the server's name, for messages
	Argv []string // Argv[0] is a path or a name looked up in the PATH of the child's environment
	// Env is set on top of the base environment (see BuildEnv); it wins
	// over a base variable of the same name.
	Env map[string]string
	// Dir is the working directory; "" means roofline's.
	Dir string
	// LogPath receives the process's stdout and stderr. The process writes
	// it directly, so roofline may exit while it runs.
	LogPath string
}

// Handle identifies a started process for as long as it lives. Its fields
// map one to one onto state.Server (HandleOf, Record).
type Handle struct {
	PID       int
	PGID      int    // the process group (and session) the driver created for it
	StartTime uint64 // clock ticks after boot, /proc/<pid>/stat field 22
	BootID    string // /proc/sys/kernel/random/boot_id when it started
	Cmdline   []string
	LogPath   string
	// LaunchID is the value of LaunchEnv the engine was started with: Stop
	// also finds by it the processes that left the engine's session.
	LaunchID string `json:",omitempty"`
}

// LaunchEnv is the variable that carries a launch id to every engine (the
// same name as apply.LaunchEnv).
const LaunchEnv = "ROOFLINE_LAUNCH_ID"

// Observed is what Read saw.
type Observed struct {
	// Alive is true while the process that Start launched runs. It can be
	// false with PIDs not empty: the main process died and left workers
	// behind (they may still hold GPU memory; Stop ends them).
	Alive bool
	PID   int
	// Cmdline is the live command line. CmdlineChanged is true when it no
	// longer matches the recorded one; identity rests on pid, start time and
	// boot id, because engines may rename their processes (setproctitle).
	Cmdline        []string
	CmdlineChanged bool
	RSSBytes       uint64 // resident memory of the main process
	// PIDs are the live processes of its session (main process first, when
	// alive): engine workers included. Plan matches them against the GPU
	// processes NVML reports.
	PIDs []int
}

// HandleOf returns the handle recorded in s, nil when s records no process.
func HandleOf(s *state.Server) *Handle {
	if s == nil || s.PID <= 0 {
		return nil
	}
	return &Handle{
		PID: s.PID, PGID: s.Group, StartTime: s.StartTime, BootID: s.BootID,
		Cmdline: slices.Clone(s.Cmdline), LogPath: s.LogPath, LaunchID: s.LaunchID,
	}
}

// Record writes h into s.
func (h *Handle) Record(s *state.Server) {
	s.Driver, s.ID = state.DriverProcess, state.ProcessID(h.PID)
	s.PID, s.Group, s.StartTime, s.BootID = h.PID, h.PGID, h.StartTime, h.BootID
	s.Cmdline = slices.Clone(h.Cmdline)
	s.LogPath = h.LogPath
}

// BaseEnvKeys are the variables a started process inherits from roofline's
// environment. Everything else comes from LaunchSpec.Env, that is from the
// configuration: an engine must not behave differently because of the shell
// apply was run from (a stray CUDA_VISIBLE_DEVICES, a proxy, a
// PYTHONPATH). What the engine needs beyond these (LD_LIBRARY_PATH,
// CUDA_HOME, HF_HOME) is declared in the engine's env, where plan shows it.
var BaseEnvKeys = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR"}

// DefaultPath is PATH when roofline's environment has none.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

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
