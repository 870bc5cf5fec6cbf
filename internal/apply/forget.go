package apply

import (
	"context"

	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/state"
)

// Seen is what is left of a forgotten instance, as its driver read it.
type Seen struct {
	Err            error // it could not be read
	Remains, Alive bool
	PIDs           []int // what is left of its session
	// Hint is its driver's sentence for a person: whether it still runs
	// and how to stop it by hand.
	Hint string
}

// Forgotten is a server state rm forgot and what still runs of it.
type Forgotten struct {
	Server *state.Server
	// Main is its instance, Proxy its front proxy's; Deposed its previous
	// instance's, kept during a rollout (nil: none recorded).
	Main, Proxy, Deposed *Seen
}

// Reader reads an instance through the driver that started it and words
// what it saw for a person (driver.Set).
type Reader interface {
	Read(ctx context.Context, i state.Instance) (*driver.Observed, error)
	StopHint(i state.Instance, port int, obs *driver.Observed, err error) string
}

// Forget removes the servers at addrs from st without stopping anything
// (roofline state rm; the caller writes st) and reads, through each
// instance's own driver, what still runs of each: its engine, its proxy,
// its previous instance. An unknown address removes nothing.
func Forget(ctx context.Context, drivers Reader, st *state.File, addrs []string) ([]Forgotten, error) {
	servers, err := st.Lookup(addrs)
	if err != nil {
		return nil, err
	}
	var out []Forgotten
	for _, s := range st.RemoveServers(servers) {
		f := Forgotten{Server: s, Main: seenOf(ctx, drivers, s)}
		if s.Proxy.Running() {
			f.Proxy = readSeen(ctx, drivers, *s.Proxy, s.Port)
		}
		if s.Deposed != nil {
			f.Deposed = seenOf(ctx, drivers, s.Deposed)
		}
		out = append(out, f)
	}
	return out, nil
}

// seenOf reads a server's engine, which listens on the backend port when a
// proxy fronts it.
func seenOf(ctx context.Context, drivers Reader, s *state.Server) *Seen {
	if !s.Running() {
		return nil
	}
	port := s.Port
	if s.BackendPort > 0 {
		port = s.BackendPort
	}
	return readSeen(ctx, drivers, s.Instance, port)
}

func readSeen(ctx context.Context, drivers Reader, i state.Instance, port int) *Seen {
	obs, err := drivers.Read(ctx, i)
	if err != nil {
		return &Seen{Err: err, Hint: drivers.StopHint(i, port, nil, err)}
	}
	return &Seen{Remains: obs.Remains(), Alive: obs.Alive, PIDs: obs.PIDs, Hint: drivers.StopHint(i, port, obs, nil)}
}
