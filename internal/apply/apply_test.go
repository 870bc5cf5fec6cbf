package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/driver/drivertest"
	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/proxy"
	"github.com/roofline/roofline/internal/proxy/launch"
	"github.com/roofline/roofline/internal/secret"
	"github.com/roofline/roofline/internal/state"
)

// fakeDriver records starts and stops in order; processes live until
// stopped. It passes the driver conformance suite (TestFakeDriverConforms).
type fakeDriver struct {
	name    string // the driver it is registered as; "" is process
	mu      sync.Mutex
	next    int
	alive   map[int]bool
	launch  map[int]driver.LaunchSpec
	events  []string
	failFor map[string]bool // server names whose Start fails
}

func newFakeDriver() *fakeDriver {
	return &fakeDriver{next: 100, alive: map[int]bool{}, launch: map[int]driver.LaunchSpec{}, failFor: map[string]bool{}}
}

var _ driver.Driver = (*fakeDriver)(nil)

func (d *fakeDriver) Start(ctx context.Context, spec driver.LaunchSpec) (state.Instance, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failFor[spec.Name] {
		d.events = append(d.events, "start-fail "+spec.Name)
		return state.Instance{}, errors.New("exec: no such file")
	}
	d.next++
	d.alive[d.next] = true
	d.launch[d.next] = spec
	d.events = append(d.events, fmt.Sprintf("start %s %d", spec.Name, d.next))
	return d.instance(d.next), nil
}

func (d *fakeDriver) instance(pid int) state.Instance {
	spec := d.launch[pid]
	name := d.name
	if name == "" {
		name = state.DriverProcess
	}
	return state.Instance{Driver: name, ID: state.ProcessID(pid), PID: pid, Group: pid, StartTime: 1, BootID: "b",
		Cmdline: spec.Argv, LaunchID: spec.LaunchID, LogPath: spec.LogPath}
}

func (d *fakeDriver) ours(i state.Instance) bool {
	return d.alive[i.PID] && i.StartTime == 1 && i.BootID == "b"
}

func (d *fakeDriver) Read(ctx context.Context, i state.Instance) (*driver.Observed, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.ours(i) {
		return &driver.Observed{Detail: fmt.Sprintf("pid %d is no longer running", i.PID)}, nil
	}
	return &driver.Observed{Alive: true, PID: i.PID, PIDs: []int{i.PID}, Cmdline: i.Cmdline}, nil
}

func (d *fakeDriver) Stop(ctx context.Context, i state.Instance, grace time.Duration) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ours(i) {
		d.events = append(d.events, fmt.Sprintf("stop %d", i.PID))
		delete(d.alive, i.PID)
	}
	return nil
}

func (d *fakeDriver) Find(ctx context.Context, launchID string) ([]state.Instance, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []state.Instance
	for pid := range d.alive {
		if launchID != "" && d.launch[pid].LaunchID == launchID {
			out = append(out, d.instance(pid))
		}
	}
	return out, nil
}

func TestFakeDriverConforms(t *testing.T) {
	drivertest.TestDriver(t, newFakeDriver(), drivertest.Options{
		Spec: func(t *testing.T, name, launchID string) driver.LaunchSpec {
			return driver.LaunchSpec{Driver: state.DriverProcess, Name: name, Argv: []string{"sleep", "1h"}, LaunchID: launchID, LogPath: "/l/" + name}
		},
		Stale: map[string]func(state.Instance) state.Instance{
			"other start time": func(i state.Instance) state.Instance { i.StartTime++; return i },
		},
	})
}

func (d *fakeDriver) log() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.events)
}

// fakeGates passes unless told otherwise, recording checks.
type fakeGates struct {
	failReady map[string]bool // by base URL port
	failCheck map[string]bool // by model name
}

func (g *fakeGates) WaitReady(ctx context.Context, t Target, timeout time.Duration, exited func() bool, progress func(time.Duration)) error {
	if exited() {
		return errors.New("the process exited")
	}
	if g.failReady[t.Model] {
		return errors.New("not ready within the timeout")
	}
	return nil
}

func (g *fakeGates) Check(ctx context.Context, t Target, spec *plan.GateSpec) (*state.GateResult, error) {
	if g.failCheck[t.Model] {
		return &state.GateResult{Passed: false}, errors.New("smoke: tool call came back as text")
	}
	return &state.GateResult{Passed: true}, nil
}

// recorder is a StateWriter that keeps every written state.
type recorder struct {
	mu     sync.Mutex
	writes []*state.File
}

func (r *recorder) Write(f *state.File) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes = append(r.writes, f.Clone())
	return nil
}

func desired(name, model string, port int) *plan.Desired {
	return &plan.Desired{Name: name, Argv: []string{"vllm", "serve", "/m", "--port", fmt.Sprint(port)}, CommandLen: 1,
		Env: map[string]string{"A": "1"}, GPUs: []int{0}, Port: port, Driver: state.DriverProcess,
		Model: state.ModelRef{Name: model, Path: "/m", ServedName: model}, Engine: state.EngineRef{Kind: "vllm"},
		ConfigHash: "h-" + model, Gate: &plan.GateSpec{HealthTimeout: time.Second}}
}

func newApplier(t *testing.T, d *fakeDriver, g *fakeGates) (*Applier, *recorder) {
	rec := &recorder{}
	set, dir := driver.NewSet().Register(state.DriverProcess, d, nil), t.TempDir()
	return &Applier{State: rec, Drivers: set, Gates: g, StateDir: dir,
		Proxies: launch.Launcher{Drivers: set, StateDir: dir, Command: []string{"false"}}}, rec
}

func TestCreateFromEmpty(t *testing.T) {
	d := newFakeDriver()
	a, rec := newApplier(t, d, &fakeGates{})
	p := &plan.Plan{Changes: []*plan.Change{
		{Addr: "server.a", Name: "a", Action: plan.Create, After: desired("a", "ma", 8001)},
		{Addr: "server.b", Name: "b", Action: plan.Create, After: desired("b", "mb", 8002)},
	}}
	st, err := a.Apply(context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b"} {
		s := st.Server(n)
		if s == nil || s.Status != state.StatusReady || s.PID == 0 || s.LaunchID == "" || !d.alive[s.PID] {
			t.Fatalf("server %s: %+v", n, s)
		}
	}
	// The record exists (status starting, no pid) before the process starts:
	// a killed apply still knows what it was starting.
	first := rec.writes[0]
	var starting *state.Server
	for _, s := range first.Servers {
		starting = s
	}
	if starting == nil || starting.Status != state.StatusStarting || starting.PID != 0 {
		t.Fatalf("first write should record the intent before the start: %+v", starting)
	}
}

func TestGateFailureStopsTheNewServer(t *testing.T) {
	d := newFakeDriver()
	a, _ := newApplier(t, d, &fakeGates{failCheck: map[string]bool{"ma": true}})
	p := &plan.Plan{Changes: []*plan.Change{
		{Addr: "server.a", Name: "a", Action: plan.Create, After: desired("a", "ma", 8001)},
		{Addr: "server.b", Name: "b", Action: plan.Create, After: desired("b", "mb", 8002)},
	}}
	st, err := a.Apply(context.Background(), p, nil)
	var se *ServerError
	if !errors.As(err, &se) || se.Addr != "server.a" || se.Phase != "gates" {
		t.Fatalf("want a gates ServerError for server.a, got %v", err)
	}
	if s := st.Server("a"); s.Status != state.StatusFailed || s.PID != 0 {
		t.Errorf("failed server: %+v", s)
	}
	if s := st.Server("b"); s.Status != state.StatusReady {
		t.Errorf("the other server must go on: %+v", s)
	}
	if len(d.alive) != 1 {
		t.Errorf("only server b should run, alive: %v", d.alive)
	}
}

func oldServer(d *fakeDriver, name, model string, port int) *state.Server {
	p, _ := d.Start(context.Background(), driver.LaunchSpec{Driver: state.DriverProcess, Name: name})
	return &state.Server{Name: name, Status: state.StatusReady, Port: port, GPUs: []int{0}, ConfigHash: "old",
		Model: state.ModelRef{ServedName: model}, Instance: p}
}

func TestDestroyThenCreateStopsFirst(t *testing.T) {
	d := newFakeDriver()
	a, _ := newApplier(t, d, &fakeGates{})
	prior := state.NewFile()
	old := oldServer(d, "a", "ma", 8001)
	prior.Set(old)
	p := &plan.Plan{Changes: []*plan.Change{{Addr: "server.a", Name: "a", Action: plan.DeleteThenCreate, Before: old, After: desired("a", "ma", 8001)}}}
	st, err := a.Apply(context.Background(), p, prior)
	if err != nil {
		t.Fatal(err)
	}
	ev := d.log()
	stopIdx := slices.Index(ev, fmt.Sprintf("stop %d", old.PID))
	startIdx := slices.IndexFunc(ev, func(e string) bool {
		return strings.HasPrefix(e, "start a ") && e != fmt.Sprintf("start a %d", old.PID)
	})
	if stopIdx < 0 || startIdx < 0 || stopIdx > startIdx {
		t.Fatalf("the old process must stop before the new starts: %v", ev)
	}
	if st.Server("a").PID == old.PID {
		t.Error("state still names the old process")
	}
}

func TestCreateBeforeDestroyFailureKeepsOld(t *testing.T) {
	d := newFakeDriver()
	a, _ := newApplier(t, d, &fakeGates{failReady: map[string]bool{"ma": true}})
	prior := state.NewFile()
	old := oldServer(d, "a", "old-model", 8001)
	prior.Set(old)
	after := desired("a", "ma", 8001)
	p := &plan.Plan{Changes: []*plan.Change{{Addr: "server.a", Name: "a", Action: plan.CreateThenDelete, Before: old, After: after}}}
	st, err := a.Apply(context.Background(), p, prior)
	var se *ServerError
	if !errors.As(err, &se) || !se.KeptOld {
		t.Fatalf("want a ServerError that kept the old server, got %v", err)
	}
	s := st.Server("a")
	if s.PID != old.PID || s.Deposed != nil || !d.alive[old.PID] {
		t.Fatalf("the old server must be restored and running: %+v", s)
	}
	if len(d.alive) != 1 {
		t.Errorf("the new process must be stopped: %v", d.alive)
	}
}

func TestCreateBeforeDestroySuccessStopsOldAfter(t *testing.T) {
	d := newFakeDriver()
	a, rec := newApplier(t, d, &fakeGates{})
	prior := state.NewFile()
	old := oldServer(d, "a", "ma", 8001)
	prior.Set(old)
	p := &plan.Plan{Changes: []*plan.Change{{Addr: "server.a", Name: "a", Action: plan.CreateThenDelete, Before: old, After: desired("a", "ma", 8001)}}}
	st, err := a.Apply(context.Background(), p, prior)
	if err != nil {
		t.Fatal(err)
	}
	s := st.Server("a")
	if s.PID == old.PID || s.Deposed != nil || d.alive[old.PID] || !d.alive[s.PID] {
		t.Fatalf("new must run, old must be stopped: %+v alive %v", s, d.alive)
	}
	// While both ran, the state recorded the old one as deposed.
	sawDeposed := false
	for _, w := range rec.writes {
		if ws := w.Server("a"); ws != nil && ws.Deposed != nil && ws.Deposed.PID == old.PID {
			sawDeposed = true
		}
	}
	if !sawDeposed {
		t.Error("the overlap must record the old instance as deposed")
	}
	ev := d.log()
	if ev[len(ev)-1] != fmt.Sprintf("stop %d", old.PID) {
		t.Errorf("the old server must be stopped last: %v", ev)
	}
}

func TestRecoverDeposed(t *testing.T) {
	d := newFakeDriver()
	a, _ := newApplier(t, d, &fakeGates{})
	prior := state.NewFile()
	old := oldServer(d, "a", "ma", 8001)
	newer := oldServer(d, "a", "ma", 8001)
	newer.Status = state.StatusStarting
	newer.Deposed = old.Clone()
	prior.Set(newer)
	st, err := a.Apply(context.Background(), &plan.Plan{}, prior)
	if err != nil {
		t.Fatal(err)
	}
	s := st.Server("a")
	if s.PID != old.PID || s.Deposed != nil || d.alive[newer.PID] {
		t.Fatalf("an interrupted rollout must fall back to the old instance: %+v alive %v", s, d.alive)
	}
}

func TestStartFailureIsReported(t *testing.T) {
	d := newFakeDriver()
	d.failFor["a"] = true
	a, _ := newApplier(t, d, &fakeGates{})
	p := &plan.Plan{Changes: []*plan.Change{{Addr: "server.a", Name: "a", Action: plan.Create, After: desired("a", "ma", 8001)}}}
	st, err := a.Apply(context.Background(), p, nil)
	var se *ServerError
	if !errors.As(err, &se) || se.Phase != "start" {
		t.Fatalf("want a start error, got %v", err)
	}
	if st.Server("a").Status != state.StatusFailed {
		t.Errorf("state: %+v", st.Server("a"))
	}
}

func TestWithPort(t *testing.T) {
	cases := []struct{ in, want []string }{
		{[]string{"serve", "--port", "8000"}, []string{"serve", "--port", "9000"}},
		{[]string{"serve", "--port=8000"}, []string{"serve", "--port=9000"}},
		{[]string{"serve"}, []string{"serve", "--port", "9000"}},
	}
	for _, c := range cases {
		if got := withPort(c.in, 9000); !slices.Equal(got, c.want) {
			t.Errorf("withPort(%v) = %v", c.in, got)
		}
	}
}

// TestAdoptFirst: an instance started with a recorded launch id whose
// identity never reached the state is recorded before anything else, then
// replaced as the plan says: never left running untracked.
func TestAdoptFirst(t *testing.T) {
	d := newFakeDriver()
	a, rec := newApplier(t, d, &fakeGates{})
	lost, _ := d.Start(context.Background(), driver.LaunchSpec{Driver: state.DriverProcess, Name: "a", LaunchID: "L1"})
	prior := state.NewFile()
	prior.Set(&state.Server{Name: "a", Status: state.StatusStarting, Port: 8001, GPUs: []int{0},
		Instance: state.Instance{Driver: state.DriverProcess, LaunchID: "L1", LogPath: "/logs/a.log"}})
	p := &plan.Plan{Changes: []*plan.Change{{Addr: "server.a", Name: "a", Action: plan.DeleteThenCreate,
		Before: prior.Server("a"), After: desired("a", "ma", 8001)}}}
	st, err := a.Apply(context.Background(), p, prior)
	if err != nil {
		t.Fatal(err)
	}
	first := rec.writes[0].Server("a")
	if first == nil || first.PID != lost.PID || first.ID != lost.ID || first.LogPath != "/logs/a.log" {
		t.Fatalf("first write = %+v; want the found instance (pid %d) recorded, keeping the state's log path", first, lost.PID)
	}
	if d.alive[lost.PID] {
		t.Errorf("the found instance still runs after its replacement: %v", d.log())
	}
	if s := st.Server("a"); s == nil || s.PID == lost.PID || s.Status != state.StatusReady {
		t.Errorf("server a = %+v; want a new, ready instance", s)
	}
}

// TestKeyFileValueJoinsTheOutputMask: a key read from api_key_file at apply
// was never in the configuration, so apply adds it to the command's mask
// (everything printed after the read is masked against it).
func TestKeyFileValueJoinsTheOutputMask(t *testing.T) {
	d := newFakeDriver()
	a, _ := newApplier(t, d, &fakeGates{})
	a.Secrets = secret.NewSet()
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte("sk-from-a-file-31\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	after := desired("a", "ma", 8001)
	after.Keyed, after.APIKeyFile = true, keyFile
	p := &plan.Plan{Changes: []*plan.Change{{Addr: "server.a", Name: "a", Action: plan.Create, After: after}}}
	st, err := a.Apply(context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Secrets.Is("sk-from-a-file-31") {
		t.Errorf("the key read from %s is not masked: mask has %d values", keyFile, a.Secrets.Len())
	}
	if h := st.Server("a").APIKeyHash; !secret.Matches(h, "sk-from-a-file-31") {
		t.Errorf("the state records %q, not the key's salted hash", h)
	}
}

func TestReadKeyFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		path, want, err string
	}{
		{write("ok", "  sk-1  \n"), "sk-1", ""},
		{write("empty", "\n\n"), "", "is empty"},
		{write("big", strings.Repeat("k", 5000)), "", "reads at most 4096 bytes"},
		{filepath.Join(dir, "missing"), "", "no such file"},
		{"/dev/zero", "", "not a regular file"},
	} {
		got, err := ReadKeyFile(tc.path)
		if got != tc.want || (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ReadKeyFile(%s) = %q, %v; want %q, error with %q", filepath.Base(tc.path), got, err, tc.want, tc.err)
		}
	}
}

// keptServer is a server that switched to a new instance and keeps the
// previous one for rollback (keep_previous), ready since readyAt.
func keptServer(d *fakeDriver, name string, port int, readyAt time.Time) *state.Server {
	prev := oldServer(d, name, "m"+name, port)
	prev.Status = state.StatusKept
	cur := oldServer(d, name, "m"+name, port)
	cur.ReadyAt = readyAt
	cur.Deposed = prev
	return cur
}

// apply -target=a (or any plan without an entry for server b) leaves b's
// kept instance alone: only a plan that has b decides b's rollback window.
func TestUntargetedKeptInstancesStay(t *testing.T) {
	d := newFakeDriver()
	a, _ := newApplier(t, d, &fakeGates{})
	now := time.Now()
	a.Now = func() time.Time { return now }
	prior := state.NewFile()
	ka := keptServer(d, "a", 8001, now.Add(-time.Hour)) // its window (10m) ended
	kb := keptServer(d, "b", 8002, now.Add(-time.Hour)) // not in the plan
	prior.Set(ka)
	prior.Set(kb)
	da := desired("a", "ma", 8001)
	da.KeepPrevious = 10 * time.Minute
	p := &plan.Plan{Targets: []string{"a"}, Changes: []*plan.Change{
		{Addr: "server.a", Name: "a", Action: plan.Update, Before: ka, After: da},
	}}
	st, err := a.Apply(context.Background(), p, prior)
	if err != nil {
		t.Fatal(err)
	}
	if s := st.Server("a"); s.Deposed != nil || d.alive[ka.Deposed.PID] {
		t.Errorf("server a's window ended: its kept instance must stop: %+v alive %v", s.Deposed, d.alive)
	}
	if s := st.Server("b"); s.Deposed == nil || s.Deposed.Status != state.StatusKept || !d.alive[kb.Deposed.PID] {
		t.Errorf("server b is not in the plan: its kept instance must stay recorded and running: %+v alive %v", s.Deposed, d.alive)
	}
	// A refresh-only apply starts and stops nothing, kept instances included.
	st2, err := a.Apply(context.Background(), &plan.Plan{Mode: plan.ModeRefreshOnly}, st)
	if err != nil {
		t.Fatal(err)
	}
	if s := st2.Server("b"); s.Deposed == nil || !d.alive[kb.Deposed.PID] {
		t.Errorf("a refresh-only apply stopped a kept instance: %+v", s.Deposed)
	}
}

// Destroying a server (or a destroy-then-create replacement) stops its kept
// previous instance too: the state never forgets a process that holds GPU
// memory.
func TestDestroyStopsTheKeptInstance(t *testing.T) {
	for _, act := range []plan.Action{plan.Delete, plan.DeleteThenCreate} {
		t.Run(act.Symbol(), func(t *testing.T) {
			d := newFakeDriver()
			a, _ := newApplier(t, d, &fakeGates{})
			now := time.Now()
			a.Now = func() time.Time { return now }
			prior := state.NewFile()
			k := keptServer(d, "a", 8001, now)
			prior.Set(k)
			c := &plan.Change{Addr: "server.a", Name: "a", Action: act, Before: k}
			if act == plan.DeleteThenCreate {
				c.After = desired("a", "ma", 8001)
				c.After.KeepPrevious = time.Hour
			}
			st, err := a.Apply(context.Background(), &plan.Plan{Changes: []*plan.Change{c}}, prior)
			if err != nil {
				t.Fatal(err)
			}
			if d.alive[k.Deposed.PID] || d.alive[k.PID] {
				t.Errorf("the kept (pid %d) and current (pid %d) instances must stop: alive %v", k.Deposed.PID, k.PID, d.alive)
			}
			if s := st.Server("a"); s != nil && s.Deposed != nil {
				t.Errorf("the state still records a previous instance: %+v", s.Deposed)
			}
		})
	}
}

// notes records the steps apply shows (Noter): every line, and each
// End's verb and detail on its own.
type notes struct {
	mu    sync.Mutex
	lines []string
	ends  []string
}

func (n *notes) Begin(string, string)                   {}
func (n *notes) Progress(string, time.Duration, string) {}
func (n *notes) End(addr, verb string, elapsed time.Duration, detail string) {
	n.mu.Lock()
	n.ends = append(n.ends, verb+": "+detail)
	n.mu.Unlock()
	n.Note(addr, fmt.Sprintf("%s after %s (%s)", verb, elapsed, detail))
}
func (n *notes) Note(addr, msg string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.lines = append(n.lines, addr+": "+msg)
}

// A kept instance stopped because its server is destroyed says so; it
// said "The rollback window ended" while the window had 10 minutes left.
func TestKeptInstanceStopSaysWhy(t *testing.T) {
	d := newFakeDriver()
	a, _ := newApplier(t, d, &fakeGates{})
	n := &notes{}
	a.Hooks = n
	now := time.Now()
	a.Now = func() time.Time { return now }
	prior := state.NewFile()
	ka := keptServer(d, "a", 8001, now.Add(-time.Minute))
	prior.Set(ka)
	p := &plan.Plan{Mode: plan.ModeDestroy, Changes: []*plan.Change{
		{Addr: "server.a", Name: "a", Action: plan.Delete, Before: ka, Kept: &plan.KeptInstance{PID: ka.Deposed.PID, Stop: "the server is destroyed"}},
	}}
	if _, err := a.Apply(context.Background(), p, prior); err != nil {
		t.Fatal(err)
	}
	if d.alive[ka.Deposed.PID] {
		t.Fatalf("the kept instance (pid %d) still runs", ka.Deposed.PID)
	}
	want := fmt.Sprintf("server.a: The previous instance kept for rollback (pid %d) stopped: the server is destroyed", ka.Deposed.PID)
	if !slices.Contains(n.lines, want) {
		t.Errorf("notes %q\nwant %q", n.lines, want)
	}
}

// A failed start reports how long it ran (apply -json's apply_errored
// elapsed_seconds); it said "Failed after 0s" whatever it took.
func TestFailedStartSaysHowLongItRan(t *testing.T) {
	d := newFakeDriver()
	a, _ := newApplier(t, d, &fakeGates{failCheck: map[string]bool{"ma": true}})
	n := &notes{}
	a.Hooks = n
	var mu sync.Mutex
	clock := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	a.Now = func() time.Time { // each look at the clock is a second later
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(time.Second)
		return clock
	}
	p := &plan.Plan{Changes: []*plan.Change{{Addr: "server.a", Name: "a", Action: plan.Create, After: desired("a", "ma", 8001)}}}
	if _, err := a.Apply(context.Background(), p, nil); err == nil {
		t.Fatal("the gates failed: want an error")
	}
	for _, l := range n.lines {
		if strings.HasPrefix(l, "server.a: Failed after ") {
			if strings.HasPrefix(l, "server.a: Failed after 0s") {
				t.Errorf("%q: the start took time", l)
			}
			return
		}
	}
	t.Errorf("no Failed end in %q", n.lines)
}

// TestRollbackKeepsReadyTimes: a rollback switches to an instance that has
// been ready since its own start, so its ready time (status's uptime) is
// kept, not reset to the switch; the instance switched away from keeps its
// own too, for a second rollback. The rollback window (keep_previous) runs
// from the rollout's end through both rollbacks.
func TestRollbackKeepsReadyTimes(t *testing.T) {
	d := newFakeDriver()
	a, _ := newApplier(t, d, &fakeGates{})
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	a.Now = func() time.Time { return now }
	ctx := context.Background()
	start := func(name string) state.Instance {
		i, err := d.Start(ctx, driver.LaunchSpec{Name: name, Argv: []string{name}})
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	px := start("proxy")
	firstReady, secondReady := now.Add(-2*time.Hour), now.Add(-10*time.Minute)
	st := state.NewFile()
	st.Set(&state.Server{Name: "a", Instance: start("second"), Status: state.StatusReady, BackendPort: 9002,
		CreatedAt: secondReady.Add(-time.Minute), ReadyAt: secondReady, Proxy: &px,
		Deposed: &state.Server{Name: "a", Instance: start("first"), Status: state.StatusKept, BackendPort: 9001,
			CreatedAt: firstReady.Add(-time.Minute), ReadyAt: firstReady}})
	statusFile := proxy.StatusFile(a.StateDir, "a")
	if err := os.MkdirAll(filepath.Dir(statusFile), 0o755); err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		backend         int
		ready, keptFrom time.Time
	}{{9001, firstReady, secondReady}, {9002, secondReady, firstReady}} {
		// The proxy confirms the switch in its status file.
		b, _ := json.Marshal(proxy.Status{Target: proxy.BackendAddr(want.backend), PID: px.PID})
		if err := os.WriteFile(statusFile, b, 0o644); err != nil {
			t.Fatal(err)
		}
		var err error
		if st, _, err = a.Rollback(ctx, st, "a"); err != nil {
			t.Fatalf("rollback %d: %v", i, err)
		}
		s := st.Server("a")
		if s.BackendPort != want.backend || s.Status != state.StatusReady || !s.ReadyAt.Equal(want.ready) {
			t.Errorf("rollback %d: serving backend %d ready at %s, want backend %d ready at %s", i, s.BackendPort, s.ReadyAt, want.backend, want.ready)
		}
		if s.Deposed == nil || s.Deposed.Status != state.StatusKept || !s.Deposed.ReadyAt.Equal(want.keptFrom) {
			t.Errorf("rollback %d: kept %+v, want ready at %s", i, s.Deposed, want.keptFrom)
		}
		// The rollback window still runs from the rollout's end (the
		// second instance's ready time): 30m, of which 10m have passed.
		keep := &plan.Desired{KeepPrevious: 30 * time.Minute}
		if !s.WindowStart().Equal(secondReady) || plan.KeptExpired(s, keep, now) || !plan.KeptExpired(s, keep, secondReady.Add(31*time.Minute)) {
			t.Errorf("rollback %d: the window starts at %s, want %s (the rollout's end)", i, s.WindowStart(), secondReady)
		}
	}
}

// TestStartPassesTheStateLogs: a start tells the driver every log the
// state names (the instance it replaces, kept and proxy logs included), so
// that pruning stale logs never removes one of them.
func TestStartPassesTheStateLogs(t *testing.T) {
	d := newFakeDriver()
	a, _ := newApplier(t, d, &fakeGates{})
	prior := state.NewFile()
	old := oldServer(d, "a", "ma", 8001)
	old.LogPath = "/s/logs/a.log.3"
	px, _ := d.Start(context.Background(), driver.LaunchSpec{Name: "a-proxy", LogPath: "/s/proxy/a.log"})
	old.Proxy = &px
	prior.Set(old)
	other := oldServer(d, "b", "mb", 8002)
	other.LogPath = "/s/logs/b.log"
	other.Deposed = &state.Server{Name: "b", Status: state.StatusKept, Instance: state.Instance{LogPath: "/s/logs/b.log.2"}}
	prior.Set(other)
	p := &plan.Plan{Changes: []*plan.Change{{Addr: "server.a", Name: "a", Action: plan.CreateThenDelete, Before: old, After: desired("a", "ma", 8001)}}}
	st, err := a.Apply(context.Background(), p, prior)
	if err != nil {
		t.Fatal(err)
	}
	spec := d.launch[st.Server("a").PID]
	for _, want := range []string{"/s/logs/a.log.3", "/s/proxy/a.log", "/s/logs/b.log", "/s/logs/b.log.2"} {
		if !slices.Contains(spec.StateLogs, want) {
			t.Errorf("the start's StateLogs %v lack %s", spec.StateLogs, want)
		}
	}
}

// TestFinishedRolloutKeepsThePrevious: apply finishing a rollout that a
// killed apply left after the gates passed keeps the old instance when
// keep_previous says so, and its last line says it is kept, not "old
// instance (pid N) stopped" (it ran on, kept for rollback).
func TestFinishedRolloutKeepsThePrevious(t *testing.T) {
	d := newFakeDriver()
	a, _ := newApplier(t, d, &fakeGates{})
	h := &notes{}
	a.Hooks = h
	prior := state.NewFile()
	old := oldServer(d, "a", "ma", 8001)
	newer := oldServer(d, "a", "ma", 8001)
	newer.Status = state.StatusStarting
	newer.Gate = &state.GateResult{Passed: true}
	newer.Deposed = old.Clone()
	prior.Set(newer)
	after := desired("a", "ma", 8001)
	after.KeepPrevious = 10 * time.Minute
	p := &plan.Plan{Changes: []*plan.Change{{Addr: "server.a", Name: "a", Action: plan.Update, Before: newer, After: after}}}
	st, err := a.Apply(context.Background(), p, prior)
	if err != nil {
		t.Fatal(err)
	}
	s := st.Server("a")
	if s.PID != newer.PID || s.Deposed == nil || s.Deposed.Status != state.StatusKept || !d.alive[old.PID] {
		t.Fatalf("the new instance serves and the old one is kept: %+v alive %v", s, d.alive)
	}
	want := fmt.Sprintf("Modifications complete: previous instance (pid %d) kept for rollback", old.PID)
	if len(h.ends) != 1 || h.ends[0] != want {
		t.Errorf("ends %q, want %q", h.ends, want)
	}
}

// TestLostProxyWithItsEngineGone: a plan found the proxy gone in front of a
// running engine (an update: a new proxy), but by apply (a saved plan) the
// engine is gone too. Apply starts nothing and says so: nothing serves,
// and the state records both as they were, so the next plan starts the
// server. It said "Modifications complete" and exited 0.
func TestLostProxyWithItsEngineGone(t *testing.T) {
	d := newFakeDriver()
	a, _ := newApplier(t, d, &fakeGates{})
	s := oldServer(d, "a", "ma", 8001)
	px, _ := d.Start(context.Background(), driver.LaunchSpec{Driver: state.DriverProcess, Name: "a-proxy"})
	s.Proxy, s.BackendPort = &px, 41001
	s.ConfigHash = "h-ma"
	delete(d.alive, px.PID)
	delete(d.alive, s.PID)
	prior := state.NewFile()
	prior.Set(s)
	after := desired("a", "ma", 8001)
	after.Proxy = true
	starts := len(d.log())
	p := &plan.Plan{Changes: []*plan.Change{{Addr: "server.a", Name: "a", Action: plan.Update, Before: s, After: after}}}
	st, err := a.Apply(context.Background(), p, prior)
	var se *ServerError
	if !errors.As(err, &se) || se.Addr != "server.a" || !strings.Contains(se.Err.Error(), "nothing serves on port 8001") {
		t.Fatalf("apply: %v; want the server's error saying nothing serves", err)
	}
	if got := d.log()[starts:]; len(got) != 0 {
		t.Errorf("apply started or stopped %v", got)
	}
	if got := st.Server("a"); got.PID != s.PID || got.Proxy == nil || got.Proxy.PID != px.PID {
		t.Errorf("the state must record both as they were: %+v", got)
	}
}

// proxyStarter is a Proxies that starts every proxy with the fake driver
// and records its requests.
type proxyStarter struct {
	d    *fakeDriver
	reqs []launch.Request
}

func (p *proxyStarter) Ensure(ctx context.Context, r launch.Request, record func(*state.Instance, bool) error) (*state.Instance, error) {
	p.reqs = append(p.reqs, r)
	if err := record(&state.Instance{Driver: state.DriverProcess, LaunchID: "px"}, false); err != nil {
		return nil, err
	}
	i, err := p.d.Start(ctx, driver.LaunchSpec{Driver: state.DriverProcess, Name: r.Name + "-proxy", LaunchID: "px"})
	if err != nil {
		return nil, err
	}
	return &i, record(&i, true)
}

func (p *proxyStarter) SetLimits(context.Context, string, *state.Instance, *state.ProxyLimits) error {
	return nil
}

// TestLostProxyOfAKeptServer: the proxy of a server that keeps its previous
// instance for rollback (keep_previous, so create_before_destroy and a
// proxy) dies within the window. Apply starts a new proxy in front of the
// running engine, with the key the proxy enforces for SGLang, leaves both
// engines running, and says what it did (it said "previous instance kept
// for rollback").
func TestLostProxyOfAKeptServer(t *testing.T) {
	d := newFakeDriver()
	a, _ := newApplier(t, d, &fakeGates{})
	ps := &proxyStarter{d: d}
	a.Proxies = ps
	h := &notes{}
	a.Hooks = h
	now := time.Now()
	a.Now = func() time.Time { return now }
	s := keptServer(d, "a", 8001, now.Add(-time.Minute))
	px, _ := d.Start(context.Background(), driver.LaunchSpec{Driver: state.DriverProcess, Name: "a-proxy"})
	delete(d.alive, px.PID)
	s.Proxy, s.BackendPort, s.ConfigHash = &px, 41001, "h-ma"
	s.Engine.Kind = "sglang"
	prior := state.NewFile()
	prior.Set(s)
	after := desired("a", "ma", 8001)
	after.Engine.Kind = "sglang"
	after.Proxy, after.Keyed, after.APIKey, after.KeepPrevious = true, true, "sk-test-key", 10*time.Minute
	starts := len(d.log())
	p := &plan.Plan{Changes: []*plan.Change{{Addr: "server.a", Name: "a", Action: plan.Update, ProxyGone: true, Before: s, After: after}}}
	st, err := a.Apply(context.Background(), p, prior)
	if err != nil {
		t.Fatal(err)
	}
	got := st.Server("a")
	if got.Proxy == nil || got.Proxy.PID == px.PID || !d.alive[got.Proxy.PID] || got.PID != s.PID || got.Deposed == nil || !d.alive[s.Deposed.PID] {
		t.Fatalf("want a new proxy in front of the running engine, the kept instance running: %+v", got)
	}
	if ev := d.log()[starts:]; len(ev) != 1 || !strings.HasPrefix(ev[0], "start a-proxy") {
		t.Errorf("apply started or stopped %v; want only the new proxy", ev)
	}
	if len(ps.reqs) != 1 || ps.reqs[0].Key != "sk-test-key" || ps.reqs[0].Backend != 41001 || ps.reqs[0].Port != 8001 {
		t.Errorf("proxy requests %+v; want one for port 8001 to the engine's 41001 that enforces the key", ps.reqs)
	}
	want := fmt.Sprintf("Modifications complete: a new proxy (pid %d) serves port 8001; the engine (pid %d) was not restarted", got.Proxy.PID, s.PID)
	if len(h.ends) != 1 || h.ends[0] != want {
		t.Errorf("ends %q, want %q", h.ends, want)
	}
}

// TestInterruptedRolloutWithItsProxyGone: a rollout was killed after its
// gates, and the proxy died too. Nothing can flow through a dead proxy, so
// apply does not wait out the drain limit on its last status file (which
// still counts requests to the old instance); it finishes the rollout and
// starts a new proxy in front of the new engine. It waited the whole drain
// limit and said it cut those requests.
func TestInterruptedRolloutWithItsProxyGone(t *testing.T) {
	for _, passed := range []bool{true, false} {
		t.Run(fmt.Sprintf("gates passed %v", passed), func(t *testing.T) { interruptedWithProxyGone(t, passed) })
	}
}

// interruptedWithProxyGone: forward (the new instance passed its gates) or
// back (it did not: the old one serves again).
func interruptedWithProxyGone(t *testing.T, passed bool) {
	d := newFakeDriver()
	a, _ := newApplier(t, d, &fakeGates{})
	a.Proxies = &proxyStarter{d: d}
	n := &notes{}
	a.Hooks = n
	old := oldServer(d, "a", "ma", 8001)
	old.BackendPort = 41001
	newer := oldServer(d, "a", "ma", 8001)
	newer.Status, newer.BackendPort, newer.ConfigHash = state.StatusStarting, 41002, "h-ma"
	newer.Gate = &state.GateResult{Passed: passed}
	newer.Deposed = old.Clone()
	px, _ := d.Start(context.Background(), driver.LaunchSpec{Driver: state.DriverProcess, Name: "a-proxy"})
	delete(d.alive, px.PID)
	newer.Proxy = &px
	if err := os.MkdirAll(proxy.Dir(a.StateDir), 0o700); err != nil {
		t.Fatal(err)
	}
	// The proxy pointed at the instance that serves, and still counted
	// requests to the other when it died.
	to, other := 41002, 41001
	if !passed {
		to, other = other, to
	}
	if err := proxy.WriteTarget(proxy.TargetFile(a.StateDir, "a"), proxy.TargetLine(to, "vllm", "")); err != nil {
		t.Fatal(err)
	}
	stale := fmt.Sprintf(`{"target":"127.0.0.1:%d","in_flight":{"127.0.0.1:%d":3},"pid":%d}`, to, other, px.PID)
	if err := os.WriteFile(proxy.StatusFile(a.StateDir, "a"), []byte(stale), 0o600); err != nil {
		t.Fatal(err)
	}
	prior := state.NewFile()
	prior.Set(newer)
	after := desired("a", "ma", 8001)
	after.Proxy, after.DrainTimeout = true, 2*time.Second
	p := &plan.Plan{Changes: []*plan.Change{{Addr: "server.a", Name: "a", Action: plan.Update, ProxyGone: true, Before: newer, After: after}}}
	st, err := a.Apply(context.Background(), p, prior)
	if err != nil {
		t.Fatal(err)
	}
	s := st.Server("a")
	serves, stopped := newer, old
	if !passed {
		serves, stopped = old, newer
	}
	if s.PID != serves.PID || s.Deposed != nil || d.alive[stopped.PID] || s.Proxy == nil || !d.alive[s.Proxy.PID] {
		t.Fatalf("want pid %d serving behind a new proxy, pid %d stopped: %+v", serves.PID, stopped.PID, s)
	}
	for _, l := range n.lines {
		if strings.Contains(l, "Drain limit") || strings.Contains(l, "Draining") {
			t.Errorf("apply drained through a dead proxy: %q", n.lines)
			break
		}
	}
}

// TestRollbackWithItsProxyGone: roofline rollback needs the proxy to switch;
// when it is gone the error says what still runs and what to do (apply
// starts a new proxy in front of the engine), and nothing changes.
func TestRollbackWithItsProxyGone(t *testing.T) {
	d := newFakeDriver()
	a, _ := newApplier(t, d, &fakeGates{})
	s := keptServer(d, "a", 8001, time.Now())
	px, _ := d.Start(context.Background(), driver.LaunchSpec{Driver: state.DriverProcess, Name: "a-proxy"})
	delete(d.alive, px.PID)
	s.Proxy, s.BackendPort = &px, 41002
	prior := state.NewFile()
	prior.Set(s)
	st, _, err := a.Rollback(context.Background(), prior, "a")
	want := fmt.Sprintf("its proxy (pid %d) is gone; the engine (pid %d) and the previous instance (pid %d) still run, as the state records. Run roofline apply: it starts a new proxy in front of the engine; then roll back", px.PID, s.PID, s.Deposed.PID)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("rollback: %v\nwant: %s", err, want)
	}
	if got := st.Server("a"); got.PID != s.PID || got.Deposed == nil || got.Deposed.PID != s.Deposed.PID {
		t.Errorf("the state changed: %+v", got)
	}
}
