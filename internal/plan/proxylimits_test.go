package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/state"
)

const limitsHCL = `
server "qwen" {
  engine                 = engine.vllm_016
  model                  = model.qwen
  gpus                   = [0]
  port                   = 8000
  max_model_len          = 32768
  gpu_memory_utilization = 0.45
  lifecycle {
    create_before_destroy = true
  }
  proxy {
    max_body     = "128MiB"
    idle_timeout = "30s"
  }
}
`

// A changed proxy limit is an update in place: the engine keeps running,
// the proxy takes the new limits; the plan names each one.
func TestProxyLimitsChange(t *testing.T) {
	first := run(t, tc{hcl: limitsHCL})
	c := wantAction(t, first, "qwen", Create)
	want := &state.ProxyLimits{MaxBody: 128 << 20, IdleTimeout: 30 * time.Second}
	if !c.After.ProxyLimits.Equal(want) {
		t.Fatalf("desired limits %+v, want %+v", c.After.ProxyLimits, want)
	}
	st, obs := stateFrom(first)
	s := st.Servers["qwen"]
	s.Proxy = &state.Instance{Driver: state.DriverProcess, PID: 4000}
	s.ProxyLimits = want

	// Unchanged: no change; an engine setting keeps replacing as before.
	if p := run(t, tc{hcl: limitsHCL, prior: st, observed: obs}); p.HasChanges() {
		t.Fatalf("unchanged limits: %v", p.Change("qwen").Reason)
	}
	changed := strings.Replace(limitsHCL, `max_body     = "128MiB"`, `max_body     = "1GiB"
    max_connections = 100`, 1)
	p := run(t, tc{hcl: changed, prior: st, observed: obs})
	c = wantAction(t, p, "qwen", Update)
	if !strings.Contains(c.Reason, "proxy limits changed (max_body 128MiB -> 1GiB, max_connections default -> 100)") || !strings.Contains(c.Reason, "no restart") {
		t.Fatalf("reason %q", c.Reason)
	}
	var human strings.Builder
	RenderHuman(&human, p.ToJSON(), func(s string) string { return s })
	if !strings.Contains(human.String(), "~[reset] proxy    = max_body 128MiB -> 1GiB, max_connections default -> 100 (the running proxy takes them: no restart, no connection cut)") {
		t.Fatalf("the plan should show the limits change:\n%s", human.String())
	}
	// Removed block: back to the defaults, also in place.
	noBlock := limitsHCL[:strings.Index(limitsHCL, "  proxy {")] + "}\n"
	p = run(t, tc{hcl: noBlock, prior: st, observed: obs})
	if c := wantAction(t, p, "qwen", Update); !strings.Contains(c.Reason, "max_body 128MiB -> default") {
		t.Fatalf("reason %q", c.Reason)
	}
}

// A proxy block needs a proxy in front of the server.
func TestProxyBlockWithoutProxy(t *testing.T) {
	hcl := strings.Replace(limitsHCL, "create_before_destroy = true", "create_before_destroy = false", 1)
	p := run(t, tc{hcl: hcl})
	found := false
	for _, d := range p.Diagnostics {
		if d.Summary == "Proxy block without a proxy" && d.Subject != nil && d.Subject.Start.Line > 0 {
			found = true
		}
	}
	if !found {
		t.Fatalf("want an error at the proxy block: %v", summaries(p))
	}
}
