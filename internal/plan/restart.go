package plan

import (
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// RestartSkip says why the agent leaves a server it meant to restart:
// Lasting when only a roofline apply can change that.
type RestartSkip struct {
	Reason  string
	Lasting bool
}

// Restarts narrows p, a plan restricted to targets and kept, to what the
// agent restarts: a target whose change starts its applied server again,
// unchanged. Any other target is skipped, with the reason. kept servers
// (a previous instance kept for rollback) stay in the plan as no-ops, so
// that apply's recovery reads their keep_previous. p is left whole when
// nothing is restarted.
func (p *Plan) Restarts(targets, kept []string) (restart []string, skipped map[string]RestartSkip) {
	skipped = map[string]RestartSkip{}
	var keep, keptChanges []*Change
	for _, c := range p.Changes {
		if !slices.Contains(targets, c.Name) {
			if c.After != nil && slices.Contains(kept, c.Name) {
				c.Action = NoOp
				keptChanges = append(keptChanges, c)
			}
			continue
		}
		switch {
		case c.Action == Update && c.ProxyGone:
			keep = append(keep, c) // a new proxy; the engine is left running
			restart = append(restart, c.Name)
		case c.Action == NoOp || c.Action == Update:
			skipped[c.Name] = RestartSkip{Reason: "nothing to do: it serves again"}
		case c.Before == nil || c.After == nil || c.Action == Delete:
			skipped[c.Name] = RestartSkip{"the plan would " + strings.Join(c.Action.JSON(), " and ") + " it: left to roofline apply", true}
		case c.Before.ConfigHash != c.After.ConfigHash:
			skipped[c.Name] = RestartSkip{"its configuration changed since the last apply (" + c.Reason + "): the agent restarts only what was applied; run roofline apply", true}
		default:
			keep = append(keep, c)
			restart = append(restart, c.Name)
		}
	}
	if len(keep) > 0 {
		p.Changes = append(keep, keptChanges...)
	}
	return restart, skipped
}

// EndWindows narrows p, a plan restricted to servers that keep a previous
// instance for rollback, to the windows that ended: those changes stay
// (apply stops the previous instance), every other server stays as a
// no-op (its window runs on: apply's recovery reads it here). retired
// names the ended ones; p is left whole when there are none.
func (p *Plan) EndWindows() (retired []string) {
	var keep []*Change
	for _, c := range p.Changes {
		if c.After == nil {
			continue
		}
		if c.Action == Update && strings.Contains(c.Reason, "rollback window ended") {
			retired = append(retired, c.Name)
		} else {
			c.Action = NoOp
		}
		keep = append(keep, c)
	}
	if len(retired) > 0 {
		p.Changes = keep
	}
	return retired
}

// ErrorsText is the plan's errors in one line, "summary: detail" joined
// with "; ", for a log that cannot show diagnostics.
func (p *Plan) ErrorsText() string {
	var msgs []string
	for _, d := range p.Diagnostics {
		if d.Severity == hcl.DiagError {
			msgs = append(msgs, d.Summary+": "+d.Detail)
		}
	}
	return strings.Join(msgs, "; ")
}
