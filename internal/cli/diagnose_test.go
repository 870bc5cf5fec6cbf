package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine"
)

// Excerpts are inline (not read from another package's testdata) so the
// tests do not depend on the working directory.
const diagKVTooSmallLog = `(APIServer pid=4100) INFO 02-20 09:14:02 [api_server.py:1885] vLLM API server version 0.16.0
(EngineCore_DP0 pid=4242) INFO 02-20 09:14:41 [gpu_model_runner.py:2653] Model loading took 15.2683 GiB memory and 6.012345 seconds
(EngineCore_DP0 pid=4242) INFO 02-20 09:14:58 [gpu_worker.py:298] Available KV cache memory: 5.59 GiB
(EngineCore_DP0 pid=4242) ERROR 02-20 09:14:58 [core.py:708] EngineCore failed to start.
(EngineCore_DP0 pid=4242) ERROR 02-20 09:14:58 [core.py:708] ValueError: To serve at least one request with the models's max seq len (221000), (10.12 GiB KV cache is needed, which is larger than the available KV cache memory (5.59 GiB). Based on the available memory, the estimated maximum model length is 122080. Try increasing ` + "`gpu_memory_utilization`" + ` or decreasing ` + "`max_model_len`" + ` when initializing the engine.
(APIServer pid=4100) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}
`

const diagPortLog = `[2025-12-11 10:00:00] server_args=ServerArgs(model_path='/models/Qwen3-8B', tp_size=1, port=30000)
[2025-12-11 10:00:30] ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 30000): address already in use
`

func TestDiagnoseFileHuman(t *testing.T) {
	p := writeFile(t, filepath.Join(t.TempDir(), "server.log"), diagKVTooSmallLog)
	code, out, errs := runMain(t, "diagnose", "-file", p)
	if code != ExitOK || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{
		"Diagnosis: kv_too_small (KV cache too small for max_model_len)",
		"max_model_len 221000: it needs 10.12 GiB, 5.59 GiB is available; the engine estimates max_model_len 122080 fits.",
		"Cause:  After the weights",
		"Evidence (" + p + "):",
		"  3 | (EngineCore_DP0 pid=4242) INFO 02-20 09:14:58 [gpu_worker.py:298] Available KV cache memory: 5.59 GiB",
		"  5 | (EngineCore_DP0 pid=4242) ERROR 02-20 09:14:58 [core.py:708] ValueError: To serve at least one request",
		"Action: Lower max_model_len",
		"`roofline vram",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("colour codes without a terminal")
	}
}

func TestDiagnoseJSON(t *testing.T) {
	p := writeFile(t, filepath.Join(t.TempDir(), "server.log"), diagPortLog)
	for _, flag := range []string{"-json", "--json"} {
		code, out, errs := runMain(t, "diagnose", flag, "-file", p)
		if code != ExitOK || errs != "" {
			t.Fatalf("%s: exit %d, stderr %q", flag, code, errs)
		}
		var got struct {
			Class, Title, Summary, Cause, Action, File string
			Evidence                                   []struct {
				Line int
				Text string
			}
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%s: %v\n%s", flag, err, out)
		}
		if got.Class != "port_in_use" || got.Summary != "Port 30000 (0.0.0.0) is already in use." || got.File != p ||
			got.Cause == "" || got.Action == "" || got.Title == "" {
			t.Errorf("%s: %+v", flag, got)
		}
		if len(got.Evidence) != 1 || got.Evidence[0].Line != 2 || !strings.HasPrefix(got.Evidence[0].Text, "[2025-12-11 10:00:30] ERROR:    [Errno 98]") {
			t.Errorf("%s: evidence %+v", flag, got.Evidence)
		}
		// The JSON keys are part of the interface.
		for _, key := range []string{`"class":`, `"summary":`, `"cause":`, `"action":`, `"evidence":`, `"line":`, `"text":`} {
			if !strings.Contains(out, key) {
				t.Errorf("%s: JSON lacks %s", flag, key)
			}
		}
	}
}

func TestDiagnoseUnknownAndStdin(t *testing.T) {
	code, out, _ := runMainIn(t, "some program output\nAttributeError: 'NoneType' object has no attribute 'shape'\n", "diagnose", "-json", "-file", "-")
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	var got struct {
		Class    string
		Evidence []struct{ Line int }
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Class != "unknown" || len(got.Evidence) != 1 || got.Evidence[0].Line != 2 {
		t.Errorf("got %+v", got)
	}
	// No error at all: still a diagnosis, with an empty evidence array.
	code, out, _ = runMainIn(t, "INFO:     Application startup complete.\n", "diagnose", "-json", "-file", "-")
	if code != ExitOK || !strings.Contains(out, `"evidence": []`) {
		t.Errorf("exit %d:\n%s", code, out)
	}
	code, out, _ = runMain(t, "diagnose", "-file", "-")
	if code != ExitOK || !strings.Contains(out, "Evidence: none") || !strings.Contains(out, "The log is empty.") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

func TestDiagnoseErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.log")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"diagnose"}, "name a SERVER, or give a log with -file LOG"},
		{[]string{"diagnose", "-file", missing}, "no log file at " + missing},
		{[]string{"diagnose", "-file", missing, "qwen3"}, "give either SERVER or -file LOG, not both"},
		{[]string{"diagnose", "a", "b"}, "unexpected argument b"},
		{[]string{"diagnose", "../../etc/passwd"}, "is not a server name"},
		{[]string{"diagnose", "-fiel", "x"}, `unknown flag -fiel. Did you mean "-file"?`},
		{[]string{"diagnose", "-file", t.TempDir()}, "cannot read the log"},
	}
	for _, tt := range tests {
		code, out, errs := runMain(t, tt.args...)
		if code != ExitError || out != "" || !strings.Contains(errs, tt.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and %q", tt.args, code, out, errs, tt.want)
		}
	}
}

// TestDiagnoseServerLog: SERVER is looked up under the state directory.
func TestDiagnoseServerLog(t *testing.T) {
	dir := t.TempDir()
	cfg := &config.Config{Dir: dir, Roofline: &config.Roofline{StateDir: "state"},
		Servers: map[string]*config.Server{"qwen3": {Name: "qwen3"}, "llama": {Name: "llama"}}}
	want := writeFile(t, filepath.Join(dir, "state/logs/qwen3.log"), diagKVTooSmallLog)

	path, err := cfg.ServerLogPath("qwen3")
	if err != nil || path != want {
		t.Fatalf("ServerLogPath = %q, %v; want %q", path, err, want)
	}
	d, err := engine.LogsOf("").ClassifyFile(path, nil)
	if err != nil || d.Class != "kv_too_small" {
		t.Errorf("ClassifyFile = %s, %v", d.Class, err)
	}

	// A server of the config that has not been started yet.
	if _, err := cfg.ServerLogPath("llama"); err == nil || !strings.Contains(err.Error(), `no log for server "llama"`) ||
		!strings.Contains(err.Error(), "roofline apply") {
		t.Errorf("missing log: %v", err)
	}
	// A misspelt server.
	if _, err := cfg.ServerLogPath("qwen4"); err == nil || !strings.Contains(err.Error(), `no server "qwen4" in the configuration`) ||
		!strings.Contains(err.Error(), `Did you mean "qwen3"?`) || !strings.Contains(err.Error(), "Servers: llama, qwen3.") {
		t.Errorf("unknown server: %v", err)
	}
}

// TestDiagnoseServerNoConfig: without a loadable configuration, SERVER
// fails with a hint to use -file.
func TestDiagnoseServerNoConfig(t *testing.T) {
	t.Chdir(t.TempDir())
	code, out, errs := runMain(t, "diagnose", "qwen3")
	if code != ExitError || out != "" || !strings.Contains(errs, "give the log with -file LOG") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// A misspelt global flag is named with the one it is closest to, as a
// command's flags are.
func TestUnknownGlobalFlag(t *testing.T) {
	for args, want := range map[string]string{
		"-chdr=x plan":   `unknown global flag -chdr=x. Did you mean "-chdir"?`,
		"-nocolor plan":  `unknown global flag -nocolor. Did you mean "-no-color"?`,
		"-zzzzzzzz plan": "unknown global flag -zzzzzzzz.\n",
	} {
		code, out, errs := runMain(t, strings.Fields(args)...)
		if code != ExitError || out != "" || !strings.Contains(errs, want) || !strings.Contains(errs, "Global flags are -chdir=DIR and -no-color") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want %q", args, code, out, errs, want)
		}
	}
}

// TestGlobalFlagAfterTheCommand: -chdir after the command says where it
// goes (it said only "unknown flag -chdir=w."), and a -chdir that is not a
// directory says so without Go's "chdir nope:".
func TestGlobalFlagAfterTheCommand(t *testing.T) {
	code, out, errs := runMain(t, "plan", "-chdir=w")
	if code != ExitError || out != "" || !strings.Contains(errs, "-chdir is a global option: put it before the command: roofline -chdir=DIR plan") {
		t.Errorf("plan -chdir=w: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	missing := filepath.Join(t.TempDir(), "nope")
	code, _, errs = runMain(t, "-chdir="+missing, "plan")
	if code != ExitError || !strings.Contains(errs, "-chdir="+missing+": no such directory") || strings.Contains(errs, "chdir "+missing) {
		t.Errorf("-chdir=nope: exit %d, stderr %q", code, errs)
	}
}

// TestUnknownFlagFromTheEnvironment: a bad flag that ROOFLINE_CLI_ARGS or
// ROOFLINE_CLI_ARGS_<command> added says where it comes from (the user
// never typed it).
func TestUnknownFlagFromTheEnvironment(t *testing.T) {
	t.Setenv("ROOFLINE_CLI_ARGS_state_list", "-bogus")
	code, _, errs := runMain(t, "state", "list")
	if code != ExitError || !strings.Contains(errs, "unknown flag -bogus.") || !strings.Contains(errs, "It comes from ROOFLINE_CLI_ARGS_state_list.") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	t.Setenv("ROOFLINE_CLI_ARGS_state_list", "")
	if _, _, errs := runMain(t, "state", "list", "-bogus"); strings.Contains(errs, "It comes from") {
		t.Errorf("a typed flag is said to come from the environment: %q", errs)
	}
}
