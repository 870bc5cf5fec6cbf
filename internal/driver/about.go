package driver

import (
	"fmt"
	"strings"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/state"
)

// About is what a driver tells the rest of roofline beside running
// instances: which servers it runs (plan's choice) and how a person sees
// and stops its instances (state show, state rm). Its package exports one
// and cli registers it with the driver (Set.Register), so that plan, apply
// and views never name a driver. It needs no connection: state show names
// a container on a host without Docker.
type About interface {
	// Runs reports whether the driver runs server s, whose engine block is
	// e. Plan asks the registered drivers in order (Set.Choose); the first
	// that runs it does.
	Runs(s *config.Server, e *config.Engine) bool
	// Identity is the instance's row in state show: a label ("pid",
	// "container") and what identifies it ("" when it records none).
	Identity(i state.Instance) (label, value string)
	// StopHint tells a person whether i, which listens on port, still runs
	// and how to stop it by hand (state rm), from what Read saw of it, or
	// the error Read returned.
	StopHint(i state.Instance, port int, obs *Observed, err error) string
}

// Choose names the driver that runs server s of engine block e: the first
// registered driver whose About runs it. It is plan's choice of a server's
// driver (plan.DriverChooser).
func (s *Set) Choose(srv *config.Server, e *config.Engine) (string, error) {
	for _, n := range s.order {
		if a := s.about[n]; a != nil && a.Runs(srv, e) {
			return n, nil
		}
	}
	return "", fmt.Errorf("no driver of this roofline runs server %q (it has %s)", srv.Name, strings.Join(s.Names(), ", "))
}

// Identity is i's row in state show, as its driver words it.
func (s *Set) Identity(i state.Instance) (label, value string) {
	if a := s.about[i.Driver]; a != nil {
		return a.Identity(i)
	}
	return "id", i.ID
}

// StopHint says whether i still runs and how to stop it by hand, as its
// driver words it; a driver without an About gets a generic sentence.
func (s *Set) StopHint(i state.Instance, port int, obs *Observed, err error) string {
	if a := s.about[i.Driver]; a != nil {
		return a.StopHint(i, port, obs, err)
	}
	what := i.Describe()
	switch {
	case err != nil:
		return fmt.Sprintf("%s (port %d) may still run (%v).", what, port, err)
	case !obs.Remains():
		return fmt.Sprintf("Its instance (%s) is no longer running; there is nothing to stop.", what)
	}
	return fmt.Sprintf("Still running: %s on port %d (driver %s).", what, port, i.Driver)
}
