package driver_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/config"
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

// runsEngine runs the servers of one engine block (a test driver's rule).
type runsEngine struct {
	driver.About
	engine string
}

func (r runsEngine) Runs(_ *config.Server, e *config.Engine) bool { return e.Name == r.engine }

// TestChoose: plan's choice of a server's driver is the first registered
// driver whose About runs it; none is an error that names the drivers.
func TestChoose(t *testing.T) {
	s := driver.NewSet().
		Register("box", nil, runsEngine{engine: "boxed"}).
		Register("any", nil, runsEngine{engine: "boxed"}).
		Register("quiet", nil, nil). // never chosen
		Register("other", nil, runsEngine{engine: "other"})
	for _, tc := range []struct{ engine, want, err string }{
		{"boxed", "box", ""},
		{"other", "other", ""},
		{"nobody", "", `no driver of this roofline runs server "web" (it has any, box, other, quiet)`},
	} {
		got, err := s.Choose(&config.Server{Name: "web"}, &config.Engine{Name: tc.engine})
		if got != "" {
			// Registered without an implementation: chosen, but nothing runs.
			if _, err := s.Start(context.Background(), driver.LaunchSpec{Driver: got}); err == nil {
				t.Errorf("Start with %s, registered without a driver, did not fail", got)
			}
		}
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("Choose(%s) = %q, %v; want %q, %q", tc.engine, got, err, tc.want, tc.err)
		}
	}
}

// TestDescribeWithoutAbout: a driver registered without an About is
// described generically, by its name and id.
func TestDescribeWithoutAbout(t *testing.T) {
	s := driver.NewSet().Register("vm", nil, nil)
	i := state.Instance{Driver: "vm", ID: "i-0123456789abcdef", LaunchID: "l"}
	if l, v := s.Identity(i); l != "id" || v != i.ID {
		t.Errorf("Identity = %q, %q", l, v)
	}
	for _, tc := range []struct {
		obs  *driver.Observed
		err  error
		want string
	}{
		{&driver.Observed{Alive: true}, nil, "Still running: vm i-0123456789abcdef on port 8000."},
		{&driver.Observed{}, nil, "Its instance (vm i-0123456789abcdef) is no longer running; there is nothing to stop."},
		{nil, errors.New("denied"), "vm i-0123456789abcdef (port 8000) may still run (denied)."},
	} {
		if got := s.StopHint(i, 8000, tc.obs, tc.err); got != tc.want {
			t.Errorf("StopHint = %q; want %q", got, tc.want)
		}
	}
}
