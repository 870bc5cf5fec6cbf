package process

import (
	"errors"
	"testing"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/state"
)

// TestAbout: a process runs the servers of engine blocks without an image,
// is named by its pid and what proves it the same process, and is stopped
// by its process group (its workers with it).
func TestAbout(t *testing.T) {
	a := About{}
	if !a.Runs(&config.Server{}, &config.Engine{}) || a.Runs(&config.Server{}, &config.Engine{Image: "x@sha256:00"}) {
		t.Error("process runs exactly the engine blocks without an image")
	}
	i := state.Instance{Driver: state.DriverProcess, ID: "4242", PID: 4242, Group: 4240, StartTime: 7}
	if l, v := a.Identity(i); l != "pid" || v != "4242 (process group 4240, start time 7, boot none)" {
		t.Errorf("Identity = %q, %q", l, v)
	}
	if _, v := a.Identity(state.Instance{Driver: state.DriverProcess}); v != "" {
		t.Errorf("Identity of nothing started = %q; want none", v)
	}
	for _, tc := range []struct {
		obs  *driver.Observed
		err  error
		want string
	}{
		{&driver.Observed{Alive: true}, nil, "Still running: pid 4242 (process group 4240) on port 8000. To stop it and its workers: kill -TERM -- -4240"},
		{&driver.Observed{PIDs: []int{4243, 4244}}, nil, "Its main process (pid 4242) has exited, but processes 4243, 4244 of its session still run (workers holding GPU memory?). To stop them: kill -TERM 4243 4244"},
		{&driver.Observed{}, nil, "Its process (pid 4242) is no longer running; there is nothing to stop."},
		{nil, errors.New("permission denied"), "Pid 4242 (process group 4240, port 8000) may still run (permission denied). To stop it and its workers: kill -TERM -- -4240"},
	} {
		if got := a.StopHint(i, 8000, tc.obs, tc.err); got != tc.want {
			t.Errorf("StopHint:\n got %q\nwant %q", got, tc.want)
		}
	}
}
