package state_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/state/statetest"
)

func TestIsSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"HF_TOKEN": true, "HUGGING_FACE_HUB_TOKEN": true, "OPENAI_API_KEY": true, "VLLM_API_KEY": true,
		"AWS_SECRET_ACCESS_KEY": true, "DB_PASSWORD": true, "my.passwd": true, "--api-key": true, "--hf-token": true,
		"GOOGLE_APPLICATION_CREDENTIALS": true, "apikey": true,
		"TOKENIZERS_PARALLELISM": false, "--max-num-batched-tokens": false, "--tokenizer": false, "KEYCLOAK_URL": false,
		"--ssl-keyfile": false, "HF_HUB_OFFLINE": false, "--kv-cache-dtype": false, "": false, "--": false,
	} {
		if got := state.IsSecretName(name); got != want {
			t.Errorf("IsSecretName(%q) = %v; want %v", name, got, want)
		}
	}
}

func TestRedactEnv(t *testing.T) {
	env := map[string]string{"HF_TOKEN": "hf_abc", "HF_HUB_OFFLINE": "1"}
	r1 := state.RedactEnv(env, nil)
	if r1["HF_HUB_OFFLINE"] != "1" {
		t.Errorf("a plain variable was changed: %q", r1["HF_HUB_OFFLINE"])
	}
	if strings.Contains(r1["HF_TOKEN"], "hf_abc") || !state.IsRedacted(r1["HF_TOKEN"]) {
		t.Fatalf("secret stored as %q", r1["HF_TOKEN"])
	}
	if !state.Matches(r1["HF_TOKEN"], "hf_abc") || state.Matches(r1["HF_TOKEN"], "hf_abd") {
		t.Error("Matches does not tell the secret from another")
	}
	// Salted: two fresh redactions differ; against the previous one they agree.
	if r2 := state.RedactEnv(env, nil); r2["HF_TOKEN"] == r1["HF_TOKEN"] {
		t.Error("two redactions of one value are equal: no salt")
	}
	if r3 := state.RedactEnv(env, r1); r3["HF_TOKEN"] != r1["HF_TOKEN"] {
		t.Error("redacting against the previous record did not reuse it")
	}
	changed := state.RedactEnv(map[string]string{"HF_TOKEN": "hf_new"}, r1)
	if changed["HF_TOKEN"] == r1["HF_TOKEN"] {
		t.Error("a changed secret redacts like the old one")
	}
	// Idempotent: redacting a redacted value keeps it.
	if again := state.RedactEnv(r1, nil); again["HF_TOKEN"] != r1["HF_TOKEN"] {
		t.Error("redacting twice changed the value")
	}
}

func TestRedactArgv(t *testing.T) {
	argv := []string{"vllm", "serve", "/m", "--api-key", "sk-1", "--hf-token=hf_2", "--max-num-batched-tokens", "8192", "--port", "8000"}
	r := state.RedactArgv(argv, nil)
	if r[4] == "sk-1" || !state.IsRedacted(r[4]) {
		t.Errorf("--api-key value stored as %q", r[4])
	}
	if !strings.HasPrefix(r[5], "--hf-token=sha256:") || strings.Contains(r[5], "hf_2") {
		t.Errorf("--hf-token=... stored as %q", r[5])
	}
	if !slices.Equal(r[6:], argv[6:]) || !slices.Equal(r[:4], argv[:4]) {
		t.Errorf("non-secret words changed: %q", r)
	}
	if again := state.RedactArgv(argv, r); !slices.Equal(again, r) {
		t.Errorf("unchanged argv redacts differently against its record:\n%q\n%q", again, r)
	}
	argv[4] = "sk-other"
	if again := state.RedactArgv(argv, r); again[4] == r[4] {
		t.Error("a changed --api-key redacts like the old one")
	}
	// A secret flag followed by another flag has no value to hide.
	if got := state.RedactArgv([]string{"x", "--api-key", "--port", "1"}, nil); got[2] != "--port" {
		t.Errorf("the next flag was redacted: %q", got)
	}
}

// TestWriteRedacts: secrets never reach the stored state through a Manager,
// and rewriting an unchanged server does not look like a change.
func TestWriteRedacts(t *testing.T) {
	m := state.NewFilesystem(t.TempDir())
	f := state.NewFile()
	s := statetest.Server("a")
	s.Env["VLLM_API_KEY"] = "sk-plain-secret"
	s.Argv = append(s.Argv, "--api-key", "sk-plain-secret")
	s.Cmdline = slices.Clone(s.Argv)
	s.Proxy = &state.Instance{Driver: state.DriverProcess, ID: "1", PID: 1, Cmdline: []string{"roofline", "proxy", "--api-key", "sk-plain-secret"}}
	s.Deposed = statetest.Server("a")
	s.Deposed.Env["HF_TOKEN"] = "sk-plain-secret"
	f.Set(s)
	if err := m.Write(f); err != nil {
		t.Fatal(err)
	}
	data := readFile(t, m.StatePath())
	if strings.Contains(data, "sk-plain-secret") {
		t.Fatalf("plain secret in the state file:\n%s", data)
	}
	if strings.Contains(f.Servers["a"].Env["VLLM_API_KEY"], "sk-plain") {
		t.Error("the caller's File still holds the plain secret after Write")
	}
	// The caller renders the same server again, in plain text: no change.
	g, _ := m.Read()
	g.Servers["a"].Env["VLLM_API_KEY"] = "sk-plain-secret"
	if err := m.Write(g); err != nil {
		t.Fatal(err)
	}
	if g.Serial != 1 {
		t.Errorf("rewriting an unchanged secret bumped the serial to %d", g.Serial)
	}
	g.Servers["a"].Env["VLLM_API_KEY"] = "sk-rotated"
	if err := m.Write(g); err != nil {
		t.Fatal(err)
	}
	if g.Serial != 2 {
		t.Errorf("a rotated secret did not count as a change (serial %d)", g.Serial)
	}
}

func TestEnvArgvEqual(t *testing.T) {
	env := map[string]string{"HF_TOKEN": "hf_abc", "A": "1"}
	stored := state.RedactEnv(env, nil)
	for _, tc := range []struct {
		desired map[string]string
		want    bool
	}{
		{env, true},
		{stored, true},
		{map[string]string{"HF_TOKEN": "hf_abd", "A": "1"}, false},
		{map[string]string{"HF_TOKEN": "hf_abc", "A": "2"}, false},
		{map[string]string{"HF_TOKEN": "hf_abc"}, false},
		{map[string]string{"HF_TOKEN": "hf_abc", "B": "1"}, false},
	} {
		if got := state.EnvEqual(stored, tc.desired); got != tc.want {
			t.Errorf("EnvEqual(stored, %v) = %v; want %v", tc.desired, got, tc.want)
		}
	}
	argv := []string{"vllm", "--api-key", "sk", "--hf-token=hf", "--port", "1"}
	sa := state.RedactArgv(argv, nil)
	for _, tc := range []struct {
		desired []string
		want    bool
	}{
		{argv, true},
		{sa, true},
		{[]string{"vllm", "--api-key", "sk2", "--hf-token=hf", "--port", "1"}, false},
		{[]string{"vllm", "--api-key", "sk", "--hf-token=hx", "--port", "1"}, false},
		{[]string{"vllm", "--api-key", "sk", "--hf-token=hf", "--port", "2"}, false},
		{[]string{"vllm", "--api-key", "sk", "--hf-token=hf", "--port"}, false},
	} {
		if got := state.ArgvEqual(sa, tc.desired); got != tc.want {
			t.Errorf("ArgvEqual(stored, %q) = %v; want %v", tc.desired, got, tc.want)
		}
	}
}

func TestSensitivePathsAreStoredHashed(t *testing.T) {
	f := state.NewFile()
	s := &state.Server{Name: "a", Status: state.StatusReady, Argv: []string{"vllm", "serve", "/m", "--revision", "rev-secret-1", "--x=rev-secret-2"},
		Env: map[string]string{"PRIVATE": "env-secret-3", "PLAIN": "p"}, Sensitive: []string{"argv[4]", "argv[5]", "env.PRIVATE"},
		Port: 8000, Instance: state.Instance{Driver: state.DriverProcess, Cmdline: []string{"python", "vllm", "serve", "/m", "--revision", "rev-secret-1", "--x=rev-secret-2"}}}
	f.Set(s)
	m := state.NewFake(nil)
	if err := m.Write(f); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"rev-secret-1", "rev-secret-2", "env-secret-3"} {
		if strings.Contains(string(m.Bytes()), v) {
			t.Fatalf("the state holds %q:\n%s", v, m.Bytes())
		}
	}
	got, _ := m.Read()
	g := got.Servers["a"]
	if !state.Matches(g.Argv[4], "rev-secret-1") || g.Argv[5][:4] != "--x=" || g.Env["PLAIN"] != "p" || !state.Matches(g.Env["PRIVATE"], "env-secret-3") {
		t.Errorf("stored %v %v", g.Argv, g.Env)
	}
	// Unchanged values keep their stored hashes, so the state does not change.
	again := g.Clone()
	again.Argv[4] = "rev-secret-1"
	again.Env["PRIVATE"] = "env-secret-3"
	f2 := got
	f2.Servers["a"] = again
	before := m.Writes()
	if err := m.Write(f2); err != nil {
		t.Fatal(err)
	}
	if m.Writes() != before {
		t.Error("rewriting unchanged secrets changed the state")
	}
}
