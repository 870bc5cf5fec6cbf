package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/engine/refdata"
)

// standIn writes a shell script that plays an engine: it records each
// invocation in calls.log and answers --version and --help from the
// reference texts. It returns the script path and the log path.
func standIn(t *testing.T, dir, kind, version, reportVersion string) (string, string) {
	t.Helper()
	help, ok := refdata.Help(kind, version)
	short, _ := refdata.HelpShort(kind, version)
	if !ok {
		t.Fatalf("no reference help for %s %s", kind, version)
	}
	write := func(name, text string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	helpFile := write("help.txt", help, 0o644)
	shortFile := write("short.txt", short, 0o644)
	log := filepath.Join(dir, "calls.log")
	helpAll := `cat '` + helpFile + `'`
	if !refdata.HasHelpAll(kind, version) {
		helpAll = `echo "vllm serve: error: argument -h/--help: ignored explicit argument 'all'" >&2; exit 2`
	}
	script := `#!/bin/sh
printf '%s\n' "$*" >> '` + log + `'
case "$*" in
  --version|"rehearsal vllm@0.16.0 --version") echo "INFO 02-12 10:00:00 [__init__.py:216] Automatically detected platform cuda."; echo ` + reportVersion + ` ;;
  "serve --help=all"|"rehearsal vllm@0.16.0 serve --help=all") ` + helpAll + ` ;;
  "serve --help") cat '` + shortFile + `' ;;
  *) echo "error: unrecognized arguments: $*" >&2; exit 2 ;;
esac
`
	return write("vllm", script, 0o755), log
}

// standInDir makes a fresh working directory holding a stand-in vLLM
// (see standIn) and moves the test into it.
func standInDir(t *testing.T, version, reportVersion string) (dir, exe, log string) {
	t.Helper()
	dir = t.TempDir()
	t.Chdir(dir)
	exe, log = standIn(t, dir, "vllm", version, reportVersion)
	return dir, exe, log
}

// vllmEngine is the HCL of an engine block that runs command.
func vllmEngine(name, version, command string) string {
	return "engine \"" + name + "\" {\n  kind    = \"vllm\"\n  version = \"" + version + "\"\n  command = [\"" + command + "\"]\n}\n"
}

func calls(t *testing.T, log string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// TestFlagsStandIn runs `roofline flags` against a stand-in vLLM: the first
// call probes it, the second is served from the cache in the state dir,
// -refresh probes again.
func TestFlagsStandIn(t *testing.T) {
	dir, exe, log := standInDir(t, "0.16.0", "0.16.0")
	writeFile(t, filepath.Join(dir, "main.hcl"), vllmEngine("vllm_016", "0.16.0", exe))

	code, out, errs := runMain(t, "flags", "vllm_016", "max_model_len")
	if code != ExitOK {
		t.Fatalf("flags = %d\n%s", code, errs)
	}
	for _, want := range []string{"vLLM 0.16.0, from \"" + exe + " serve --help=all\"", "match \"max_model_len\"",
		"\n--max-model-len  MAX_MODEL_LEN  [ModelConfig]\n", "    default: None\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if got := calls(t, log); strings.Join(got, "|") != "--version|serve --help=all" {
		t.Errorf("first call ran %q", got)
	}
	files, _ := filepath.Glob(filepath.Join(dir, ".roofline", "probes", "*.json"))
	if len(files) != 1 {
		t.Errorf("probe cache files %v, want one under .roofline/probes", files)
	}

	code, again, _ := runMain(t, "flags", "vllm_016", "max_model_len")
	if code != ExitOK || again != out {
		t.Errorf("second call = %d, output differs:\n%s", code, again)
	}
	if got := calls(t, log); len(got) != 2 {
		t.Errorf("the second call ran the engine: %q", got)
	}

	code, js, errs := runMain(t, "flags", "-json", "-refresh", "vllm_016", "kv-cache-dtype")
	if code != ExitOK {
		t.Fatalf("flags -json = %d\n%s", code, errs)
	}
	if got := calls(t, log); len(got) != 4 {
		t.Errorf("-refresh did not probe again: %q", got)
	}
	var list []map[string]any
	if err := json.Unmarshal([]byte(js), &list); err != nil {
		t.Fatalf("-json output is not a JSON array: %v\n%s", err, js)
	}
	if len(list) == 0 || list[0]["name"] != "--kv-cache-dtype" || list[0]["default"] != "'auto'" || list[0]["deprecated"] != false {
		t.Fatalf("first object %v", list[0])
	}
	for _, key := range []string{"name", "aliases", "choices", "default", "deprecated"} {
		if _, ok := list[0][key]; !ok {
			t.Errorf("object lacks %q", key)
		}
	}
	if ch, _ := list[0]["choices"].([]any); len(ch) != 7 || ch[0] != "auto" {
		t.Errorf("choices %v", list[0]["choices"])
	}
}

// TestFlagsOlderVLLM: vLLM 0.8.5 refuses --help=all; the probe falls back to
// --help, which lists every flag in that version.
func TestFlagsOlderVLLM(t *testing.T) {
	dir, exe, log := standInDir(t, "0.8.5", "0.8.5")
	writeFile(t, filepath.Join(dir, "main.hcl"), vllmEngine("v085", "0.8.5", exe))
	code, out, errs := runMain(t, "flags", "v085", "enable-reasoning")
	if code != ExitOK || !strings.Contains(out, "\n--enable-reasoning\n") || !strings.Contains(out, "from \""+exe+" serve --help\"") {
		t.Fatalf("flags = %d\n%s\n%s", code, out, errs)
	}
	if got := calls(t, log); strings.Join(got, "|") != "--version|serve --help=all|serve --help" {
		t.Errorf("calls %q", got)
	}
}

// TestFlagsRehearsal: a rehearsal engine is roofline itself.
func TestFlagsRehearsal(t *testing.T) {
	dir, exe, log := standInDir(t, "0.16.0", "0.16.0")
	old := selfExecutable
	selfExecutable = func() (string, error) { return exe, nil }
	t.Cleanup(func() { selfExecutable = old })
	writeFile(t, filepath.Join(dir, "main.hcl"), "engine \"sim\" {\n  kind      = \"vllm\"\n  version   = \"0.16.0\"\n  rehearsal = true\n}\n")
	code, out, errs := runMain(t, "flags", "sim", "--tensor-parallel-size")
	if code != ExitOK || !strings.Contains(out, "--tensor-parallel-size, -tp  TENSOR_PARALLEL_SIZE") {
		t.Fatalf("flags = %d\n%s\n%s", code, out, errs)
	}
	if got := calls(t, log); strings.Join(got, "|") != "rehearsal vllm@0.16.0 --version|rehearsal vllm@0.16.0 serve --help=all" {
		t.Errorf("calls %q", got)
	}
}

func TestFlagsErrors(t *testing.T) {
	dir, exe, _ := standInDir(t, "0.16.0", "0.15.1")
	writeFile(t, filepath.Join(dir, "main.hcl"), vllmEngine("vllm_016", "0.16.0", exe)+vllmEngine("gone", "0.16.0", filepath.Join(dir, "missing")))
	tests := []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"vllm_16"}, ExitError, "", `no engine block named "vllm_16". Did you mean "vllm_016"?`},
		{[]string{}, ExitError, "", "expected an engine block name"},
		{[]string{"gone"}, ExitError, "", `check command in engine "gone"`},
		{[]string{"vllm_016", "no-such-thing"}, ExitError, "", `no flag of vLLM 0.15.1 matches "no-such-thing"`},
		{[]string{"vllm_016", "max-model-len"}, ExitOK, "--max-model-len", `Warning: engine "vllm_016" pins vLLM 0.16.0, but 0.15.1 is installed`},
	}
	for _, tt := range tests {
		code, out, errs := runMain(t, append([]string{"flags"}, tt.args...)...)
		if code != tt.code || !strings.Contains(out, tt.out) || !strings.Contains(errs, tt.err) {
			t.Errorf("flags %q = %d\nstdout: %s\nstderr: %s", tt.args, code, out, errs)
		}
	}
}
