package docker

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeDaemon is an in-memory Docker Engine API on a unix socket: enough of
// it for the driver's unit tests (the real daemon is tested in
// real_test.go when one is there).
type fakeDaemon struct {
	t       *testing.T
	version string
	sock    string

	mu         sync.Mutex
	images     map[string]*Image // by reference and by id
	containers map[string]*fakeContainer
	order      []string
	paths      []string         // every request path, in order
	bodies     []map[string]any // create bodies
	startErr   string           // the next start fails with this message (HTTP 500)
	startHook  func(*fakeContainer)
	clock      time.Time
}

type fakeContainer struct {
	c    Container
	cfg  ContainerConfig
	logs []fakeLine
}

type fakeLine struct {
	t      time.Time
	stream int
	text   string
}

func newFakeDaemon(t *testing.T, version string) (*fakeDaemon, *Client) {
	t.Helper()
	f := &fakeDaemon{t: t, version: version, images: map[string]*Image{}, containers: map[string]*fakeContainer{},
		clock: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	f.sock = filepath.Join(t.TempDir(), "docker.sock")
	ln, err := net.Listen("unix", f.sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: f}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	c, err := NewClient("unix://" + f.sock)
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

// now advances the fake clock by a millisecond and returns it.
func (f *fakeDaemon) now() time.Time {
	f.clock = f.clock.Add(time.Millisecond)
	return f.clock
}

func (f *fakeDaemon) addImage(id string, refs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	img := &Image{ID: id, RepoDigests: refs}
	f.images[id] = img
	for _, r := range refs {
		f.images[r] = img
	}
}

// log appends a line to a container's log.
func (f *fakeDaemon) log(id string, stream int, text string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.containers[id]
	c.logs = append(c.logs, fakeLine{f.now(), stream, text})
}

// logAt appends a line with a given time (for lines that share one).
func (f *fakeDaemon) logAt(id string, at time.Time, text string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.containers[id]
	c.logs = append(c.logs, fakeLine{at, Stdout, text})
	if at.After(f.clock) {
		f.clock = at
	}
}

// exit ends a container's run as docker kill or a crash would.
func (f *fakeDaemon) exit(id string, code int, oom bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.containers[id]
	c.c.State.Running, c.c.State.ExitCode, c.c.State.OOMKilled = false, code, oom
	c.c.State.Status = "exited"
	c.c.State.FinishedAt = f.now().Format(time.RFC3339Nano)
}

// remove is docker rm.
func (f *fakeDaemon) remove(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.containers, id)
}

// restart is docker restart: same id, new start time and pid.
func (f *fakeDaemon) restart(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.containers[id]
	c.c.State.Running, c.c.State.Status = true, "running"
	c.c.State.Pid += 100
	c.c.State.StartedAt = f.now().Add(time.Second).Format(time.RFC3339Nano)
}

func (f *fakeDaemon) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.paths...)
}

var routes = []struct {
	method string
	re     *regexp.Regexp
	name   string
}{
	{"GET", regexp.MustCompile(`^/images/(.+)/json$`), "image"},
	{"POST", regexp.MustCompile(`^/containers/create$`), "create"},
	{"GET", regexp.MustCompile(`^/containers/json$`), "list"},
	{"POST", regexp.MustCompile(`^/containers/([^/]+)/start$`), "start"},
	{"GET", regexp.MustCompile(`^/containers/([^/]+)/json$`), "inspect"},
	{"POST", regexp.MustCompile(`^/containers/([^/]+)/stop$`), "stop"},
	{"POST", regexp.MustCompile(`^/containers/([^/]+)/kill$`), "kill"},
	{"POST", regexp.MustCompile(`^/containers/([^/]+)/wait$`), "wait"},
	{"GET", regexp.MustCompile(`^/containers/([^/]+)/logs$`), "logs"},
	{"GET", regexp.MustCompile(`^/containers/([^/]+)/top$`), "top"},
	{"DELETE", regexp.MustCompile(`^/containers/([^/]+)$`), "remove"},
}

var versionPrefix = regexp.MustCompile(`^/v[0-9.]+`)

func (f *fakeDaemon) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.paths = append(f.paths, r.Method+" "+r.URL.Path)
	if r.URL.Path == "/_ping" {
		w.Header().Set("Api-Version", f.version)
		w.Write([]byte("OK"))
		return
	}
	path := versionPrefix.ReplaceAllString(r.URL.Path, "")
	for _, rt := range routes {
		m := rt.re.FindStringSubmatch(path)
		if m == nil || r.Method != rt.method {
			continue
		}
		arg := ""
		if len(m) > 1 {
			arg = m[1]
		}
		f.serve(w, r, rt.name, arg)
		return
	}
	apiError(w, 404, "page not found")
}

func apiError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"message": msg})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// container finds a container by id, id prefix or name.
func (f *fakeDaemon) container(key string) *fakeContainer {
	if c, ok := f.containers[key]; ok {
		return c
	}
	for _, c := range f.containers {
		if c.c.Name == "/"+key {
			return c
		}
	}
	return nil
}

func (f *fakeDaemon) serve(w http.ResponseWriter, r *http.Request, route, arg string) {
	q := r.URL.Query()
	var c *fakeContainer
	if route != "image" && route != "create" && route != "list" {
		if c = f.container(arg); c == nil {
			apiError(w, 404, "No such container: "+arg)
			return
		}
	}
	switch route {
	case "image":
		img, ok := f.images[arg]
		if !ok {
			apiError(w, 404, "No such image: "+arg)
			return
		}
		writeJSON(w, img)
	case "create":
		var body map[string]any
		raw := json.NewDecoder(r.Body)
		if err := raw.Decode(&body); err != nil {
			apiError(w, 400, err.Error())
			return
		}
		f.bodies = append(f.bodies, body)
		b, _ := json.Marshal(body)
		var cfg ContainerConfig
		json.Unmarshal(b, &cfg)
		if _, ok := f.images[cfg.Image]; !ok {
			apiError(w, 404, "No such image: "+cfg.Image)
			return
		}
		name := q.Get("name")
		if name != "" && f.container(name) != nil {
			apiError(w, 409, fmt.Sprintf("Conflict. The container name \"/%s\" is already in use", name))
			return
		}
		id := fmt.Sprintf("%064x", len(f.order)+1)
		fc := &fakeContainer{cfg: cfg}
		fc.c.ID, fc.c.Name, fc.c.Image = id, "/"+name, cfg.Image
		fc.c.Created = f.now().Format(time.RFC3339Nano)
		fc.c.State.Status = "created"
		fc.c.State.StartedAt = "0001-01-01T00:00:00Z"
		fc.c.Config.Labels, fc.c.Config.Entrypoint, fc.c.Config.Cmd, fc.c.Config.Env = cfg.Labels, cfg.Entrypoint, cfg.Cmd, cfg.Env
		fc.c.HostConfig = cfg.HostConfig
		f.containers[id] = fc
		f.order = append(f.order, id)
		w.WriteHeader(201)
		writeJSON(w, map[string]any{"Id": id, "Warnings": []string{}})
	case "list":
		var filters map[string][]string
		json.Unmarshal([]byte(q.Get("filters")), &filters)
		out := []ContainerSummary{}
		for _, id := range f.order {
			fc, ok := f.containers[id]
			if !ok {
				continue
			}
			match := true
			for _, l := range filters["label"] {
				k, v, _ := strings.Cut(l, "=")
				if fc.c.Config.Labels[k] != v {
					match = false
				}
			}
			if match {
				out = append(out, ContainerSummary{ID: id, Names: []string{fc.c.Name}, Labels: fc.c.Config.Labels, State: fc.c.State.Status})
			}
		}
		writeJSON(w, out)
	case "start":
		if f.startErr != "" {
			msg := f.startErr
			f.startErr = ""
			apiError(w, 500, msg)
			return
		}
		c.c.State.Running, c.c.State.Status = true, "running"
		c.c.State.Pid = 4000 + len(f.order)
		c.c.State.StartedAt = f.now().Format(time.RFC3339Nano)
		if f.startHook != nil {
			f.startHook(c)
		}
		w.WriteHeader(204)
	case "inspect":
		writeJSON(w, c.c)
	case "stop", "kill":
		if !c.c.State.Running {
			w.WriteHeader(304)
			return
		}
		c.c.State.Running, c.c.State.Status = false, "exited"
		c.c.State.ExitCode = 0
		if route == "kill" {
			c.c.State.ExitCode = 137
		}
		c.c.State.FinishedAt = f.now().Format(time.RFC3339Nano)
		c.logs = append(c.logs, fakeLine{f.now(), Stdout, "stopped after t=" + q.Get("t") + "\n"})
		w.WriteHeader(204)
	case "wait":
		c.c.State.Running, c.c.State.Status = false, "exited"
		writeJSON(w, map[string]any{"StatusCode": c.c.State.ExitCode})
	case "logs":
		var since time.Time
		if s := q.Get("since"); s != "" {
			sec, frac, _ := strings.Cut(s, ".")
			si, _ := strconv.ParseInt(sec, 10, 64)
			ns, _ := strconv.ParseInt(frac, 10, 64)
			since = time.Unix(si, ns)
		}
		w.WriteHeader(200)
		for _, l := range c.logs {
			if !since.IsZero() && l.t.Before(since) {
				continue
			}
			p := l.text
			if q.Get("timestamps") == "1" {
				p = l.t.UTC().Format("2006-01-02T15:04:05.000000000Z07:00") + " " + p
			}
			var hdr [8]byte
			hdr[0] = byte(l.stream)
			binary.BigEndian.PutUint32(hdr[4:], uint32(len(p)))
			w.Write(hdr[:])
			w.Write([]byte(p))
		}
	case "top":
		if !c.c.State.Running {
			apiError(w, 409, "Container "+arg+" is not running")
			return
		}
		pid := c.c.State.Pid
		writeJSON(w, map[string]any{"Titles": []string{"UID", "PID", "PPID", "CMD"},
			"Processes": [][]string{{"root", strconv.Itoa(pid), "1", "docker-init"}, {"root", strconv.Itoa(pid + 1), strconv.Itoa(pid), "vllm"}}})
	case "remove":
		delete(f.containers, c.c.ID)
		w.WriteHeader(204)
	}
}
