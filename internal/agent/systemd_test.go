package agent

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestSystemdUnits verifies examples/systemd with systemd-analyze (the
// binary path replaced by an executable that exists here), and that the
// watchdog leaves the agent's tick room.
func TestSystemdUnits(t *testing.T) {
	src := "../../examples/systemd"
	dir := t.TempDir()
	units, _ := filepath.Glob(filepath.Join(src, "*.service"))
	timers, _ := filepath.Glob(filepath.Join(src, "*.timer"))
	if len(units) != 2 || len(timers) != 1 {
		t.Fatalf("want 2 services and a timer in %s, have %v %v", src, units, timers)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, u := range append(units, timers...) {
		b, err := os.ReadFile(u)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.Base(u))
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(string(b), "/usr/local/bin/roofline", self)), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}

	settings, err := LoadSettings(filepath.Join(src, "agent.json"), DefaultSettings())
	if err != nil {
		t.Fatal(err)
	}
	unit, _ := os.ReadFile(filepath.Join(src, "roofline-agent.service"))
	m := regexp.MustCompile(`(?m)^WatchdogSec=(\d+)$`).FindSubmatch(unit)
	if m == nil {
		t.Fatal("roofline-agent.service has no WatchdogSec")
	}
	wd, _ := time.ParseDuration(string(m[1]) + "s")
	if wd < 3*settings.Tick {
		t.Errorf("WatchdogSec=%s is under 3 ticks of %s", wd, settings.Tick)
	}
	for _, want := range []string{"Type=notify", "Restart=on-failure", "StateDirectory=roofline", "KillMode=process", "ExecReload=/bin/kill -HUP $MAINPID"} {
		if !strings.Contains(string(unit), want) {
			t.Errorf("roofline-agent.service lacks %s", want)
		}
	}

	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (Debian: apt-get install systemd); the units were not verified")
	}
	out, err := exec.Command(sa, append([]string{"verify", "--man=no"}, paths...)...).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}
