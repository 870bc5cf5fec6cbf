package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/model/modeltest"
	"github.com/roofline/roofline/internal/portcheck"
)

// TestExampleListensPrivately applies examples/rehearsal (on free ports):
// every engine behind a proxy listens on 127.0.0.1 only, inside the backend
// port range; each proxy listens on exactly its server's host; every other
// engine on the address plan shows.
func TestExampleListensPrivately(t *testing.T) {
	src, err := os.ReadFile("../../examples/rehearsal/main.hcl")
	if err != nil {
		t.Fatal(err)
	}
	moe := filepath.Join(models, "qwen3-30b-a3b")
	if _, err := os.Stat(moe); err != nil {
		if err := modeltest.Write(moe, modeltest.Qwen3_30B_A3B); err != nil {
			t.Fatal(err)
		}
	}
	cfg := strings.NewReplacer(`"models/`, `"@MODELS@/`, "18000", "@PORT_A@", "18001", "@PORT_B@", "18002", "@PORT_C@").Replace(string(src))
	// The rehearsal engines load in 300 ms here.
	cfg = strings.ReplaceAll(cfg, "rehearsal = true", `rehearsal = true
  env       = { ROOFLINE_REHEARSAL_LOAD_TIME = "300ms" }`)
	e := newEnv(t, cfg)
	p := e.mustRun(0, "plan", "-no-color")
	for _, want := range []string{
		fmt.Sprintf("listen   = 127.0.0.1:%d (roofline's proxy), engine on 127.0.0.1:20000-29999", e.ports["@PORT_B@"]),
		fmt.Sprintf("listen   = 0.0.0.0:%d (the engine)", e.ports["@PORT_A@"]),
		fmt.Sprintf("listen   = 127.0.0.1:%d (the engine)", e.ports["@PORT_C@"]),
	} {
		if !strings.Contains(p.stdout, want) {
			t.Errorf("plan should show %q:\n%s", want, p.stdout)
		}
	}
	e.mustRun(0, "apply", "-auto-approve")
	st := e.status()

	check := func(port int, wantAddr string) {
		t.Helper()
		ls := portcheck.Listeners(port)
		if len(ls) == 0 {
			t.Errorf("nothing listens on port %d", port)
		}
		for _, l := range ls {
			if l.Addr != wantAddr {
				t.Errorf("port %d: a socket of %s listens on %s, want only %s", port, l.Who(), l.Addr, wantAddr)
			}
		}
	}
	b := st["qwen3_new"]
	if b.BackendPort < 20000 || b.BackendPort > 29999 {
		t.Errorf("the engine behind the proxy listens on %d, outside backend_ports 20000-29999", b.BackendPort)
	}
	check(b.BackendPort, fmt.Sprintf("127.0.0.1:%d", b.BackendPort))
	check(e.ports["@PORT_B@"], fmt.Sprintf("127.0.0.1:%d", e.ports["@PORT_B@"]))
	check(e.ports["@PORT_A@"], fmt.Sprintf("0.0.0.0:%d", e.ports["@PORT_A@"]))
	check(e.ports["@PORT_C@"], fmt.Sprintf("127.0.0.1:%d", e.ports["@PORT_C@"]))

	if ss, err := exec.LookPath("ss"); err == nil {
		out, _ := exec.Command(ss, "-ltnp").CombinedOutput()
		re := regexp.MustCompile(fmt.Sprintf(`:(%d|%d|%d|%d)\b`, b.BackendPort, e.ports["@PORT_A@"], e.ports["@PORT_B@"], e.ports["@PORT_C@"]))
		for _, l := range strings.Split(string(out), "\n") {
			if re.MatchString(l) {
				t.Log(l)
			}
		}
	}
}
