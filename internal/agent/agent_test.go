package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/journal"
	"github.com/roofline/roofline/internal/state"
)

// world is a fake host: servers whose process and health the test sets, a
// restarter that records the requests and answers as told, a clock.
type world struct {
	mu       sync.Mutex
	st       *state.File
	alive    map[string]bool
	healthy  map[string]bool
	genErr   error
	fail     error // what a restart returns; nil restarts
	skip     string
	lasting  bool
	reqs     []Request
	now      time.Time
	launches int
}

func newWorld(names ...string) *world {
	w := &world{st: state.NewFile(), alive: map[string]bool{}, healthy: map[string]bool{}, now: time.Unix(1_700_000_000, 0)}
	for _, n := range names {
		w.st.Set(&state.Server{Name: n, Status: state.StatusReady, Instance: state.Instance{PID: 100, LaunchID: "l0"}, Port: 8000, ConfigHash: "h1"})
		w.alive[n], w.healthy[n] = true, true
	}
	return w
}

func (w *world) Read() (*state.File, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.st.Clone(), nil
}

func (w *world) Observe(_ context.Context, s *state.Server) Observation {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.healthy[s.Name]
	return Observation{Alive: w.alive[s.Name], Healthy: &h, Detail: "fake"}
}

func (w *world) Generate(context.Context, *state.Server) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.genErr
}

func (w *world) Restart(_ context.Context, reqs []Request) []Outcome {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reqs = append(w.reqs, reqs...)
	var out []Outcome
	for _, q := range reqs {
		if w.skip != "" {
			out = append(out, Outcome{Name: q.Name, Skipped: w.skip, Lasting: w.lasting})
			continue
		}
		if w.fail != nil {
			s := w.st.Servers[q.Name]
			s.Status, s.PID = state.StatusFailed, 0
			w.alive[q.Name] = false
			out = append(out, Outcome{Name: q.Name, Err: w.fail, Class: "oom_weights", Cause: "CUDA out of memory while loading the weights"})
			continue
		}
		w.launches++
		s := w.st.Servers[q.Name]
		s.Status, s.PID, s.LaunchID = state.StatusReady, 200+w.launches, "l"+string(rune('0'+w.launches))
		w.alive[q.Name], w.healthy[q.Name] = true, true
		out = append(out, Outcome{Name: q.Name, Restarted: true, PID: s.PID})
	}
	return out
}

func (w *world) set(f func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f()
}

func (w *world) requests() []Request {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Request(nil), w.reqs...)
}

func testAgent(t *testing.T, w *world) *Agent {
	s := DefaultSettings()
	s.GenerateEvery = 0
	a := New(s)
	a.States, a.Observer, a.Generator, a.Restarter = w, w, w, w
	a.Dir = t.TempDir()
	a.Now = func() time.Time { w.mu.Lock(); defer w.mu.Unlock(); return w.now }
	return a
}

// tick runs one tick and waits for the restarts it started.
func tick(a *Agent) {
	a.Tick(context.Background())
	a.wg.Wait()
}

func (w *world) advance(d time.Duration) { w.set(func() { w.now = w.now.Add(d) }) }

func TestDeadServerIsRestartedAtOnce(t *testing.T) {
	w := newWorld("a", "b")
	a := testAgent(t, w)
	tick(a)
	if len(w.requests()) != 0 {
		t.Fatalf("healthy servers restarted: %+v", w.requests())
	}
	w.set(func() { w.alive["a"] = false })
	tick(a)
	reqs := w.requests()
	if len(reqs) != 1 || reqs[0].Name != "a" || reqs[0].Replace || reqs[0].LaunchID != "l0" || !strings.Contains(reqs[0].Reason, "gone") {
		t.Fatalf("want one restart of a (not a replace, launch l0), got %+v", reqs)
	}
	tick(a)
	rep := a.Report()
	if !rep.Servers[0].Up || rep.Servers[0].Restarts != 1 {
		t.Errorf("after the restart: %+v", rep.Servers[0])
	}
	ents, _ := journal.Read(journal.Path(a.Dir))
	if len(ents) != 1 || ents[0].Agent.Action != journal.AgentRestarted || ents[0].Server != "a" {
		t.Errorf("journal: %+v", ents)
	}
}

// TestBackoffAndGiveUp: CrashLoopBackOff's schedule, then giving up after
// MaxRestarts failures with the cause reported.
func TestBackoffAndGiveUp(t *testing.T) {
	w := newWorld("a")
	a := testAgent(t, w)
	w.set(func() { w.alive["a"] = false; w.fail = errors.New("start failed") })
	var at []time.Duration
	start := w.now
	for i := 0; i < 400; i++ { // 400 ticks of 5 s: 33 min
		n := len(w.requests())
		tick(a)
		if len(w.requests()) > n {
			at = append(at, w.now.Sub(start))
		}
		w.advance(5 * time.Second)
	}
	// MaxRestarts = 5: attempts at 0, then after 10, 20, 40, 80 s.
	want := []time.Duration{0, 10 * time.Second, 30 * time.Second, 70 * time.Second, 150 * time.Second}
	if len(at) != len(want) {
		t.Fatalf("attempts at %v, want %v", at, want)
	}
	for i := range want {
		if at[i] != want[i] {
			t.Errorf("attempt %d at %s, want %s", i+1, at[i], want[i])
		}
	}
	r := a.Report().Servers[0]
	if !r.GaveUp || r.FailureClass != "oom_weights" || r.Failures != 5 || r.Up || r.Drift == "" {
		t.Errorf("after giving up: %+v", r)
	}
	ents, _ := journal.Read(journal.Path(a.Dir))
	if last := ents[len(ents)-1]; last.Agent.Action != journal.AgentGaveUp || last.Agent.Class != "oom_weights" {
		t.Errorf("the journal's last entry: %+v", last.Agent)
	}

	// A new agent takes the give-up over from the journal.
	b := testAgent(t, w)
	b.Dir = a.Dir
	b.init()
	tick(b)
	if n := len(w.requests()); n != 5 {
		t.Errorf("a new agent retried a given-up server: %d requests", n)
	}
	if r := b.Report().Servers[0]; !r.GaveUp || r.FailureClass != "oom_weights" {
		t.Errorf("the new agent's view: %+v", r)
	}

	// Someone fixes it and applies: the agent resets.
	w.set(func() {
		w.fail = nil
		s := w.st.Servers["a"]
		s.Status, s.PID = state.StatusReady, 300
		w.alive["a"] = true
	})
	tick(b)
	if r := b.Report().Servers[0]; r.GaveUp || !r.Up || r.FailureClass != "" {
		t.Errorf("after a successful apply: %+v", r)
	}
}

func TestBackoffResetsAfterHealthyPeriod(t *testing.T) {
	w := newWorld("a")
	a := testAgent(t, w)
	crash := func() {
		w.set(func() { w.alive["a"] = false })
	}
	crash()
	tick(a) // restart 1 at once; next not before 10 s
	crash()
	w.advance(5 * time.Second)
	tick(a)
	if n := len(w.requests()); n != 1 {
		t.Fatalf("restarted again within the backoff: %d", n)
	}
	w.advance(5 * time.Second)
	tick(a) // 10 s: restart 2; next backoff 20 s
	if n := len(w.requests()); n != 2 {
		t.Fatalf("want the second restart after 10 s, have %d", n)
	}
	// Healthy for reset_after (10 min): the backoff is forgotten.
	for i := 0; i < 121; i++ {
		w.advance(5 * time.Second)
		tick(a)
	}
	crash()
	tick(a)
	if n := len(w.requests()); n != 3 {
		t.Fatalf("after 10 min healthy a crash is restarted at once; requests %d", n)
	}
}

// TestHungServerIsReplaced: a running server that fails HangChecks checks in
// a row (here: /health answers but generation fails) is replaced.
func TestHungServerIsReplaced(t *testing.T) {
	w := newWorld("a")
	a := testAgent(t, w)
	a.settings.GenerateEvery = time.Second
	w.set(func() { w.genErr = errors.New("stream ended without [DONE]") })
	for i := 0; i < 2; i++ {
		w.advance(2 * time.Second)
		tick(a)
		if len(w.requests()) != 0 {
			t.Fatalf("replaced after %d failed check(s); hang_checks is 3", i+1)
		}
		if r := a.Report().Servers[0]; r.Up || r.Generation == nil || *r.Generation || r.Drift == "" {
			t.Fatalf("a failed generation must show: %+v", r)
		}
	}
	w.set(func() { w.genErr = nil })
	w.advance(2 * time.Second)
	tick(a)
	w.set(func() { w.genErr = errors.New("timeout") })
	for i := 0; i < 3; i++ {
		w.advance(2 * time.Second)
		tick(a)
	}
	reqs := w.requests()
	if len(reqs) != 1 || !reqs[0].Replace || !strings.Contains(reqs[0].Reason, "3 checks in a row") {
		t.Fatalf("want one replace after 3 failed checks in a row (a good one in between resets), got %+v", reqs)
	}
}

func TestStoppingServerIsLeftAlone(t *testing.T) {
	w := newWorld("a")
	w.set(func() { w.st.Servers["a"].Status = state.StatusStopping; w.alive["a"] = false })
	a := testAgent(t, w)
	tick(a)
	if len(w.requests()) != 0 {
		t.Fatal("the agent restarted a server that is being destroyed")
	}
}

func TestRebootIsNoted(t *testing.T) {
	w := newWorld("a")
	a := testAgent(t, w)
	boot := "b1"
	a.BootID = func() (string, error) { return boot, nil }
	a.init()
	boot = "b2"
	a.init()
	a.init()
	ents, _ := journal.Read(journal.Path(a.Dir))
	if len(ents) != 1 || ents[0].Agent.Action != journal.AgentRebooted || !strings.Contains(ents[0].Agent.Reason, "b1 → b2") {
		t.Fatalf("journal: %+v", ents)
	}
}

func TestSettingsFile(t *testing.T) {
	dir := t.TempDir()
	base := DefaultSettings()
	base.MaxRestarts = 7
	if s, err := LoadSettings("", base); err != nil || s != base {
		t.Errorf("no settings file: %+v, %v; want the base", s, err)
	}
	for _, tc := range []struct {
		name, body, err string
		check           func(Settings) bool
	}{
		{"overrides", `{"tick": "1s", "max_restarts": 2}`, "", func(s Settings) bool {
			return s.Tick == time.Second && s.MaxRestarts == 2 && s.BackoffMax == 5*time.Minute
		}},
		{"bad duration", `{"tick": "fast"}`, "tick", nil},
		{"unknown key", `{"tik": "1s"}`, "unknown field", nil},
		{"invalid", `{"backoff_initial": "10m"}`, "at most backoff_max", nil},
		{"zero restarts", `{"max_restarts": 0}`, "at least 1", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name+".json")
			if err := os.WriteFile(p, []byte(tc.body), 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := LoadSettings(p, DefaultSettings())
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("want an error with %q, got %v", tc.err, err)
				}
				return
			}
			if err != nil || !tc.check(s) {
				t.Fatalf("got %+v, %v", s, err)
			}
		})
	}
}

func TestHandlerToken(t *testing.T) {
	w := newWorld("a")
	a := testAgent(t, w)
	tick(a)
	h := &Handler{Gatherer: Registry(NewCollector(a.Report, a), false), Report: a.Report, Token: "s3cret"}
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, tc := range []struct {
		path, auth string
		want       int
	}{
		{"/metrics", "", 401},
		{"/metrics", "Bearer wrong", 401},
		{"/metrics", "Bearer s3cret", 200},
		{"/snapshot", "", 401},
		{"/snapshot", "Bearer s3cret", 200},
		{"/healthz", "", 200},
		{"/nope", "Bearer s3cret", 404},
	} {
		req, _ := http.NewRequest("GET", srv.URL+tc.path, nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s with %q: HTTP %d, want %d", tc.path, tc.auth, resp.StatusCode, tc.want)
		}
	}
}

// TestHandlerSnapshot: /snapshot serves the document whole as JSON, or a
// 500 that says why it could not be made (never half a document).
func TestHandlerSnapshot(t *testing.T) {
	for _, tc := range []struct {
		name, body, ctype string
		err               error
		want              int
	}{
		{"ok", `{"format_version":1}`, "application/json", nil, 200},
		{"error", "the configuration does not load: main.hcl:1", "text/plain; charset=utf-8", errors.New("the configuration does not load: main.hcl:1"), 500},
	} {
		h := &Handler{Snapshot: func(ctx context.Context, w io.Writer) error {
			if tc.err != nil {
				_, _ = io.WriteString(w, `{"half":`)
				return tc.err
			}
			_, err := io.WriteString(w, tc.body)
			return err
		}}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/snapshot", nil))
		if rec.Code != tc.want || rec.Header().Get("Content-Type") != tc.ctype || strings.TrimSpace(rec.Body.String()) != tc.body {
			t.Errorf("%s: HTTP %d %q %q", tc.name, rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
		}
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:9478": true, "[::1]:1": true, "localhost:1": true, "0.0.0.0:1": false, ":9478": false, "10.0.0.1:1": false} {
		got, err := IsLoopback(addr)
		if err != nil || got != want {
			t.Errorf("IsLoopback(%q) = %v, %v; want %v", addr, got, err, want)
		}
	}
	if _, err := IsLoopback("gpu-host:1"); err == nil {
		t.Error("a host name must be refused (it may resolve to anything)")
	}
}

type retirer struct{ calls int }

func (r *retirer) Retire(context.Context, time.Time) ([]string, error) {
	r.calls++
	if r.calls == 2 {
		return []string{"a"}, nil
	}
	return nil, nil
}

func TestRetirerIsCalledEachTick(t *testing.T) {
	w := newWorld("a")
	a := testAgent(t, w)
	r := &retirer{}
	a.Retirer = r
	for i := 0; i < 3; i++ {
		tick(a)
	}
	ents, _ := journal.Read(journal.Path(a.Dir))
	if r.calls != 3 || len(ents) != 1 || ents[0].Agent.Action != journal.AgentRetired || ents[0].Server != "a" {
		t.Fatalf("calls %d, journal %+v", r.calls, ents)
	}
}

func TestHistoryOf(t *testing.T) {
	ev := func(server, kind, action string) journal.Entry {
		e := journal.Entry{Server: server, Kind: kind}
		if action != "" {
			e.Agent = &journal.AgentEvent{Action: action, Class: "oom_weights"}
		}
		return e
	}
	roll := func(s string) journal.Entry { return ev(s, journal.KindRollout, "") }
	ag := func(s, a string) journal.Entry { return ev(s, journal.KindAgent, a) }
	h := historyOf([]journal.Entry{
		roll("a"),                                  // apply
		roll("a"), ag("a", journal.AgentRestarted), // an agent restart writes both
		ag("a", journal.AgentRestartFailed), roll("a"), ag("a", journal.AgentRestarted), // a failure, then a restart
		roll("b"), ag("b", journal.AgentRestarted), roll("b"), // b: a restart, then an apply
		ag("c", journal.AgentRestartFailed), ag("c", journal.AgentGaveUp),
	})
	if a := h["a"]; a.restarts != 2 || a.failures != 0 || a.gaveUp {
		t.Errorf("a: %+v, want 2 restarts", a)
	}
	if b := h["b"]; b.restarts != 0 {
		t.Errorf("b: %+v, want 0 restarts after an apply", b)
	}
	if c := h["c"]; !c.gaveUp || c.failures != 1 || c.class != "oom_weights" {
		t.Errorf("c: %+v", c)
	}
}

func TestHealthzStale(t *testing.T) {
	w := newWorld("a")
	a := testAgent(t, w)
	now := w.now
	h := &Handler{Report: a.Report, Stale: func() time.Duration { return time.Minute }, Now: func() time.Time { return now }}
	get := func() int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
		return rec.Code
	}
	if c := get(); c != 503 {
		t.Errorf("before the first tick: %d, want 503", c)
	}
	tick(a)
	if c := get(); c != 200 {
		t.Errorf("after a tick: %d, want 200", c)
	}
	now = now.Add(2 * time.Minute)
	if c := get(); c != 503 {
		t.Errorf("two minutes without a tick: %d, want 503", c)
	}
}

// TestSkips: a passing reason (an apply fixed it meanwhile) is asked again
// on the next tick; a lasting one (a changed configuration) after the
// backoff. Neither counts as a failure.
func TestSkips(t *testing.T) {
	for _, lasting := range []bool{false, true} {
		w := newWorld("a")
		a := testAgent(t, w)
		w.set(func() { w.alive["a"] = false; w.skip, w.lasting = "its configuration changed", lasting })
		for i := 0; i < 3; i++ {
			tick(a)
			w.advance(5 * time.Second)
		}
		want := 3 // every tick
		if lasting {
			want = 2 // at 0 s and after the 10 s backoff
		}
		if n := len(w.requests()); n != want {
			t.Errorf("lasting=%v: %d requests in 3 ticks 5 s apart, want %d", lasting, n, want)
		}
		if r := a.Report().Servers[0]; r.Failures != 0 || r.GaveUp {
			t.Errorf("lasting=%v: a skip counted as a failure: %+v", lasting, r)
		}
	}
}

// TestSkippedRestartIsNotLoggedAsRestarting: a restart the restarter
// declines (the configuration changed since the last apply) is logged as
// needed and not done, never "restarting server.a" followed by "not
// restarted".
func TestSkippedRestartIsNotLoggedAsRestarting(t *testing.T) {
	w := newWorld("a")
	w.skip, w.lasting = "its configuration changed since the last apply (gpus changed): the agent restarts only what was applied; run roofline apply", true
	a := testAgent(t, w)
	var logs []string
	a.Logf = func(format string, args ...any) { logs = append(logs, fmt.Sprintf(format, args...)) }
	w.set(func() { w.alive["a"] = false })
	tick(a)
	want := []string{
		"server.a needs a restart: the process is gone (fake)",
		"server.a: not restarted: " + w.skip,
	}
	if !slices.Equal(logs, want) {
		t.Errorf("logs %q\nwant %q", logs, want)
	}
}
