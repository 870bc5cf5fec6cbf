package views

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
)

func TestLogHooks(t *testing.T) {
	var lines []string
	h := LogHooks{Logf: func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) }}
	h.Begin("server.a", "Restarting")
	h.Progress("server.a", time.Second, "loading")
	h.End("server.a", "Restarted", 1234*time.Millisecond, "pid 7")
	if want := []string{"server.a: Restarting", "server.a: Restarted after 1.2s [pid 7]"}; strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("%q, want %q", lines, want)
	}
}

func TestAgentUnprotected(t *testing.T) {
	var errb bytes.Buffer
	(&View{Err: &errb}).AgentUnprotected("0.0.0.0:9478")
	if want := "Error: -listen=0.0.0.0:9478 is reachable from other hosts, and no token protects it\n\nSet $ROOFLINE_AGENT_TOKEN or -token-file=FILE (its first line is the bearer token), or listen on loopback.\n"; errb.String() != want {
		t.Errorf("%q, want %q", errb.String(), want)
	}
}

func TestClusterPlan(t *testing.T) {
	warn := &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Old image", Detail: "pinned by tag"}
	bad := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "No such namespace", Detail: "ns"}
	for _, tc := range []struct {
		name        string
		diags       hcl.Diagnostics
		plan, error bool // whether the plan, an error show
	}{
		{"clean", nil, true, false},
		{"warning", hcl.Diagnostics{warn}, true, false},
		{"error", hcl.Diagnostics{bad, warn}, false, true},
	} {
		var out, errb bytes.Buffer
		(&View{Out: &out, Err: &errb}).ClusterPlan(nil, tc.diags, "\n  # server.a will be created on cluster.k\n")
		if got := strings.Contains(out.String(), "will be created"); got != tc.plan {
			t.Errorf("%s: plan shown %v, want %v: %q", tc.name, got, tc.plan, out.String())
		}
		if got := strings.Contains(errb.String(), "No such namespace"); got != tc.error {
			t.Errorf("%s: error shown %v: %q", tc.name, got, errb.String())
		}
		if got := strings.Contains(out.String(), "Old image"); got != (len(tc.diags) > 0) {
			t.Errorf("%s: warning shown %v: %q", tc.name, got, out.String())
		}
	}
}
