package plan

import (
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/driver/docker"
	"github.com/roofline/roofline/internal/driver/process"
	"github.com/roofline/roofline/internal/state"
)

// testDrivers chooses each server's driver as cli's set does: by each
// driver's own rule (driver.About.Runs).
var testDrivers = driver.NewSet().Register(state.DriverProcess, nil, process.About{}).Register(state.DriverDocker, nil, docker.About{})

// TestDriverChoice: plan takes each server's driver from the set's choice
// (each driver's own rule: an image means docker), and a server that no
// driver runs is an error on its block.
func TestDriverChoice(t *testing.T) {
	imageEngine := `
engine "vllm_image" {
  kind    = "vllm"
  version = "0.16.0"
  image   = "vllm/vllm-openai@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
}
server "boxed" {
  engine = engine.vllm_image
  model  = model.qwen
  gpus   = [1]
  port   = 8001
}
`
	p := run(t, tc{hcl: qwenServer + imageEngine})
	if p.HasErrors() {
		t.Fatal(summaries(p))
	}
	for name, want := range map[string]string{"qwen": state.DriverProcess, "boxed": state.DriverDocker} {
		if c := wantAction(t, p, name, Create); c.After.Driver != want {
			t.Errorf("server %s: driver %q, want %q", name, c.After.Driver, want)
		}
	}

	// Only docker: the host engine's server has no driver.
	saved := testDrivers
	testDrivers = driver.NewSet().Register(state.DriverDocker, nil, docker.About{})
	defer func() { testDrivers = saved }()
	p = run(t, tc{hcl: qwenServer + imageEngine})
	var found bool
	for _, d := range p.Diagnostics {
		if d.Summary == "No driver runs this server" && strings.Contains(d.Detail, `no driver of this roofline runs server "qwen" (it has docker)`) && d.Subject != nil {
			found = true
		}
	}
	if !found || p.Change("boxed") == nil {
		t.Errorf("a server no driver runs: %v", summaries(p))
	}
}
