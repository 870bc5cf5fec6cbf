package process

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/state"
)

// About is what the process driver tells plan and state's commands
// (driver.About); cli registers it with the driver.
type About struct{}

var _ driver.About = About{}

// Runs: a process runs an engine installed on the host; an engine block
// with an image runs in a container instead.
func (About) Runs(_ *config.Server, e *config.Engine) bool { return e.Image == "" }

// Identity is the pid and what proves it is still the same process.
func (About) Identity(i state.Instance) (label, value string) {
	if i.PID <= 0 {
		return "pid", ""
	}
	boot := i.BootID
	if boot == "" {
		boot = "none"
	}
	return "pid", fmt.Sprintf("%d (process group %d, start time %d, boot %s)", i.PID, i.Group, i.StartTime, boot)
}

// StopHint says whether the process behind i still runs and how to stop
// it and its workers: by process group, which Start made its own.
func (About) StopHint(i state.Instance, port int, obs *driver.Observed, err error) string {
	pg := i.Group
	if pg <= 0 {
		pg = i.PID
	}
	stop := fmt.Sprintf("To stop it and its workers: kill -TERM -- -%d", pg)
	switch {
	case err != nil:
		return fmt.Sprintf("Pid %d (process group %d, port %d) may still run (%v). %s", i.PID, pg, port, err, stop)
	case !obs.Remains():
		return fmt.Sprintf("Its process (pid %d) is no longer running; there is nothing to stop.", i.PID)
	case !obs.Alive:
		return fmt.Sprintf("Its main process (pid %d) has exited, but processes %s of its session still run (workers holding GPU memory?). To stop them: kill -TERM %s",
			i.PID, joinInts(obs.PIDs, ", "), joinInts(obs.PIDs, " "))
	}
	return fmt.Sprintf("Still running: pid %d (process group %d) on port %d. %s", i.PID, pg, port, stop)
}

func joinInts(xs []int, sep string) string {
	s := make([]string, len(xs))
	for k, x := range xs {
		s[k] = strconv.Itoa(x)
	}
	return strings.Join(s, sep)
}
