package apply

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/state/statetest"
)

// failingReads is a driver whose reads fail (a process of another user).
type failingReads struct{ *fakeDriver }

func (failingReads) Read(context.Context, state.Instance) (*driver.Observed, error) {
	return nil, errors.New("permission denied")
}

func TestForget(t *testing.T) {
	d := newFakeDriver()
	ctx := context.Background()
	start := func(name string) state.Instance {
		i, err := d.Start(ctx, driver.LaunchSpec{Driver: state.DriverProcess, Name: name, Argv: []string{"serve"}})
		if err != nil {
			t.Fatal(err)
		}
		return i
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
	container.Instance = state.Instance{Driver: state.DriverDocker, ID: "0a1b2c"}
	idle := statetest.Server("idle")
	idle.Instance = state.Instance{}
	kept := statetest.Server("kept")

	for _, tc := range []struct {
		name  string
		procs driver.Driver
		addrs []string
		want  map[string][3]*Seen // main, proxy, deposed per server, in order
		order []string
		err   string
	}{
		{"processes read, a container left to docker, nothing recorded", d,
			[]string{"server.running", "server.proxied", "server.container", "server.idle", "server.running"},
			map[string][3]*Seen{
				"running":   {{Remains: true, Alive: true, PIDs: []int{running.PID}}},
				"proxied":   {{Remains: true, Alive: true, PIDs: []int{proxied.PID}}, {Remains: true, Alive: true, PIDs: []int{proxy.PID}}, {}},
				"container": {},
				"idle":      {},
			}, []string{"running", "proxied", "container", "idle"}, ""},
		{"unreadable", failingReads{d}, []string{"server.running"},
			map[string][3]*Seen{"running": {{Err: errors.New("permission denied")}}}, []string{"running"}, ""},
		{"an unknown address removes nothing", d, []string{"server.running", "server.nope"}, nil, nil, "server.nope is not in the state"},
	} {
		st := state.NewFile()
		for _, s := range []*state.Server{running, proxied, container, idle, kept} {
			st.Set(s.Clone())
		}
		got, err := Forget(ctx, tc.procs, st, tc.addrs)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || got != nil || len(st.Servers) != 5 {
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
