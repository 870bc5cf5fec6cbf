package cli

import (
	"context"
	"fmt"

	"github.com/roofline/roofline/internal/apply"
	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/driver/docker"
	"github.com/roofline/roofline/internal/driver/process"
	"github.com/roofline/roofline/internal/state"
)

// adopt finds processes that were started but whose pid never reached the
// state (roofline killed between a start and the state write) by the launch
// id apply put in their environment, and records them. Without it such a
// process would run untracked, holding its GPUs and port.
func adopt(ctx context.Context, b *backend, st *state.File) (adopted []string, err error) {
	d := process.New()
	find := func(id string) *driver.Handle {
		if id == "" {
			return nil
		}
		hs, err := d.FindByEnv(ctx, apply.LaunchEnv, id)
		if err != nil || len(hs) == 0 {
			return nil
		}
		return hs[0]
	}
	changed := false
	for _, name := range st.Names() {
		s := st.Servers[name]
		if !s.Running() && s.Status != state.StatusFailed {
			// A container's processes carry the launch id too: find it as
			// the container, never as a bare process.
			if s.Driver == state.DriverDocker {
				if what := adoptContainer(ctx, s); what != "" {
					adopted = append(adopted, what)
					changed = true
				}
			} else if h := find(s.LaunchID); h != nil {
				h.Record(s)
				if s.LogPath == "" {
					s.LogPath = h.LogPath
				}
				adopted = append(adopted, fmt.Sprintf("server.%s: pid %d", name, h.PID))
				changed = true
			}
		}
		if p := s.Proxy; p != nil && p.PID == 0 {
			if h := find(p.LaunchID); h != nil {
				p.Driver, p.ID = state.DriverProcess, state.ProcessID(h.PID)
				p.PID, p.Group, p.StartTime, p.BootID, p.Cmdline = h.PID, h.PGID, h.StartTime, h.BootID, h.Cmdline
				adopted = append(adopted, fmt.Sprintf("server.%s proxy: pid %d", name, h.PID))
				changed = true
			}
		}
	}
	if changed {
		err = b.states.Write(st)
	}
	return adopted, err
}

// adoptContainer finds the container of a docker server whose id never
// reached the state by the launch id label apply gave it, and records it.
// Refresh then sees it as any other: running, exited or restarted by hand.
func adoptContainer(ctx context.Context, s *state.Server) string {
	if s.LaunchID == "" {
		return ""
	}
	d, err := dockerDriver()
	if err != nil {
		return ""
	}
	cs, err := d.FindByLaunchID(ctx, s.LaunchID)
	if err != nil || len(cs) == 0 {
		return ""
	}
	p := docker.ProcessOf(cs[0], s.LogPath)
	s.Driver, s.ID, s.PID, s.StartTime, s.Cmdline = p.Driver, p.ID, p.PID, p.StartTime, p.Cmdline
	return fmt.Sprintf("server.%s: container %.12s", s.Name, p.ID)
}
