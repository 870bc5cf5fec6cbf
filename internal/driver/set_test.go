package driver_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/state"
)

// named answers every call with its name, so a test sees who was asked.
type named struct {
	name  string
	calls *[]string
}

func (n named) Start(ctx context.Context, spec driver.LaunchSpec) (state.Instance, error) {
	*n.calls = append(*n.calls, n.name+" start "+spec.Name)
	return state.Instance{ID: n.name + "-1", LaunchID: spec.LaunchID}, nil
}

func (n named) Read(ctx context.Context, i state.Instance) (*driver.Observed, error) {
	*n.calls = append(*n.calls, n.name+" read "+i.ID)
	return &driver.Observed{Alive: true}, nil
}

func (n named) Stop(ctx context.Context, i state.Instance, grace time.Duration) error {
	*n.calls = append(*n.calls, n.name+" stop "+i.ID)
	return nil
}

func (n named) Find(ctx context.Context, launchID string) ([]state.Instance, error) {
	*n.calls = append(*n.calls, n.name+" find "+launchID)
	return []state.Instance{{Driver: n.name, ID: n.name + "-found"}}, nil
}

func TestSetRoutes(t *testing.T) {
	var calls []string
	s := driver.NewSet().Register("a", named{"a", &calls}, nil).Register("b", named{"b", &calls}, nil)
	ctx := context.Background()
	i, err := s.Start(ctx, driver.LaunchSpec{Driver: "b", Name: "x"})
	if err != nil || i.Driver != "b" || i.ID != "b-1" {
		t.Fatalf("Start = %+v, %v; want b's instance with its driver filled in", i, err)
	}
	if _, err := s.Read(ctx, i); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(ctx, state.Instance{Driver: "a", ID: "a-9"}, time.Second); err != nil {
		t.Fatal(err)
	}
	// Nothing recorded: nobody is asked.
	if obs, err := s.Read(ctx, state.Instance{Driver: "a"}); err != nil || obs.Alive || obs.Detail == "" {
		t.Fatalf("Read of an instance that records nothing = %+v, %v", obs, err)
	}
	if err := s.Stop(ctx, state.Instance{Driver: "a"}, time.Second); err != nil {
		t.Fatal(err)
	}
	d, err := s.In("a")
	if err != nil {
		t.Fatal(err)
	}
	if found, _ := d.Find(ctx, "L"); len(found) != 1 || found[0].ID != "a-found" {
		t.Fatalf("In(a).Find = %+v", found)
	}
	want := []string{"b start x", "b read b-1", "a stop a-9", "a find L"}
	if strings.Join(calls, "|") != strings.Join(want, "|") {
		t.Fatalf("calls %q; want %q", calls, want)
	}
	for _, call := range []func() error{
		func() error { _, err := s.Start(ctx, driver.LaunchSpec{Driver: "k8s"}); return err },
		func() error { _, err := s.Read(ctx, state.Instance{Driver: "k8s", ID: "u"}); return err },
		func() error { return s.Stop(ctx, state.Instance{Driver: "k8s", ID: "u"}, 0) },
	} {
		if err := call(); err == nil || !strings.Contains(err.Error(), `no driver "k8s" in this roofline (it has a, b)`) {
			t.Errorf("unknown driver: %v", err)
		}
	}
}

func TestLazy(t *testing.T) {
	made := 0
	var calls []string
	l := driver.Lazy(func() (driver.Driver, error) { made++; return named{"l", &calls}, nil })
	if made != 0 {
		t.Fatal("Lazy made the driver before its first use")
	}
	ctx := context.Background()
	l.Read(ctx, state.Instance{ID: "1"})
	l.Stop(ctx, state.Instance{ID: "1"}, 0)
	if made != 1 || len(calls) != 2 {
		t.Fatalf("made %d times, calls %q; want once, both calls through", made, calls)
	}
	boom := errors.New("no daemon")
	bad := driver.Lazy(func() (driver.Driver, error) { return nil, boom })
	if _, err := bad.Start(ctx, driver.LaunchSpec{}); !errors.Is(err, boom) {
		t.Fatalf("Start on a driver that cannot be made: %v", err)
	}
	if _, err := bad.Find(ctx, "x"); !errors.Is(err, boom) {
		t.Fatalf("Find on a driver that cannot be made: %v", err)
	}
}

// TestSyncLog: only a running server of a driver other than process is
// read (its log mirror refreshed); nothing else asks a driver.
func TestSyncLog(t *testing.T) {
	var calls []string
	s := driver.NewSet().Register(state.DriverProcess, named{"process", &calls}, nil).Register(state.DriverDocker, named{"docker", &calls}, nil)
	ctx := context.Background()
	for _, srv := range []*state.Server{
		nil,
		{Name: "p", Instance: state.Instance{Driver: state.DriverProcess, PID: 10}},
		{Name: "stopped", Instance: state.Instance{Driver: state.DriverDocker}},
		{Name: "c", Instance: state.Instance{Driver: state.DriverDocker, ID: "abc"}},
	} {
		s.SyncLog(ctx, srv)
	}
	if want := []string{"docker read abc"}; strings.Join(calls, "|") != strings.Join(want, "|") {
		t.Fatalf("calls %q; want %q", calls, want)
	}
}
