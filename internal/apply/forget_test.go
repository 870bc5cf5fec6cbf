package apply

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/driver/docker"
	"github.com/roofline/roofline/internal/driver/process"
	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/state/statetest"
)

// failingReads is a driver whose reads fail (a process of another user).
type failingReads struct{ *fakeDriver }

func (failingReads) Read(context.Context, state.Instance) (*driver.Observed, error) {
	return nil, errors.New("permission denied")
}

func TestForget(t *testing.T) {
	d, containers := newFakeDriver(), newFakeDriver()
	ctx := context.Background()
	start := func(name string) state.Instance {
		i, err := d.Start(ctx, driver.LaunchSpec{Driver: state.DriverProcess, Name: name, Argv: []string{"serve"}})
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	// Every instance is read through its own driver, a container too.
	set := func(procs driver.Driver) *driver.Set {
		return driver.NewSet().Register(state.DriverProcess, procs, process.About{}).Register(state.DriverDocker, containers, docker.About{})
	}
	running := statetest.Server("running")
	running.Instance = start("running")
	proxied := statetest.Server("proxied")
	proxied.Instance = start("proxied")
	proxy := start("proxy")
	proxied.Proxy = &proxy
	proxied.Deposed = statetest.Server("proxied")
	proxied.Deposed.Instance = state.Instance{Driver: state.DriverProcess, ID: "9", PID: 9, StartTime: 1, BootID: "b"} // gone
	container := statetest.Server("container")
	container.Instance, _ = containers.Start(ctx, driver.LaunchSpec{Driver: state.DriverDocker, Name: "container"})
	container.Driver, container.ID = state.DriverDocker, "0a1b2c"
	removed := statetest.Server("removed")
	removed.Instance = state.Instance{Driver: state.DriverDocker, ID: "d00d"}
	idle := statetest.Server("idle")
	idle.Instance = state.Instance{}
	kept := statetest.Server("kept")

	for _, tc := range []struct {
		name  string
		procs driver.Driver
		addrs []string
		want  map[string][3]*Seen  // main, proxy, deposed per server, in order
		hints map[string][3]string // what each hint says (its driver's words)
		order []string
		err   string
	}{
		{"processes and containers read, nothing recorded", d,
			[]string{"server.running", "server.proxied", "server.container", "server.removed", "server.idle", "server.running"},
			map[string][3]*Seen{
				"running":   {{Remains: true, Alive: true, PIDs: []int{running.PID}}},
				"proxied":   {{Remains: true, Alive: true, PIDs: []int{proxied.PID}}, {Remains: true, Alive: true, PIDs: []int{proxy.PID}}, {}},
				"container": {{Remains: true, Alive: true, PIDs: []int{container.PID}}},
				"removed":   {{}},
				"idle":      {},
			},
			map[string][3]string{
				"running":   {"Still running: pid " + running.ID},
				"proxied":   {"Still running: pid " + proxied.ID, "Still running: pid " + proxy.ID, "Its process (pid 9) is no longer running"},
				"container": {"Still running: container 0a1b2c on port 8000. To stop it: docker stop 0a1b2c"},
				"removed":   {"Container d00d does not run as roofline started it"},
			}, []string{"running", "proxied", "container", "removed", "idle"}, ""},
		{"unreadable", failingReads{d}, []string{"server.running"},
			map[string][3]*Seen{"running": {{Err: errors.New("permission denied")}}},
			map[string][3]string{"running": {"may still run (permission denied)"}}, []string{"running"}, ""},
		{"an unknown address removes nothing", d, []string{"server.running", "server.nope"}, nil, nil, nil, "server.nope is not in the state"},
	} {
		st := state.NewFile()
		for _, s := range []*state.Server{running, proxied, container, removed, idle, kept} {
			st.Set(s.Clone())
		}
		got, err := Forget(ctx, set(tc.procs), st, tc.addrs)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || got != nil || len(st.Servers) != 6 {
				t.Errorf("%s: %v, %d servers left", tc.name, err, len(st.Servers))
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var names []string
		for _, f := range got {
			names = append(names, f.Server.Name)
			w := tc.want[f.Server.Name]
			for i, seen := range []*Seen{f.Main, f.Proxy, f.Deposed} {
				if seen != nil {
					if h := tc.hints[f.Server.Name][i]; h == "" || !strings.Contains(seen.Hint, h) {
						t.Errorf("%s: %s [%d]: hint %q, want one saying %q", tc.name, f.Server.Name, i, seen.Hint, h)
					}
					c := *seen
					c.Hint = ""
					seen = &c
				}
				if !reflect.DeepEqual(seen, w[i]) {
					t.Errorf("%s: %s [%d]: %+v, want %+v", tc.name, f.Server.Name, i, seen, w[i])
				}
			}
			if st.Server(f.Server.Name) != nil {
				t.Errorf("%s: %s is still in the state", tc.name, f.Server.Name)
			}
		}
		if !reflect.DeepEqual(names, tc.order) || st.Server("kept") == nil {
			t.Errorf("%s: forgot %v, want %v (kept stays)", tc.name, names, tc.order)
		}
	}
	if len(d.log()) != 3 {
		t.Errorf("Forget must stop nothing: %v", d.log())
	}
}
