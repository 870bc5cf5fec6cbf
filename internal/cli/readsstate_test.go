package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/state/statetest"
)

// TestReadingTheStateNeedsNoSecret: with the API key in a sensitive
// variable (README's example), status, logs, show, journal and state
// list/show work without its value; plan still asks for it.
func TestReadingTheStateNeedsNoSecret(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), `roofline {
  state_dir = ".state"
}
variable "api_key" {
  type      = string
  sensitive = true
}
engine "e" {
  kind      = "vllm"
  version   = "0.16.0"
  rehearsal = true
}
model "m" {
  path = "m"
}
server "web" {
  engine  = engine.e
  model   = model.m
  gpus    = [0]
  port    = 8000
  api_key = var.api_key
}
`)
	st := state.NewFile()
	web := statetest.Server("web")
	web.LogPath = filepath.Join(dir, ".state", "logs", "web.log")
	st.Set(web)
	if err := state.NewFilesystem(filepath.Join(dir, ".state")).Write(st); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, ".state", "logs", "web.log"), "INFO engine started\n")
	t.Setenv("ROOFLINE_VAR_api_key", "restored after the test")
	os.Unsetenv("ROOFLINE_VAR_api_key")
	for _, args := range [][]string{{"status"}, {"logs", "web"}, {"show"}, {"journal"}, {"state", "list"}, {"state", "show", "server.web"}} {
		code, out, errOut := runMain(t, append([]string{"-chdir=" + dir, "-no-color"}, args...)...)
		if code == ExitError || strings.Contains(errOut, "No value for required variable") {
			t.Errorf("%s: exit %d\n%s\n%s", strings.Join(args, " "), code, out, errOut)
		}
	}
	if code, _, errOut := runMain(t, "-chdir="+dir, "-no-color", "plan"); code != ExitError || !strings.Contains(errOut, "No value for required variable") {
		t.Errorf("plan without the secret: exit %d\n%s", code, errOut)
	}

	// Nor do the commands that never start a server: init (the first
	// command after writing the configuration), flags, snapshot (the
	// host's timer for code review), force-unlock, state mv and state rm.
	old := selfExecutable
	selfExecutable = func() (string, error) { return "/bin/false", nil }
	t.Cleanup(func() { selfExecutable = old })
	inv, _ := filepath.Abs("../../examples/rehearsal/gpus.json")
	for _, tt := range []struct {
		args []string
		ok   bool // exit 0 expected (init and flags probe a stand-in that fails)
	}{
		{[]string{"init"}, false},
		{[]string{"flags", "e"}, false},
		{[]string{"snapshot", "-inventory=" + inv, "-out=" + filepath.Join(t.TempDir(), "host.json")}, true},
		{[]string{"force-unlock", "0123"}, false},
		{[]string{"state", "mv", "server.web", "server.web2"}, true},
		{[]string{"state", "rm", "server.web2"}, true},
	} {
		code, out, errOut := runMain(t, append([]string{"-chdir=" + dir, "-no-color"}, tt.args...)...)
		if strings.Contains(errOut, "No value for required variable") || tt.ok && code != ExitOK {
			t.Errorf("%s: exit %d\n%s\n%s", strings.Join(tt.args, " "), code, out, errOut)
		}
	}
}
