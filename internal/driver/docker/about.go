package docker

import (
	"fmt"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/state"
)

// About is what the docker driver tells plan and state's commands
// (driver.About); cli registers it with the driver. It needs no daemon.
type About struct{}

var _ driver.About = About{}

// Runs: an engine block with an image runs in a container.
func (About) Runs(_ *config.Server, e *config.Engine) bool { return e.Image != "" }

// Identity is the container id.
func (About) Identity(i state.Instance) (label, value string) { return "container", i.ID }

// StopHint says whether the container still runs and how to stop it.
// docker stop is the answer even when Read saw it end: a container
// restarted or replaced by hand may run again under the same id or name.
func (About) StopHint(i state.Instance, port int, obs *driver.Observed, err error) string {
	stop := "To stop it: docker stop " + i.ID
	switch {
	case err != nil:
		return fmt.Sprintf("Container %s (port %d) may still run (%v). %s", i.ID, port, err, stop)
	case !obs.Remains():
		return fmt.Sprintf("Container %s does not run as roofline started it (%s); if anything of it still runs: docker stop %s", i.ID, obs.Detail, i.ID)
	}
	return fmt.Sprintf("Still running: container %s on port %d. %s", i.ID, port, stop)
}
