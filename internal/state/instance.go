package state

import (
	"fmt"
	"slices"
	"strconv"
)

// Instance identifies one thing a driver started and still runs: an engine
// server, its front proxy, or the deposed old instance of a rollout. It is
// the one shape of identity in roofline: drivers return it from Start and
// take it in Read, Stop and Find; the state records it verbatim.
//
// A pid alone is not an identity (pids are reused): a process is the same
// one only while PID, StartTime and BootID all match.
type Instance struct {
	// Driver names the driver that started it ("process", "docker", ...).
	// A server keeps its driver while it runs nothing (failed).
	Driver string `json:"driver"`
	// ID is the driver's own name for it: the main pid in decimal
	// (process), the container id (docker), the object uid (kubernetes).
	// Empty while nothing runs.
	ID string `json:"id,omitempty"`
	// Name is the driver's other name for it, when it has one (a
	// container's name), so that Read can tell what took it over.
	Name string `json:"name,omitempty"`
	// PID is the host pid of the main process when the driver knows it
	// (a container's init process); Group is its process group (process
	// driver), whose members Stop ends.
	PID       int    `json:"pid,omitempty"`
	Group     int    `json:"group,omitempty"`
	StartTime uint64 `json:"start_time,omitempty"` // clock ticks after boot, /proc/<pid>/stat field 22
	BootID    string `json:"boot_id,omitempty"`    // /proc/sys/kernel/random/boot_id when it started
	// Cmdline is the live command line read right after the start; it
	// differs from the rendered argv when argv[0] is a script.
	Cmdline []string `json:"cmdline,omitempty"`
	// LaunchID is recorded before the start and handed to what starts (an
	// environment variable, a label), so that an instance whose ID never
	// reached the state (roofline killed in between) is still found.
	LaunchID string `json:"launch_id,omitempty"`
	LogPath  string `json:"log_path,omitempty"`
}

// Running reports whether the instance records something started: an id
// (or, from an older state, a pid).
func (i *Instance) Running() bool { return i != nil && (i.ID != "" || i.PID != 0) }

// Forget clears what identifies a started instance and keeps the driver,
// the launch id and the log path: the record of something that no longer
// runs.
func (i *Instance) Forget() {
	i.ID, i.Name, i.PID, i.Group, i.StartTime, i.BootID, i.Cmdline = "", "", 0, 0, 0, "", nil
}

// Clone returns a deep copy.
func (i Instance) Clone() Instance {
	i.Cmdline = slices.Clone(i.Cmdline)
	return i
}

// ProcessID is the ID the process driver records for pid.
func ProcessID(pid int) string {
	if pid <= 0 {
		return ""
	}
	return strconv.Itoa(pid)
}

// Describe names the instance in messages: "pid 42" (a process),
// "docker 0123456789ab" (the driver and the short id otherwise).
func (i *Instance) Describe() string {
	switch {
	case i == nil || !i.Running():
		return "nothing running"
	case i.ID == ProcessID(i.PID):
		return fmt.Sprintf("pid %d", i.PID)
	}
	return fmt.Sprintf("%s %.12s", i.Driver, i.ID)
}

func validateInstance(i *Instance, where string) error {
	switch {
	case i.PID < 0 || i.Group < 0:
		return fmt.Errorf("%s: pid and group cannot be negative", where)
	case i.Running() && i.Driver == "":
		return fmt.Errorf("%s: a running instance has no driver", where)
	case i.Driver == DriverProcess && i.ID != ProcessID(i.PID):
		return fmt.Errorf("%s: id %q and pid %d disagree; a process's id is its pid", where, i.ID, i.PID)
	}
	return nil
}
