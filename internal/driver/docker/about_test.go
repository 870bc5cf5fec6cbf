package docker

import (
	"errors"
	"testing"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/state"
)

// TestAbout: docker runs the servers of engine blocks with an image, names
// its instances by container id, and always says how to stop one: a
// container restarted or replaced by hand may run again.
func TestAbout(t *testing.T) {
	a := About{}
	if !a.Runs(&config.Server{}, &config.Engine{Image: "vllm/vllm-openai@sha256:00"}) || a.Runs(&config.Server{}, &config.Engine{}) {
		t.Error("docker runs exactly the engine blocks with an image")
	}
	i := state.Instance{Driver: state.DriverDocker, ID: "c0ffee", PID: 4242}
	if l, v := a.Identity(i); l != "container" || v != "c0ffee" {
		t.Errorf("Identity = %q, %q", l, v)
	}
	for _, tc := range []struct {
		obs  *driver.Observed
		err  error
		want string
	}{
		{&driver.Observed{Alive: true, PIDs: []int{4242}}, nil, "Still running: container c0ffee on port 8000. To stop it: docker stop c0ffee"},
		{&driver.Observed{Detail: "container c0ffee exited with status 137"}, nil,
			"Container c0ffee does not run as roofline started it (container c0ffee exited with status 137); if anything of it still runs: docker stop c0ffee"},
		{nil, errors.New("Cannot connect to the Docker daemon"), "Container c0ffee (port 8000) may still run (Cannot connect to the Docker daemon). To stop it: docker stop c0ffee"},
	} {
		if got := a.StopHint(i, 8000, tc.obs, tc.err); got != tc.want {
			t.Errorf("StopHint:\n got %q\nwant %q", got, tc.want)
		}
	}
}
