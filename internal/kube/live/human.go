package live

import (
	"fmt"
	"strings"
)

// Human renders the plan in roofline's plan format: drift first, then one
// block per changed server with its objects' diffs, then the counts.
func Human(p *Plan) string {
	var b strings.Builder
	where := "cluster." + p.Cluster
	if len(p.Drift) > 0 {
		fmt.Fprintf(&b, "\nNote: Objects have changed outside of roofline on %s (namespace %s)\n", where, p.Namespace)
		for _, d := range p.Drift {
			fmt.Fprintf(&b, "\n  # %s: %s\n", d.Addr, d.Summary)
			if d.Detail != "" {
				fmt.Fprintf(&b, "    %s\n", d.Detail)
			}
		}
	}
	add, change, destroy := 0, 0, 0
	for _, sp := range p.Servers {
		switch sp.Action {
		case NoOp:
			continue
		case Create:
			add++
		case Update:
			change++
		case Delete:
			destroy++
		case CreateThenDelete, DeleteThenCreate:
			add++
			destroy++
		}
		fmt.Fprintf(&b, "\n  # %s %s on %s (namespace %s)", sp.Addr, phrase(sp.Action), where, p.Namespace)
		if sp.Reason != "" {
			fmt.Fprintf(&b, ": %s", sp.Reason)
		}
		b.WriteString("\n")
		if r := sp.Rendered; r != nil {
			kind := "Deployment"
			if r.Nodes > 1 {
				kind = fmt.Sprintf("LeaderWorkerSet, %d nodes per replica", r.Nodes)
			}
			fmt.Fprintf(&b, "    %d replica(s) × %d pod(s) × %d %s (%s)\n", r.Replicas, r.Nodes, r.GPUsPerPod, r.GPUResource, kind)
		}
		for _, o := range sp.Objects {
			if o.Action == NoOp {
				continue
			}
			force := ""
			if o.Force {
				force = " (taking back fields edited by hand)"
			}
			fmt.Fprintf(&b, "  %s %s %s%s\n", o.Action.Symbol(), o.Kind, o.Name, force)
			if o.Action != Delete {
				for _, l := range strings.Split(strings.TrimRight(o.Diff, "\n"), "\n") {
					if strings.HasPrefix(l, "---") || strings.HasPrefix(l, "+++") || l == "" {
						continue
					}
					fmt.Fprintf(&b, "      %s\n", l)
				}
			}
		}
		if sp.ArgvDiff != "" {
			b.WriteString("    argv:\n")
			for _, l := range strings.Split(strings.TrimRight(sp.ArgvDiff, "\n"), "\n") {
				if strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "---") || strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "+++") {
					fmt.Fprintf(&b, "      %s\n", l)
				}
			}
		}
		if sp.Downtime != "" {
			fmt.Fprintf(&b, "    Downtime: %s\n", sp.Downtime)
		}
	}
	if add+change+destroy == 0 {
		fmt.Fprintf(&b, "\nNo changes. The servers on %s match the configuration.\n", where)
		return b.String()
	}
	fmt.Fprintf(&b, "\nPlan: %d to add, %d to change, %d to destroy.\n", add, change, destroy)
	return b.String()
}

func phrase(a Action) string {
	switch a {
	case Create:
		return "will be created"
	case Update:
		return "will be updated in place"
	case Delete:
		return "will be destroyed"
	case CreateThenDelete:
		return "will be replaced blue/green (new generation gated, then the Service switches)"
	case DeleteThenCreate:
		return "will be replaced, destroy first (downtime)"
	}
	return string(a)
}
