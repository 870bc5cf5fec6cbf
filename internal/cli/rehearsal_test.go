package cli

import (
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/engine/refdata"
)

// The rehearsal command passes the engine's arguments through untouched:
// roofline's own flag parsing must not see them.
func TestRehearsalPassesArgsThrough(t *testing.T) {
	all16, _ := refdata.Help("vllm", "0.16.0")
	short16, _ := refdata.HelpShort("vllm", "0.16.0")
	all085, _ := refdata.Help("vllm", "0.8.5")
	sgl, _ := refdata.Help("sglang", "0.5.6.post2")
	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     string // exact, when set
		stderrLast string // last stderr line, when set
	}{
		{"vllm version", []string{"vllm@0.16.0", "--version"}, 0, "0.16.0\n", ""},
		{"sglang version", []string{"sglang@0.5.6.post2", "-c", "import sglang; print(sglang.__version__)"}, 0, "0.5.6.post2\n", ""},
		{"help=all", []string{"vllm@0.16.0", "serve", "--help=all"}, 0, all16, ""},
		{"engine's --help, not roofline's", []string{"vllm@0.16.0", "serve", "--help"}, 0, short16, ""},
		{"engine's -h", []string{"vllm@0.8.5", "serve", "-h"}, 0, all085, ""},
		{"sglang --help", []string{"sglang@0.5.6.post2", "-m", "sglang.launch_server", "--help"}, 0, sgl, ""},
		{"roofline-looking flag is the engine's", []string{"vllm@0.16.0", "serve", "/m", "-json"}, 2, "", "vllm serve: error: unrecognized arguments: -json"},
		{"argparse error", []string{"vllm@0.8.5", "serve", "/m", "--port", "x"}, 2, "", "vllm serve: error: argument --port: invalid int value: 'x'"},
		{"unknown version", []string{"vllm@0.1.0", "--version"}, 1, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runMain(t, append([]string{"rehearsal"}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr)
			}
			if tt.stdout != "" && stdout != tt.stdout {
				t.Errorf("stdout differs (%d bytes, want %d)", len(stdout), len(tt.stdout))
			}
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			if tt.stderrLast != "" && lines[len(lines)-1] != tt.stderrLast {
				t.Errorf("stderr ends with %q, want %q", lines[len(lines)-1], tt.stderrLast)
			}
		})
	}
}

func TestRehearsalIsHiddenAndNeedsASpec(t *testing.T) {
	if c := commands["rehearsal"]; c == nil || !c.Hidden {
		t.Fatal("rehearsal must be registered as a hidden command")
	}
	for _, n := range topLevelNames() {
		if n == "rehearsal" {
			t.Error("rehearsal is listed in help")
		}
	}
	code, _, stderr := runMain(t, "rehearsal")
	if code != ExitError || !strings.Contains(stderr, "KIND@VERSION") {
		t.Errorf("no spec: exit %d, stderr %q", code, stderr)
	}
}
