package live

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/agent"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/secret"
	"github.com/roofline/roofline/internal/state"
)

// memStates is the state in memory with a lock that counts its holders.
type memStates struct {
	st              *state.File
	lockErr         error
	locked, unlocks int
}

func (m *memStates) Read() (*state.File, error) { return m.st, nil }
func (m *memStates) Lock(ctx context.Context, info *state.LockInfo) (string, error) {
	if m.lockErr != nil {
		return "", m.lockErr
	}
	m.locked++
	return "id", nil
}
func (m *memStates) Unlock(id string) error { m.unlocks++; return nil }

func stateWith(servers ...*state.Server) *state.File {
	st := state.NewFile()
	for _, s := range servers {
		st.Servers[s.Name] = s
	}
	return st
}

// TestRestartBeforePlanning covers what Restart decides before it plans:
// a lock it cannot take, a configuration that does not load, requests the
// state no longer backs. None of them refreshes (Refresh is nil here and
// would panic).
func TestRestartBeforePlanning(t *testing.T) {
	running := &state.Server{Name: "a", Status: state.StatusReady}
	running.LaunchID = "L1"
	cfgA := &config.Config{Servers: map[string]*config.Server{"a": {Name: "a"}}}
	for _, tc := range []struct {
		name      string
		lockErr   error
		loadErr   error
		cfg       *config.Config
		req       agent.Request
		wantErr   string
		wantClass string
		wantSkip  string
		lasting   bool
	}{
		{name: "lock", lockErr: errors.New("held by apply"), req: agent.Request{Name: "a", LaunchID: "L1"}, wantErr: "held by apply"},
		{name: "config", loadErr: errors.New("main.hcl:3: bad"), req: agent.Request{Name: "a", LaunchID: "L1"},
			wantErr: "the configuration does not load: main.hcl:3: bad", wantClass: "config"},
		{name: "gone", cfg: cfgA, req: agent.Request{Name: "b"}, wantSkip: "it is no longer in the state"},
		{name: "replaced", cfg: cfgA, req: agent.Request{Name: "a", LaunchID: "L0"}, wantSkip: "another roofline replaced it meanwhile"},
		{name: "unconfigured", cfg: &config.Config{Servers: map[string]*config.Server{}}, req: agent.Request{Name: "a", LaunchID: "L1"},
			wantSkip: "it is no longer in the configuration: roofline apply removes it", lasting: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms := &memStates{st: stateWith(running), lockErr: tc.lockErr}
			h := &Host{States: ms, Logf: t.Logf, Load: func() (*config.Config, error) { return tc.cfg, tc.loadErr }}
			outs := h.Restart(context.Background(), []agent.Request{tc.req})
			if len(outs) != 1 {
				t.Fatalf("outcomes = %+v", outs)
			}
			o := outs[0]
			if o.Name != tc.req.Name || o.Restarted || o.Skipped != tc.wantSkip || o.Lasting != tc.lasting || o.Class != tc.wantClass {
				t.Errorf("outcome = %+v", o)
			}
			if got := ""; o.Err != nil || tc.wantErr != "" {
				if o.Err != nil {
					got = o.Err.Error()
				}
				if got != tc.wantErr {
					t.Errorf("error = %q, want %q", got, tc.wantErr)
				}
			}
			if ms.locked != ms.unlocks {
				t.Errorf("locked %d times, unlocked %d", ms.locked, ms.unlocks)
			}
		})
	}
}

// TestRetireNothingDue: without a kept instance, or with windows still
// open, Retire neither loads nor locks; a window ends only when due.
func TestRetireNothingDue(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ms := &memStates{st: stateWith(&state.Server{Name: "a", Status: state.StatusReady})}
	h := &Host{States: ms, Load: func() (*config.Config, error) { t.Fatal("loaded without a kept instance"); return nil, nil }}
	if got, err := h.Retire(context.Background(), now); got != nil || err != nil {
		t.Errorf("Retire = %v, %v", got, err)
	}

	kept := &state.Server{Name: "a", Status: state.StatusReady, ReadyAt: now.Add(-time.Minute), Deposed: &state.Server{Name: "a", Status: state.StatusKept}}
	ms = &memStates{st: stateWith(kept)}
	cfg := &config.Config{Servers: map[string]*config.Server{"a": {Name: "a"}}}
	cfg.Servers["a"].Lifecycle.KeepPrevious = time.Hour
	h = &Host{States: ms, Load: func() (*config.Config, error) { return cfg, nil }}
	if got, err := h.Retire(context.Background(), now); got != nil || err != nil || ms.locked != 0 {
		t.Errorf("Retire with the window open = %v, %v (locked %d)", got, err, ms.locked)
	}
	h.Load = func() (*config.Config, error) { return nil, errors.New("bad") }
	if _, err := h.Retire(context.Background(), now); err == nil || err.Error() != "the configuration does not load: bad" {
		t.Errorf("Retire with a broken configuration: %v", err)
	}
}

// TestAPIKey: the key comes from the configuration as it is now (api_key,
// or api_key_file read now) and joins the output mask.
func TestAPIKey(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte("sk-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Servers: map[string]*config.Server{
		"inline": {Name: "inline", APIKey: "sk-inline"},
		"file":   {Name: "file", APIKeyFile: keyFile},
		"gone":   {Name: "gone", APIKeyFile: filepath.Join(t.TempDir(), "missing")},
		"open":   {Name: "open"},
	}}
	for _, tc := range []struct{ name, want, err string }{
		{"inline", "sk-inline", ""},
		{"file", "sk-from-file", ""},
		{"open", "", ""},
		{"undeclared", "", ""},
		{"gone", "", "reading api_key_file"},
	} {
		secrets := secret.NewSet()
		h := &Host{Secrets: secrets, Load: func() (*config.Config, error) { return cfg, nil }}
		got, err := h.apiKey(tc.name)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: apiKey = %q, %v; want %q, %q", tc.name, got, err, tc.want, tc.err)
		}
		if tc.want != "" && !secrets.Is(tc.want) {
			t.Errorf("%s: the key is not in the output mask", tc.name)
		}
	}
	h := &Host{Secrets: secret.NewSet(), Load: func() (*config.Config, error) { return nil, errors.New("bad") }}
	if _, err := h.apiKey("inline"); err == nil || err.Error() != "the configuration does not load, so the API key is unknown: bad" {
		t.Errorf("apiKey with a broken configuration: %v", err)
	}
}
