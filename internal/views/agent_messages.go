package views

import (
	"fmt"
	"time"

	"github.com/roofline/roofline/internal/apply"
)

// LogHooks are apply's progress lines in the agent's log (apply.Hooks).
type LogHooks struct{ Logf func(string, ...any) }

// Begin logs the start of a step.
func (h LogHooks) Begin(addr, verb string) { h.Logf("%s: %s", addr, verb) }

// Progress logs nothing: the agent's log keeps a line per step.
func (h LogHooks) Progress(string, time.Duration, string) {}

// End logs a step's end, how long it took and its detail.
func (h LogHooks) End(addr, verb string, elapsed time.Duration, detail string) {
	h.Logf("%s: %s after %s [%s]", addr, verb, elapsed.Round(100*time.Millisecond), detail)
}

// AgentUnprotected refuses an agent endpoint that other hosts can reach
// without a token.
func (v *View) AgentUnprotected(listen string) {
	fmt.Fprintf(v.Err, "Error: -listen=%s is reachable from other hosts, and no token protects it\n\nSet $ROOFLINE_AGENT_TOKEN or -token-file=FILE (its first line is the bearer token), or listen on loopback.\n", listen)
}

var _ apply.Hooks = LogHooks{}
