package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/roofline/roofline/internal/fsx"
	"github.com/roofline/roofline/internal/state"
)

// A server with secrets of every kind: a sensitive variable in a
// non-secret flag, a secret-named env key, an attribute key, and a host
// secret read from a file.
const secretHCL = `
variable "private_rev" {
  type      = string
  sensitive = true
  default   = "rev-do-not-show-0001"
}

variable "hf" {
  type    = string
  default = "hf_plaintokenvalue42"
}

server "qwen" {
  engine        = engine.vllm_016
  model         = model.qwen
  gpus          = [0]
  port          = 8000
  extra_args    = ["--revision", var.private_rev]
  env           = { HF_TOKEN = var.hf, PLAIN = "visible" }
  env_from_file = { SECOND_TOKEN = "HOSTFILE" }
}
`

var plainSecrets = []string{"rev-do-not-show-0001", "hf_plaintokenvalue42", "host-secret-contents-77"}

func secretPlan(t *testing.T, hcl string, hostFile string, prior *state.File, obs map[string]*Observation) *Plan {
	t.Helper()
	hcl = strings.ReplaceAll(hcl, "HOSTFILE", hostFile)
	p := run(t, tc{hcl: hcl, prior: prior, observed: obs})
	if p.HasErrors() {
		t.Fatalf("plan errors: %v", p.Diagnostics)
	}
	return p
}

// planWithHost plans like run, but with the host-secret readers plan gets
// on a real host.
func planWithHost(t *testing.T, hostFile string, prior *state.File, obs map[string]*Observation) *Plan {
	t.Helper()
	hostReaders = true
	defer func() { hostReaders = false }()
	return secretPlan(t, secretHCL, hostFile, prior, obs)
}

func noPlain(t *testing.T, what string, b []byte) {
	t.Helper()
	for _, s := range plainSecrets {
		if bytes.Contains(b, []byte(s)) {
			t.Errorf("%s shows the secret %q:\n%s", what, s, b)
		}
	}
}

// stored writes p's servers through a state Manager, as apply does, so
// they are stored redacted.
func stored(t *testing.T, p *Plan) (*state.File, map[string]*Observation) {
	t.Helper()
	st, obs := stateFrom(p)
	for _, c := range p.Changes {
		if c.After != nil {
			st.Servers[c.Name].Sensitive = c.After.Sensitive
			if env := st.Servers[c.Name].Env; env != nil {
				for k, v := range c.After.Env {
					env[k] = v
				}
			}
		}
	}
	m := state.NewFake(nil)
	if err := m.Write(st); err != nil {
		t.Fatal(err)
	}
	noPlain(t, "the state", m.Bytes())
	got, _ := m.Read()
	return got, obs
}

func TestSecretsAreMaskedInPlanTextJSONAndFile(t *testing.T) {
	host := filepath.Join(t.TempDir(), "token")
	os.WriteFile(host, []byte("host-secret-contents-77\n"), 0o600)
	p := planWithHost(t, host, nil, nil)
	d := p.Change("qwen").After
	if d.Env["HF_TOKEN"] != "hf_plaintokenvalue42" {
		t.Fatal("in memory the plan keeps the value the engine needs")
	}
	for _, want := range []string{"env.HF_TOKEN", "env.SECOND_TOKEN"} {
		if !strings.Contains(strings.Join(d.Sensitive, ","), want) {
			t.Errorf("sensitive paths %v lack %s", d.Sensitive, want)
		}
	}

	warned := false
	for _, dg := range p.Diagnostics {
		warned = warned || dg.Summary == "Sensitive value on the engine's command line"
	}
	if !warned {
		t.Error("a sensitive value on the command line gets a warning")
	}
	var human bytes.Buffer
	RenderHuman(&human, p.ToJSON(), func(s string) string { return s })
	noPlain(t, "the human plan", human.Bytes())
	if !strings.Contains(human.String(), `"--revision (sensitive value)"`) || !strings.Contains(human.String(), "env.SECOND_TOKEN = (sensitive value) (read from "+host) {
		t.Errorf("human plan:\n%s", human.String())
	}

	var js bytes.Buffer
	WriteJSON(&js, p.ToJSON())
	noPlain(t, "plan -json", js.Bytes())
	var j struct {
		ResourceChanges []struct {
			After          Desired        `json:"after"`
			AfterSensitive map[string]any `json:"after_sensitive"`
		} `json:"resource_changes"`
	}
	json.Unmarshal(js.Bytes(), &j)
	rc := j.ResourceChanges[0]
	if !strings.HasPrefix(rc.After.Env["HF_TOKEN"], "sha256:") || rc.After.Env["PLAIN"] != "visible" {
		t.Errorf("after.env = %v", rc.After.Env)
	}
	if env, _ := rc.AfterSensitive["env"].(map[string]any); env["HF_TOKEN"] != true || env["PLAIN"] != nil {
		t.Errorf("after_sensitive = %v", rc.AfterSensitive)
	}
	marks, _ := rc.AfterSensitive["argv"].([]any)
	if len(marks) != len(rc.After.Argv) {
		t.Fatalf("after_sensitive.argv has %d marks for %d words", len(marks), len(rc.After.Argv))
	}
	for i, m := range marks {
		if m == true && !strings.HasPrefix(rc.After.Argv[i], "sha256:") {
			t.Errorf("argv[%d] marked sensitive but shows %q", i, rc.After.Argv[i])
		}
	}

	path := filepath.Join(t.TempDir(), "plan.out")
	if err := Save(path, p, testKey); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	noPlain(t, "the plan file", raw)
	back, err := Load(path, testKey)
	if err != nil {
		t.Fatal(err)
	}
	bd := back.Change("qwen").After
	if bd.Env["HF_TOKEN"] != "hf_plaintokenvalue42" || !strings.Contains(strings.Join(bd.Argv, " "), "--revision rev-do-not-show-0001") {
		t.Errorf("apply FILE must get the plain values back: %v %v", bd.Env, bd.Argv)
	}
	if _, ok := bd.Env["SECOND_TOKEN"]; ok || bd.EnvFrom["SECOND_TOKEN"] != "file:"+host {
		t.Errorf("a host secret stays a reference in the plan file: %v %v", bd.Env, bd.EnvFrom)
	}
	if err := ResolveHostEnv(back, func(string) (string, error) { return "host-secret-contents-77\n", nil }, nil, nil); err != nil {
		t.Fatal(err)
	}
	if bd.Env["SECOND_TOKEN"] != "host-secret-contents-77" {
		t.Errorf("resolved host secret %q", bd.Env["SECOND_TOKEN"])
	}
}

// A caller that has no reader for a host secret (the agent's restart once
// had none) gets an error naming the server and the source, never an engine
// started without its secret.
func TestResolveHostEnvWithoutReader(t *testing.T) {
	host := filepath.Join(t.TempDir(), "token")
	os.WriteFile(host, []byte("host-secret-contents-77\n"), 0o600)
	p := planWithHost(t, host, nil, nil)
	err := ResolveHostEnv(p, nil, nil, nil)
	var he *HostSecretError
	if !errors.As(err, &he) || he.Key != "SECOND_TOKEN" || !strings.Contains(err.Error(), "cannot read host secrets") {
		t.Fatalf("no reader: %v", err)
	}
	if _, ok := p.Change("qwen").After.Env["SECOND_TOKEN"]; ok {
		t.Error("the env got the secret's key without a value read")
	}
}

func TestRotatedSecretsShowAsChanges(t *testing.T) {
	dir := t.TempDir()
	host := filepath.Join(dir, "token")
	os.WriteFile(host, []byte("host-secret-contents-77\n"), 0o600)
	first := planWithHost(t, host, nil, nil)
	if err := ResolveHostEnv(first, readFile, nil, nil); err != nil {
		t.Fatal(err)
	}
	st, obs := stored(t, first)

	same := planWithHost(t, host, st, obs)
	if c := same.Change("qwen"); c.Action != NoOp {
		t.Fatalf("unchanged secrets: action %q (%s)", c.Action.Symbol(), c.Reason)
	}

	for _, rot := range []struct{ name, old, new, path string }{
		{"variable", "rev-do-not-show-0001", "rev-do-not-show-0002", "argv --revision"},
		{"env", "hf_plaintokenvalue42", "hf_plaintokenvalue43", "env.HF_TOKEN"},
		{"host file", "", "", "env.SECOND_TOKEN"},
	} {
		t.Run(rot.name, func(t *testing.T) {
			hcl := strings.ReplaceAll(secretHCL, "HOSTFILE", host)
			hf := host
			if rot.old != "" {
				hcl = strings.ReplaceAll(hcl, rot.old, rot.new)
			} else {
				hf = filepath.Join(t.TempDir(), "rotated")
				os.WriteFile(hf, []byte("host-secret-contents-78\n"), 0o600)
				hcl = strings.ReplaceAll(hcl, host, hf)
			}
			hostReaders = true
			p := run(t, tc{hcl: strings.ReplaceAll(hcl, "HOSTFILE", hf), prior: st, observed: obs})
			hostReaders = false
			c := p.Change("qwen")
			if !c.Action.IsReplace() || !strings.Contains(c.Reason, rot.path+" (sensitive value)") {
				t.Fatalf("action %q reason %q, want a replacement naming %s", c.Action.Symbol(), c.Reason, rot.path)
			}
			var human bytes.Buffer
			RenderHuman(&human, p.ToJSON(), func(s string) string { return s })
			noPlain(t, "the human plan", human.Bytes())
			for _, s := range []string{rot.new, "host-secret-contents-78"} {
				if s != "" && strings.Contains(human.String(), s) {
					t.Errorf("the rotated value shows:\n%s", human.String())
				}
			}
			if rot.path != "env.SECOND_TOKEN" && !strings.Contains(human.String(), "(sensitive value changed)") {
				t.Errorf("no (sensitive value changed) in:\n%s", human.String())
			}
		})
	}
}

func readFile(p string) (string, error) {
	b, err := os.ReadFile(p)
	return string(b), err
}

// An argv edited inside a saved plan (to /bin/sh) is refused.
func TestTamperedPlanFileIsRefused(t *testing.T) {
	p := run(t, tc{hcl: qwenServer})
	path := filepath.Join(t.TempDir(), "plan.out")
	if err := Save(path, p, testKey); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	var j map[string]any
	json.Unmarshal(raw, &j)
	rc := j["resource_changes"].([]any)[0].(map[string]any)
	argv := rc["after"].(map[string]any)["argv"].([]any)
	argv[0] = "/bin/sh"
	argv[1] = "-c"
	edited, _ := json.MarshalIndent(j, "", "  ")
	os.WriteFile(path, edited, 0o600)
	if _, err := Load(path, testKey); !errors.Is(err, ErrTampered) || !strings.Contains(err.Error(), "Nothing was applied") {
		t.Fatalf("edited plan: err = %v", err)
	}
	// The same file with another state directory's key is refused too.
	Save(path, p, testKey)
	if _, err := Load(path, []byte("another-key-another-key-another-k")); !errors.Is(err, ErrTampered) {
		t.Fatalf("other key: err = %v", err)
	}
	if _, err := Load(path, testKey); err != nil {
		t.Fatalf("the untouched file: %v", err)
	}
}

// The API key: never hashed unsalted into the config hash, sealed into the
// plan file for apply, and a rotation found against the state's salted hash.
func TestAPIKeyRotationAndPlanFile(t *testing.T) {
	hcl := `
server "qwen" {
  engine  = engine.vllm_016
  model   = model.qwen
  gpus    = [0]
  port    = 8000
  api_key = "sk-apikey-first-0001"
}
`
	first := run(t, tc{hcl: hcl})
	d := first.Change("qwen").After
	if d.APIKey != "sk-apikey-first-0001" {
		t.Fatalf("key %q", d.APIKey)
	}
	path := filepath.Join(t.TempDir(), "plan.out")
	if err := Save(path, first, testKey); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	if bytes.Contains(raw, []byte("sk-apikey-first-0001")) {
		t.Fatal("the plan file holds the key")
	}
	back, err := Load(path, testKey)
	if err != nil || back.Change("qwen").After.APIKey != "sk-apikey-first-0001" {
		t.Fatalf("apply FILE must get the key back: %v", err)
	}

	st, obs := stateFrom(first)
	st.Servers["qwen"].APIKeyHash = state.RedactValue("sk-apikey-first-0001")
	if c := run(t, tc{hcl: hcl, prior: st, observed: obs}).Change("qwen"); c.Action != NoOp {
		t.Fatalf("same key: %q %s", c.Action.Symbol(), c.Reason)
	}
	rotated := run(t, tc{hcl: strings.ReplaceAll(hcl, "first-0001", "second-0002"), prior: st, observed: obs})
	c := rotated.Change("qwen")
	if !c.Action.IsReplace() || !strings.Contains(c.Reason, "api_key (sensitive value)") {
		t.Fatalf("rotated key: %q %s", c.Action.Symbol(), c.Reason)
	}
	var human bytes.Buffer
	RenderHuman(&human, rotated.ToJSON(), func(s string) string { return s })
	WriteJSON(&human, rotated.ToJSON())
	if bytes.Contains(human.Bytes(), []byte("sk-apikey-")) {
		t.Fatalf("the key shows:\n%s", human.String())
	}
}

// TestReadHostSecret: a secret file is read whole; a FIFO (which would
// block) and a file over the bound are refused.
func TestReadHostSecret(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "token")
	if err := os.WriteFile(path, []byte("sk-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if v, err := ReadHostSecret(path); err != nil || v != "sk-1\n" {
		t.Errorf("ReadHostSecret = %q, %v", v, err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadHostSecret(fifo); !fsx.IsNotRegular(err) {
		t.Errorf("a FIFO: %v", err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, maxHostSecret+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadHostSecret(big); !errors.Is(err, fsx.ErrTooLarge) {
		t.Errorf("a file over %d bytes: %v", maxHostSecret, err)
	}
}

// TestAPIKeyFileStaysOutOfPlanFile: plan reads an api_key_file (to see a
// rotated key against the state's salted hash), and the key it read
// reaches neither the plan file nor any rendering: the file holds the path,
// and apply reads the key again.
func TestAPIKeyFileStaysOutOfPlanFile(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "key")
	const key = "sk-from-a-file-0003"
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hostReaders = true
	defer func() { hostReaders = false }()
	p := run(t, tc{hcl: `
server "qwen" {
  engine       = engine.vllm_016
  model        = model.qwen
  gpus         = [0]
  port         = 8000
  api_key_file = "` + keyFile + `"
}
`})
	if p.HasErrors() {
		t.Fatalf("plan errors: %v", p.Diagnostics)
	}
	if !p.Secrets.Is(key) {
		t.Fatal("plan did not read the key file: this test no longer covers the key it read")
	}
	path := filepath.Join(t.TempDir(), "plan.out")
	if err := Save(path, p, testKey); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	var out bytes.Buffer
	RenderHuman(&out, p.ToJSON(), func(s string) string { return s })
	WriteJSON(&out, p.ToJSON())
	for what, b := range map[string][]byte{"the plan file": raw, "the human plan and plan -json": out.Bytes()} {
		if bytes.Contains(b, []byte(key)) {
			t.Errorf("%s holds the key read from api_key_file:\n%s", what, b)
		}
	}
	if !bytes.Contains(raw, []byte(keyFile)) {
		t.Errorf("the plan file lacks the key file's path, which apply reads:\n%s", raw)
	}
	back, err := Load(path, testKey)
	if err != nil {
		t.Fatal(err)
	}
	if d := back.Change("qwen").After; d.APIKey != "" || d.APIKeyFile != keyFile || !d.Keyed {
		t.Errorf("read back: key %q, file %q, keyed %v", d.APIKey, d.APIKeyFile, d.Keyed)
	}
}

// TestAPIKeyAddedOrRemoved: a key added to a server, or taken away, is a
// replacement whose reason names api_key (it read "( changed)", with
// nothing changed in the plan's body but the api_key line).
func TestAPIKeyAddedOrRemoved(t *testing.T) {
	open := `
server "qwen" {
  engine  = engine.vllm_016
  model   = model.qwen
  gpus    = [0]
  port    = 8000
}
`
	keyed := strings.Replace(open, "port    = 8000", "port    = 8000\n  api_key = \"sk-apikey-first-0001\"", 1)
	openState, openObs := stateFrom(run(t, tc{hcl: open}))
	keyedState, keyedObs := stateFrom(run(t, tc{hcl: keyed}))
	keyedState.Servers["qwen"].APIKeyHash = state.RedactValue("sk-apikey-first-0001")
	for _, tt := range []struct {
		name  string
		hcl   string
		prior *state.File
		obs   map[string]*Observation
	}{
		{"added", keyed, openState, openObs},
		{"removed", open, keyedState, keyedObs},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := run(t, tc{hcl: tt.hcl, prior: tt.prior, observed: tt.obs}).Change("qwen")
			if !c.Action.IsReplace() || c.Reason != "api_key changed" || !slices.Equal(c.ReplacePaths, []string{"api_key"}) {
				t.Fatalf("%q reason %q, paths %q", c.Action.Symbol(), c.Reason, c.ReplacePaths)
			}
		})
	}
}

// TestMissingHostSecretFileWarns: plan on the host says that an
// api_key_file or env_from_file it cannot read would fail the start at
// apply (it said nothing, and apply failed); a review plan, which reads no
// host file, says nothing.
func TestMissingHostSecretFileWarns(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nokey")
	missingToken := filepath.Join(t.TempDir(), "hf_token")
	src := `
server "qwen" {
  engine        = engine.vllm_016
  model         = model.qwen
  gpus          = [0]
  port          = 8000
  api_key_file  = "` + missing + `"
  env_from_file = { HF_TOKEN = "` + missingToken + `" }
}
`
	for _, onHost := range []bool{true, false} {
		hostReaders = onHost
		p := run(t, tc{hcl: src})
		hostReaders = false
		var got []string
		for _, d := range p.Diagnostics {
			if d.Summary == "Host secret file not readable" {
				if d.Severity != hcl.DiagWarning || !strings.Contains(d.Detail, "no such file") || !strings.Contains(d.Detail, `Server "qwen"`) {
					t.Errorf("diagnostic %q: %s", d.Summary, d.Detail)
				}
				got = append(got, d.Detail)
			}
		}
		if want := map[bool]int{true: 2, false: 0}[onHost]; len(got) != want || onHost && (!strings.Contains(got[0], missing) || !strings.Contains(got[1], missingToken)) {
			t.Errorf("on the host %v: %d warnings, want %d: %q", onHost, len(got), want, summaries(p))
		}
	}
}
