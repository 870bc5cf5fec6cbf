package views

import (
	"fmt"

	"github.com/roofline/roofline/internal/agent"
)

// Check is roofline check's view: one observation of every server.
type Check interface {
	Report(rep *agent.Report)
}

// NewCheck returns the check view of type vt.
func NewCheck(vt ViewType, v *View) Check {
	if vt == ViewJSON {
		return CheckJSON{v}
	}
	return CheckHuman{v}
}

// CheckJSON writes the report as JSON.
type CheckJSON struct{ view *View }

func (c CheckJSON) Report(rep *agent.Report) { WriteReport(c.view.Out, rep) }

// CheckHuman prints one line per server, then what drifted, why it is
// down and what the agent did.
type CheckHuman struct{ view *View }

func (c CheckHuman) Report(rep *agent.Report) {
	w := c.view.Out
	if len(rep.Servers) == 0 {
		fmt.Fprintln(w, "No servers in the state.")
		return
	}
	for _, r := range rep.Servers {
		verdict := "up"
		if !r.Up {
			verdict = "DOWN"
		}
		fmt.Fprintf(w, "server.%s: %s (%s", r.Name, verdict, r.Status)
		if r.PID > 0 && r.Alive {
			fmt.Fprintf(w, ", pid %d", r.PID)
		}
		fmt.Fprintf(w, ", port %d)", r.Port)
		if r.Restarts > 0 {
			fmt.Fprintf(w, ", restarted %d time(s) by the agent", r.Restarts)
		}
		fmt.Fprintln(w)
		if r.Drift != "" {
			fmt.Fprintf(w, "  drift: %s\n", r.Drift)
		}
		if r.Detail != "" {
			fmt.Fprintf(w, "  %s\n", r.Detail)
		}
		if r.FailureClass != "" {
			fmt.Fprintf(w, "  cause (%s): %s\n", r.FailureClass, r.FailureCause)
		}
		if r.GaveUp {
			fmt.Fprintf(w, "  the agent gave up after %d failed restart(s); fix the cause and run roofline apply\n", r.Failures)
		}
	}
	if rep.Drift > 0 {
		fmt.Fprintf(w, "\n%d server(s) drifted from the state.\n", rep.Drift)
	}
}
