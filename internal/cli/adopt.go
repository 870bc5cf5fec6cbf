package cli

import (
	"context"
	"fmt"

	"github.com/roofline/roofline/internal/state"
)

// adopt finds instances that were started but whose id never reached the
// state (roofline killed between a start and the state write) by the launch
// id apply gave them, and records them. Without it such an instance would
// run untracked, holding its GPUs and port.
func adopt(ctx context.Context, b *backend, st *state.File) (adopted []string, err error) {
	// Each is looked up with its own driver: a container's processes carry
	// the launch id too, and must be found as the container.
	find := func(driverName, id string) *state.Instance {
		if id == "" {
			return nil
		}
		d, err := b.drivers.In(driverName)
		if err != nil {
			return nil
		}
		found, err := d.Find(ctx, id)
		if err != nil || len(found) == 0 {
			return nil
		}
		return &found[0]
	}
	changed := false
	for _, name := range st.Names() {
		s := st.Servers[name]
		if !s.Running() && s.Status != state.StatusFailed {
			if i := find(s.Driver, s.LaunchID); i != nil {
				record(&s.Instance, *i)
				adopted = append(adopted, fmt.Sprintf("server.%s: %s", name, adoptedName(i)))
				changed = true
			}
		}
		if p := s.Proxy; p != nil && !p.Running() {
			if i := find(orProcess(p.Driver), p.LaunchID); i != nil {
				record(p, *i)
				adopted = append(adopted, fmt.Sprintf("server.%s proxy: %s", name, adoptedName(i)))
				changed = true
			}
		}
	}
	if changed {
		err = b.states.Write(st)
	}
	return adopted, err
}

// record takes the found identity into the recorded instance, keeping the
// log path the state chose.
func record(rec *state.Instance, found state.Instance) {
	logPath := rec.LogPath
	*rec = found
	if logPath != "" {
		rec.LogPath = logPath
	}
}

func adoptedName(i *state.Instance) string {
	if i.Driver == state.DriverProcess {
		return fmt.Sprintf("pid %d", i.PID)
	}
	return fmt.Sprintf("container %.12s", i.ID)
}

func orProcess(name string) string {
	if name == "" {
		return state.DriverProcess
	}
	return name
}
