package plan

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/state"
)

// fakeInstances answers like a driver set: by instance id.
type fakeInstances struct {
	alive   map[string]bool
	pids    map[string][]int
	readErr error
	found   map[string][]state.Instance // launch id -> instances
}

func (f fakeInstances) Read(_ context.Context, i state.Instance) (bool, string, []int, error) {
	if f.readErr != nil {
		return false, "", nil, f.readErr
	}
	if f.alive[i.ID] {
		return true, "", f.pids[i.ID], nil
	}
	return false, "pid " + strconv.Itoa(i.PID) + " is no longer running", f.pids[i.ID], nil
}

func (f fakeInstances) Find(_ context.Context, _, launchID string) ([]state.Instance, error) {
	return f.found[launchID], nil
}

func proc(pid int) state.Instance {
	return state.Instance{Driver: state.DriverProcess, ID: state.ProcessID(pid), PID: pid, LaunchID: "l" + strconv.Itoa(pid)}
}

func TestLiveObserver(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" {
			t.Errorf("probed %s", r.URL.Path)
		}
		w.WriteHeader(status)
	}))
	defer srv.Close()
	_, portStr, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	port, _ := strconv.Atoi(portStr)
	client := &http.Client{}
	health := func(ctx context.Context, url string) (int, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	proxyInst := proc(7)
	fi := fakeInstances{
		alive: map[string]bool{proc(1).ID: true, proc(3).ID: true, proc(7).ID: true, proc(9).ID: true},
		pids:  map[string][]int{proc(1).ID: {1, 2}, proc(5).ID: {6}},
		found: map[string][]state.Instance{"lost": {proc(9)}},
	}
	o := &LiveObserver{Instances: fi, Health: health,
		ProxyBackend: func(name string) int { return 20001 },
		LastLogLine:  func(string) string { return "CUDA out of memory" }}

	ready := func(i state.Instance) *state.Server {
		return &state.Server{Name: "s", Status: state.StatusReady, Host: "127.0.0.1", Port: port, Instance: i}
	}
	for _, tc := range []struct {
		name      string
		o         *LiveObserver
		s         *state.Server
		alive     bool
		healthy   string // "", "true", "false"
		detail    string
		found     bool
		proxyPort int
		proxyGone bool
	}{
		{name: "failed start", s: &state.Server{Status: state.StatusFailed}, detail: "its last start failed; nothing runs"},
		{name: "nothing recorded", s: &state.Server{Status: state.StatusStarting, Instance: state.Instance{LaunchID: "none"}}, detail: "no process was recorded"},
		{name: "found by launch id", s: &state.Server{Status: state.StatusStarting, Instance: state.Instance{LaunchID: "lost", LogPath: "/l"}}, alive: true, found: true},
		{name: "exited, workers left", s: &state.Server{Status: state.StatusReady, Instance: func() state.Instance { i := proc(5); i.LogPath = "/log"; return i }()},
			detail: "pid 5 is no longer running; 1 worker process(es) of it are left and will be stopped; last log line: CUDA out of memory"},
		{name: "not observable", o: &LiveObserver{Instances: fakeInstances{readErr: errors.New("docker: no daemon")}}, s: ready(proc(1)), alive: true, detail: "could not be observed: docker: no daemon"},
		{name: "healthy", s: ready(proc(1)), alive: true, healthy: "true"},
		{name: "starting: not probed", s: &state.Server{Status: state.StatusStarting, Instance: proc(1)}, alive: true},
		// The engine is left alone: unhealthy (nothing answers on the
		// server's port), not gone, so no plan restarts it.
		{name: "proxy gone", s: func() *state.Server { s := ready(proc(1)); p := proc(8); s.Proxy = &p; return s }(),
			alive: true, healthy: "false", proxyPort: 20001, proxyGone: true,
			detail: "the proxy on port " + portStr + " (pid 8) is gone; the engine (pid 1) still runs behind it"},
		// A proxy whose start was recorded (its launch id) but never its
		// pid: its start failed (apply said so) and nothing runs with its
		// launch id. Nothing answers on the server's port.
		{name: "proxy start never recorded", s: func() *state.Server {
			s := ready(proc(1))
			s.Proxy = &state.Instance{Driver: state.DriverProcess, LaunchID: "never"}
			return s
		}(),
			alive: true, healthy: "false", proxyPort: 20001, proxyGone: true,
			detail: "the proxy on port " + portStr + " (its start failed) is gone; the engine (pid 1) still runs behind it"},
		// One that runs with it (a killed run started it): apply records it.
		{name: "proxy start never recorded, found", s: func() *state.Server {
			s := ready(proc(1))
			s.Proxy = &state.Instance{Driver: state.DriverProcess, LaunchID: "lost"}
			return s
		}(), alive: true, healthy: "true", proxyPort: 20001},
		{name: "behind its proxy", s: func() *state.Server {
			s := ready(proc(3))
			s.Proxy, s.BackendPort, s.Port = &proxyInst, port, 1
			return s
		}(), alive: true, healthy: "true", proxyPort: 20001},
	} {
		ob := o
		if tc.o != nil {
			ob = tc.o
		}
		got := ob.Observe(context.Background(), tc.s)
		h := ""
		if got.Healthy != nil {
			h = strconv.FormatBool(*got.Healthy)
		}
		if got.Alive != tc.alive || got.Detail != tc.detail || h != tc.healthy || (got.Found != nil) != tc.found || got.ProxyPort != tc.proxyPort || got.ProxyGone != tc.proxyGone {
			t.Errorf("%s: alive %v healthy %q found %v proxy %d detail %q\nwant alive %v healthy %q found %v proxy %d detail %q",
				tc.name, got.Alive, h, got.Found != nil, got.ProxyPort, got.Detail, tc.alive, tc.healthy, tc.found, tc.proxyPort, tc.detail)
		}
		if tc.found && got.Found.LogPath != "/l" {
			t.Errorf("%s: a found instance takes the recorded log path: %+v", tc.name, got.Found)
		}
	}

	status = http.StatusServiceUnavailable
	got := o.Observe(context.Background(), ready(proc(1)))
	if got.Healthy == nil || *got.Healthy || got.Detail != "pid 1 runs, but /health answers 503" {
		t.Errorf("unhealthy: %+v", got)
	}
	srv.Close()
	got = o.Observe(context.Background(), ready(proc(1)))
	if got.Healthy == nil || *got.Healthy || !strings.HasPrefix(got.Detail, "pid 1 runs, but /health does not answer: ") {
		t.Errorf("not answering: %+v", got)
	}
}
