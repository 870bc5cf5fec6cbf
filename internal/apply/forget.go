package apply

import (
	"context"

	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/state"
)

// Seen is what is left of a forgotten instance's process.
type Seen struct {
	Err            error // it could not be read
	Remains, Alive bool
	PIDs           []int // what is left of its session
}

// Forgotten is a server state rm forgot and what still runs of it.
type Forgotten struct {
	Server *state.Server
	// Main is its process, Proxy its front proxy's; Deposed its previous
	// instance's, kept during a rollout (nil: none).
	Main, Proxy, Deposed *Seen
}

// Forget removes the servers at addrs from st without stopping anything
// (roofline state rm; the caller writes st) and reads, through procs (the
// process driver), what still runs of each: its processes (a container is
// left to docker), its proxy, its previous instance. An unknown address
// removes nothing.
func Forget(ctx context.Context, procs driver.Driver, st *state.File, addrs []string) ([]Forgotten, error) {
	servers, err := st.Lookup(addrs)
	if err != nil {
		return nil, err
	}
	var out []Forgotten
	for _, s := range st.RemoveServers(servers) {
		f := Forgotten{Server: s, Main: seenOf(ctx, procs, s)}
		if s.Proxy != nil && s.Proxy.PID > 0 {
			f.Proxy = readSeen(ctx, procs, *s.Proxy)
		}
		if s.Deposed != nil {
			f.Deposed = seenOf(ctx, procs, s.Deposed)
		}
		out = append(out, f)
	}
	return out, nil
}

func seenOf(ctx context.Context, procs driver.Driver, s *state.Server) *Seen {
	if (s.Driver == state.DriverDocker && s.ID != "") || s.PID <= 0 {
		return nil
	}
	return readSeen(ctx, procs, s.Instance)
}

func readSeen(ctx context.Context, procs driver.Driver, h state.Instance) *Seen {
	obs, err := procs.Read(ctx, h)
	if err != nil {
		return &Seen{Err: err}
	}
	return &Seen{Remains: obs.Remains(), Alive: obs.Alive, PIDs: obs.PIDs}
}
