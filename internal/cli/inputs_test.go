package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/config"
)

const hostCfg = `variable "host" {
  type = string
}

variable "hf_token" {
  type      = string
  sensitive = true
}

roofline {
  state_dir = ".roofline-${var.host}"
}

engine "e" {
  kind      = "vllm"
  version   = "0.16.0"
  rehearsal = true
  env       = { HF_TOKEN = var.hf_token }
}
`

// TestInputsEverywhere: validate runs without values; every command that
// reads the configuration takes -var, -var-file and ROOFLINE_VAR_*, so a
// state_dir that depends on a variable is the same for all of them.
func TestInputsEverywhere(t *testing.T) {
	// init probes the engines by running roofline itself, which in a test
	// is the test binary: it would run this whole suite again, and again.
	// A stand-in that fails at once keeps the probe short.
	old := selfExecutable
	selfExecutable = func() (string, error) { return "/bin/false", nil }
	t.Cleanup(func() { selfExecutable = old })
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), hostCfg)

	if code, stdout, stderr := runMain(t, "-chdir="+dir, "validate"); code != ExitOK || !strings.Contains(stdout, "Success!") {
		t.Fatalf("validate without values: exit %d\n%s%s", code, stdout, stderr)
	}
	// One missing value is one error, whatever depends on it (the state
	// commands need no secret: plan still asks for every value).
	code, _, stderr := runMain(t, "-chdir="+dir, "plan", "-var", "host=gpu-01")
	if code != ExitError || strings.Count(stderr, "Error:") != 1 || !strings.Contains(stderr, `Variable "hf_token" has no default`) {
		t.Fatalf("plan without hf_token: exit %d\n%s", code, stderr)
	}

	t.Setenv("ROOFLINE_VAR_hf_token", "hf_secret")
	writeFile(t, filepath.Join(dir, "gpu-02.rfvars"), "host = \"gpu-02\"\n")
	for _, args := range [][]string{
		{"status", "-var=host=gpu-01"},
		{"state", "list", "-var", "host=gpu-01"},
		{"journal", "-var", "host=gpu-01"},
		{"show", "-var", "host=gpu-01"},
		{"validate", "-var", "host=gpu-01"},
		{"status", "-var-file", "gpu-02.rfvars"},
		{"state", "list", "-var-file=gpu-02.rfvars", "-var", "host=gpu-03"},
	} {
		code, stdout, stderr := runMain(t, append([]string{"-chdir=" + dir}, args...)...)
		if code != ExitOK {
			t.Errorf("%v: exit %d\n%s%s", args, code, stdout, stderr)
		}
		if strings.Contains(stdout+stderr, "hf_secret") {
			t.Errorf("%v: the sensitive value is printed", args)
		}
	}
	// init probes the engines (the test binary is no rehearsal engine, so it
	// reports problems); what matters here is the directory it uses.
	if _, stdout, _ := runMain(t, "-chdir="+dir, "init", "-var", "host=gpu-01"); !strings.Contains(stdout, "State directory: "+filepath.Join(dir, ".roofline-gpu-01")) {
		t.Errorf("init -var host=gpu-01:\n%s", stdout)
	}
	if _, err := os.Stat(filepath.Join(dir, ".roofline-")); err == nil {
		t.Errorf("a command used an empty host")
	}
	// Later wins: -var after -var-file.
	writeFile(t, filepath.Join(dir, "roofline.rfvars"), "host = \"auto\"\n")
	if _, stdout, _ := runMain(t, "-chdir="+dir, "init"); !strings.Contains(stdout, "State directory: "+filepath.Join(dir, ".roofline-auto")) {
		t.Errorf("roofline.rfvars not read:\n%s", stdout)
	}
	if _, stdout, _ := runMain(t, "-chdir="+dir, "init", "-var-file=gpu-02.rfvars", "-var", "host=gpu-03"); !strings.Contains(stdout, ".roofline-gpu-03") {
		t.Errorf("a later -var does not win over -var-file:\n%s", stdout)
	}
	code, _, stderr = runMain(t, "-chdir="+dir, "status", "-var-file=nope.rfvars")
	if code != ExitError || !strings.Contains(stderr, "Cannot read a variable file") {
		t.Errorf("missing -var-file: exit %d\n%s", code, stderr)
	}
}

// TestFmtFiles: fmt - formats stdin to stdout; JSON and other tools' files
// are left alone; variable files are formatted.
func TestFmtFiles(t *testing.T) {
	code, stdout, _ := runMainIn(t, "server \"x\" {\n engine=engine.a\n    port = 1\n}\n", "fmt", "-")
	if code != ExitOK || stdout != "server \"x\" {\n  engine = engine.a\n  port   = 1\n}\n" {
		t.Fatalf("fmt -: exit %d %q", code, stdout)
	}
	if code, stdout, _ := runMainIn(t, "a=1\n", "fmt", "-check", "-"); code != ExitFmt || stdout != "" {
		t.Errorf("fmt -check -: exit %d %q", code, stdout)
	}
	if code, _, stderr := runMainIn(t, "a = \n", "fmt", "-"); code != ExitError || !strings.Contains(stderr, "<stdin> line 1") {
		t.Errorf("fmt - with a syntax error: exit %d %s", code, stderr)
	}
	// Standard input has the loader's size cap: at it, formatted; past it,
	// refused.
	for _, tc := range []struct {
		size int
		code int
	}{{config.MaxFileSize, ExitOK}, {config.MaxFileSize + 1, ExitError}} {
		src := "a = 1" + strings.Repeat(" ", tc.size-6) + "\n"
		code, _, stderr := runMainIn(t, src, "fmt", "-")
		if code != tc.code || (tc.code == ExitError && !strings.Contains(stderr, "standard input is over 4 MiB")) {
			t.Errorf("fmt - of %d bytes: exit %d, want %d\n%s", tc.size, code, tc.code, stderr)
		}
	}
	dir := t.TempDir()
	jsonSrc := "{\"server\":{}}\n"
	writeFile(t, filepath.Join(dir, "gen.hcl.json"), jsonSrc)
	pkr := "source \"docker\" \"u\" {\n image=\"u\"\n}\n"
	writeFile(t, filepath.Join(dir, "build.pkr.hcl"), pkr)
	writeFile(t, filepath.Join(dir, "prod.auto.rfvars"), "host=\"a\"\n")
	code, stdout, stderr := runMain(t, "-chdir="+dir, "fmt")
	if code != ExitOK || strings.TrimSpace(stdout) != "prod.auto.rfvars" {
		t.Fatalf("fmt: exit %d %q %s", code, stdout, stderr)
	}
	if code, stdout, _ := runMain(t, "-chdir="+dir, "fmt", "gen.hcl.json"); code != ExitOK || stdout != "" {
		t.Errorf("fmt FILE.hcl.json: exit %d %q", code, stdout)
	}
	for name, want := range map[string]string{"gen.hcl.json": jsonSrc, "build.pkr.hcl": pkr, "prod.auto.rfvars": "host = \"a\"\n"} {
		if b, _ := os.ReadFile(filepath.Join(dir, name)); string(b) != want {
			t.Errorf("%s = %q, want %q", name, b, want)
		}
	}
}

// TestJSONTwinPlans: a configuration generated as *.hcl.json plans the same
// as its native twin.
func TestJSONTwinPlans(t *testing.T) {
	inv, _ := filepath.Abs("../../examples/rehearsal/gpus.json")
	plan := func(name, src string) map[string]any {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, name), src)
		code, stdout, stderr := runMain(t, "-chdir="+dir, "plan", "-review", "-inventory="+inv, "-json")
		if code != ExitOK {
			t.Fatalf("%s: plan exit %d\n%s", name, code, stderr)
		}
		var out map[string]any
		if err := json.Unmarshal(planDocument(t, stdout), &out); err != nil {
			t.Fatal(err)
		}
		// Where each flag is written (file and line) differs between the
		// twins by nature; everything else must not.
		for _, c := range out["resource_changes"].([]any) {
			if after, ok := c.(map[string]any)["after"].(map[string]any); ok {
				delete(after, "sources")
			}
		}
		return out
	}
	native, err := os.ReadFile("../../examples/single-gpu-vllm/main.hcl")
	if err != nil {
		t.Fatal(err)
	}
	twin, err := os.ReadFile("testdata/json-twin/main.hcl.json")
	if err != nil {
		t.Fatal(err)
	}
	a, b := plan("main.hcl", string(native)), plan("main.hcl.json", string(twin))
	for _, key := range []string{"resource_changes", "summary", "applyable"} {
		ja, _ := json.Marshal(a[key])
		jb, _ := json.Marshal(b[key])
		if string(ja) != string(jb) {
			t.Errorf("%s differs:\nnative: %s\njson:   %s", key, ja, jb)
		}
		if string(ja) == "null" {
			t.Errorf("plan -json has no %s", key)
		}
	}
}

func TestOutputCommand(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("../config/testdata/valid/outputs.hcl")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "main.hcl"), string(src))
	code, stdout, stderr := runMain(t, "-chdir="+dir, "output")
	want := `key_env = "VLLM_API_KEY"
qwen3_base_url = "http://127.0.0.1:8000/v1"
routes = {
  qwen3-8b = ["http://10.0.0.5:8001", "http://10.0.0.5:8002"]
}
token = (sensitive value)
`
	if code != ExitOK || stdout != want {
		t.Fatalf("output: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, stdout, _ := runMain(t, "-chdir="+dir, "output", "-raw", "qwen3_base_url"); code != ExitOK || stdout != "http://127.0.0.1:8000/v1" {
		t.Errorf("-raw: exit %d %q", code, stdout)
	}
	if code, stdout, _ := runMain(t, "-chdir="+dir, "output", "-raw", "token", "-var", "token=sk-asked"); code != ExitOK || stdout != "sk-asked" {
		t.Errorf("-raw of a sensitive output asked by name: exit %d %q", code, stdout)
	}
	code, stdout, _ = runMain(t, "-chdir="+dir, "output", "-json")
	var all map[string]struct {
		Sensitive bool            `json:"sensitive"`
		Type      json.RawMessage `json:"type"`
		Value     json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal([]byte(stdout), &all); err != nil || code != ExitOK || len(all) != 4 || !all["token"].Sensitive ||
		string(all["qwen3_base_url"].Type) != `"string"` || string(all["qwen3_base_url"].Value) != `"http://127.0.0.1:8000/v1"` {
		t.Errorf("-json: exit %d %v\n%s", code, err, stdout)
	}
	if code, stdout, _ := runMain(t, "-chdir="+dir, "output", "-json", "routes"); code != ExitOK || !strings.Contains(stdout, `"qwen3-8b": [`) {
		t.Errorf("-json NAME: exit %d\n%s", code, stdout)
	}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"output", "route"}, `Did you mean "routes"?`},
		{[]string{"output", "-raw", "routes"}, "Unsupported value for raw output"},
		{[]string{"output", "-raw"}, "-raw needs an output NAME"},
	} {
		if code, _, stderr := runMain(t, append([]string{"-chdir=" + dir}, tc.args...)...); code != ExitError || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%v: exit %d\n%s", tc.args, code, stderr)
		}
	}
}

// TestGateCommandsTakeVars: smoke and bench, like health, find a SERVER in
// the configuration (rollback its state directory), so they take -var and
// -var-file: the error for a
// missing value tells the user to pass -var. A bad flag value that is
// checked after the server is found stops each before any request.
func TestGateCommandsTakeVars(t *testing.T) {
	// rollback copies roofline's executable into the state directory; in a
	// test that is the test binary, which need not be copied.
	old := selfExecutable
	selfExecutable = func() (string, error) { return "/bin/false", nil }
	t.Cleanup(func() { selfExecutable = old })
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), `variable "port" {
  type = number
}

engine "e" {
  kind      = "vllm"
  version   = "0.16.0"
  rehearsal = true
}

model "m" {
  path = "m"
}

server "s" {
  engine = engine.e
  model  = model.m
  gpus   = [0]
  port   = var.port
}
`)
	writeFile(t, filepath.Join(dir, "p.rfvars"), "port = 8000\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"smoke", "s", "-var", "port=8000", "-timeout=-1s"}, "-timeout must be positive"},
		{[]string{"smoke", "s", "-var-file=p.rfvars", "-timeout=-1s"}, "-timeout must be positive"},
		{[]string{"bench", "s", "-var", "port=8000", "-goodput", "nope:1"}, "unknown SLO"},
		{[]string{"bench", "-var-file", "p.rfvars", "s", "-goodput", "nope:1"}, "unknown SLO"},
		{[]string{"smoke", "s", "-timeout=-1s"}, "pass -var port=VALUE"},
		// rollback finds the state directory through the configuration too.
		{[]string{"rollback", "s", "-var", "port=8000"}, `no server "s" in the state`},
		{[]string{"rollback", "s"}, "pass -var port=VALUE"},
	} {
		code, stdout, stderr := runMain(t, append([]string{"-chdir=" + dir}, tc.args...)...)
		if code != ExitError || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, want %d and %q\n%s%s", tc.args, code, ExitError, tc.want, stdout, stderr)
		}
	}
}
