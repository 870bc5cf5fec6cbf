package driver

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/roofline/roofline/internal/state"
)

// Set is the drivers a roofline binary has, by name. cli fills it, one
// line per driver; plan and apply reach a driver only through it, so a new
// driver touches neither. A Set is a Driver itself: Start routes on
// LaunchSpec.Driver, Read and Stop on Instance.Driver. Find has to be asked
// of one driver (In): the processes of a container carry its launch id too,
// and must be found as the container.
type Set struct {
	m     map[string]Driver
	about map[string]About
	order []string // registration order: Choose asks in it
}

var _ Driver = (*Set)(nil)

// NewSet returns an empty set.
func NewSet() *Set { return &Set{m: map[string]Driver{}, about: map[string]About{}} }

// Register adds d under name, with what its package says About it (nil: a
// driver plan never chooses, described generically), replacing an earlier
// one. Plan chooses among drivers in the order they were registered.
func (s *Set) Register(name string, d Driver, a About) *Set {
	if _, ok := s.m[name]; !ok {
		s.order = append(s.order, name)
	}
	s.m[name] = d
	s.about[name] = a
	return s
}

// Names returns the registered names, sorted.
func (s *Set) Names() []string {
	out := make([]string, 0, len(s.m))
	for n := range s.m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Has reports whether a driver of that name is registered.
func (s *Set) Has(name string) bool { _, ok := s.m[name]; return ok }

// In returns the named driver.
func (s *Set) In(name string) (Driver, error) {
	d, ok := s.m[name]
	if !ok || d == nil { // nil: registered for its About alone (a test's chooser)
		return nil, fmt.Errorf("no driver %q in this roofline (it has %s)", name, strings.Join(s.Names(), ", "))
	}
	return d, nil
}

// Start starts spec with the driver it names.
func (s *Set) Start(ctx context.Context, spec LaunchSpec) (state.Instance, error) {
	d, err := s.In(spec.Driver)
	if err != nil {
		return state.Instance{}, err
	}
	i, err := d.Start(ctx, spec)
	if err == nil && i.Driver == "" {
		i.Driver = spec.Driver
	}
	return i, err
}

// Read reads i with the driver that started it. An instance that records
// nothing started is not alive, whatever its driver.
func (s *Set) Read(ctx context.Context, i state.Instance) (*Observed, error) {
	if !i.Running() {
		return &Observed{Detail: "nothing was started"}, nil
	}
	d, err := s.In(i.Driver)
	if err != nil {
		return nil, err
	}
	return d.Read(ctx, i)
}

// Stop stops i with the driver that started it.
func (s *Set) Stop(ctx context.Context, i state.Instance, grace time.Duration) error {
	if !i.Running() {
		return nil
	}
	d, err := s.In(i.Driver)
	if err != nil {
		return err
	}
	return d.Stop(ctx, i, grace)
}

// Find asks every driver, in name order; use In(name).Find when the driver
// is known (see Set).
func (s *Set) Find(ctx context.Context, launchID string) ([]state.Instance, error) {
	var out []state.Instance
	for _, n := range s.Names() {
		if s.m[n] == nil {
			continue
		}
		is, err := s.m[n].Find(ctx, launchID)
		if err != nil {
			return nil, err
		}
		out = append(out, is...)
	}
	return out, nil
}

// Lazy returns a Driver made by mk on first use, so that a host without,
// say, a Docker daemon never dials it unless a server uses it. mk's error
// is every call's error.
func Lazy(mk func() (Driver, error)) Driver { return &lazy{mk: mk} }

type lazy struct {
	mk   func() (Driver, error)
	once sync.Once
	d    Driver
	err  error
}

func (l *lazy) get() (Driver, error) {
	l.once.Do(func() { l.d, l.err = l.mk() })
	return l.d, l.err
}

func (l *lazy) Start(ctx context.Context, spec LaunchSpec) (state.Instance, error) {
	d, err := l.get()
	if err != nil {
		return state.Instance{}, err
	}
	return d.Start(ctx, spec)
}

func (l *lazy) Read(ctx context.Context, i state.Instance) (*Observed, error) {
	d, err := l.get()
	if err != nil {
		return nil, err
	}
	return d.Read(ctx, i)
}

func (l *lazy) Stop(ctx context.Context, i state.Instance, grace time.Duration) error {
	d, err := l.get()
	if err != nil {
		return err
	}
	return d.Stop(ctx, i, grace)
}

func (l *lazy) Find(ctx context.Context, launchID string) ([]state.Instance, error) {
	d, err := l.get()
	if err != nil {
		return nil, err
	}
	return d.Find(ctx, launchID)
}

// Unwrap returns the driver behind a Lazy one (making it), or d itself.
func Unwrap(d Driver) (Driver, error) {
	if l, ok := d.(*lazy); ok {
		return l.get()
	}
	return d, nil
}

// SyncLog brings the log file of a server that runs in a container up to
// date for a command that reads s.LogPath (logs, diagnose): a docker Read
// copies what the daemon has on the way. A process writes its own log, and
// a server that runs nothing has nothing new, so neither is read.
func (s *Set) SyncLog(ctx context.Context, srv *state.Server) {
	if srv == nil || srv.Driver == state.DriverProcess || !srv.Running() {
		return
	}
	_, _ = s.Read(ctx, srv.Instance)
}
