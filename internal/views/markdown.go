package views

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/roofline/roofline/internal/plan"
)

// PlanMarkdown writes a plan for a pull request comment: the risk line
// first (replacements with downtime and how long the last start took,
// destroys, warnings), then one collapsible section per changed server
// with the argument diff and where each flag is set, environment changes
// per key, model files, capacity before → after and the gate.
func PlanMarkdown(w io.Writer, j *plan.JSONPlan) {
	fmt.Fprintf(w, "#### roofline plan\n\n")
	fmt.Fprintf(w, "%s\n\n", riskLine(j))
	if line := plan.SnapshotLine(j); line != "" {
		fmt.Fprintf(w, "Host snapshot: %s. A review plan: it cannot be applied.\n\n", mdText(line))
	}
	if len(j.ResourceDrift) > 0 {
		fmt.Fprintf(w, "**Drift** (changed outside roofline):\n\n")
		for _, d := range j.ResourceDrift {
			fmt.Fprintf(w, "- `%s`: %s", d.Addr, mdText(d.Summary))
			if d.Detail != "" {
				fmt.Fprintf(w, " (%s)", mdText(d.Detail))
			}
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w)
	}
	changed := 0
	for _, ch := range j.ResourceChanges {
		act := plan.ActionFromJSON(ch.Actions)
		if act == plan.NoOp {
			continue
		}
		changed++
		serverSection(w, ch, act)
	}
	if changed == 0 {
		fmt.Fprintf(w, "**No changes.** The servers match the configuration.\n\n")
	} else {
		fmt.Fprintf(w, "**Plan:** %d to add, %d to change, %d to destroy.\n\n", j.Summary["add"], j.Summary["change"], j.Summary["destroy"])
	}
	warningsSection(w, j)
}

// riskLine is the first line a reviewer reads.
func riskLine(j *plan.JSONPlan) string {
	var downtime, destroys []string
	for _, ch := range j.ResourceChanges {
		switch plan.ActionFromJSON(ch.Actions) {
		case plan.DeleteThenCreate:
			s := "`" + ch.Address + "`"
			if d := lastStart(ch); d > 0 {
				s += fmt.Sprintf(" (its last start took %s)", d.Round(time.Second))
			}
			downtime = append(downtime, s)
		case plan.Delete:
			destroys = append(destroys, "`"+ch.Address+"`")
		}
	}
	warnings := 0
	for _, d := range j.Diagnostics {
		if d.Severity == "warning" {
			warnings++
		}
	}
	errors := len(j.Diagnostics) - warnings
	var parts []string
	if errors > 0 {
		parts = append(parts, plural(errors, "error", "errors")+": the plan cannot be applied")
	}
	if len(downtime) > 0 {
		parts = append(parts, plural(len(downtime), "replacement with downtime", "replacements with downtime")+": "+strings.Join(downtime, ", "))
	} else {
		parts = append(parts, "no downtime")
	}
	if len(destroys) > 0 {
		parts = append(parts, plural(len(destroys), "destroy", "destroys")+": "+strings.Join(destroys, ", "))
	} else {
		parts = append(parts, "0 destroys")
	}
	parts = append(parts, plural(warnings, "warning", "warnings"))
	mark := "🟢"
	if errors > 0 || len(downtime) > 0 || len(destroys) > 0 {
		mark = "🔴"
	} else if warnings > 0 || len(j.ResourceDrift) > 0 {
		mark = "🟡"
	}
	return "**Risk:** " + mark + " " + strings.Join(parts, " · ")
}

// lastStart is how long the running instance took from launch to ready:
// the expected downtime of a destroy-then-create replacement.
func lastStart(ch plan.JSONChange) time.Duration {
	b := ch.Before
	if b == nil || b.CreatedAt.IsZero() || b.ReadyAt.Before(b.CreatedAt) {
		return 0
	}
	return b.ReadyAt.Sub(b.CreatedAt)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func serverSection(w io.Writer, ch plan.JSONChange, act plan.Action) {
	what := map[plan.Action]string{
		plan.Create: "created", plan.Update: "updated in place (no restart)", plan.Delete: "destroyed",
		plan.DeleteThenCreate: "replaced **with downtime** (destroy, then create)",
		plan.CreateThenDelete: "replaced without downtime (the new instance starts beside the old one)",
	}[act]
	summary := fmt.Sprintf("<code>%s</code> <b>%s</b>: %s", act.Symbol(), ch.Address, mdHTML(what))
	if ch.Reason != "" {
		summary += " (" + htmlEscape(ch.Reason) + ")"
	}
	fmt.Fprintf(w, "<details><summary>%s</summary>\n\n", summary)
	if d := lastStart(ch); act == plan.DeleteThenCreate && d > 0 {
		fmt.Fprintf(w, "Expected downtime: about %s (the last start of the running instance).\n\n", d.Round(time.Second))
	}
	if act != plan.Delete {
		argvTable(w, ch)
	}
	if len(ch.EnvChanges) > 0 {
		fmt.Fprintf(w, "Environment:\n\n")
		for _, e := range ch.EnvChanges {
			val := func(v string) string {
				if e.Sensitive {
					return "(sensitive value)"
				}
				return "`" + mdCode(v) + "`"
			}
			switch e.Action {
			case "create":
				fmt.Fprintf(w, "- `+ %s` = %s\n", e.Key, val(e.After))
			case "delete":
				fmt.Fprintf(w, "- `- %s` (was %s)\n", e.Key, val(e.Before))
			default:
				fmt.Fprintf(w, "- `~ %s`: %s → %s\n", e.Key, val(e.Before), val(e.After))
			}
		}
		fmt.Fprintln(w)
	}
	if len(ch.ModelFiles) > 0 {
		fmt.Fprintf(w, "Model files changed: %s\n\n", "`"+strings.Join(ch.ModelFiles, "`, `")+"`")
	}
	if line := capacityLine(ch); line != "" {
		fmt.Fprintf(w, "Capacity: %s\n\n", line)
	}
	if line := gateLine(ch); line != "" {
		fmt.Fprintf(w, "Gate the new instance must pass: %s\n\n", line)
	}
	fmt.Fprintf(w, "</details>\n\n")
}

// argvTable lists the changed arguments with where the configuration
// sets each; a new server lists all of its arguments.
func argvTable(w io.Writer, ch plan.JSONChange) {
	ops := plan.ArgvDiff(ch)
	var rows []string
	for _, op := range ops {
		if op.Kind == ' ' {
			continue
		}
		flag, _, _ := strings.Cut(op.Text, " ")
		src := ""
		if ch.After != nil {
			if s := ch.After.Sources[flag]; s != "" {
				file, attr, _ := strings.Cut(s, " ")
				src = "`" + file + "` `" + attr + "`"
			}
		}
		rows = append(rows, fmt.Sprintf("| `%c` | `%s` | %s |", op.Kind, mdCode(op.Text), src))
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "| | argument | set at |\n|---|---|---|\n%s\n\n", strings.Join(rows, "\n"))
}

func capacityLine(ch plan.JSONChange) string {
	var before, after string
	fp := func(tokens int64, conc float64) string {
		return fmt.Sprintf("%d KV tokens, full-context concurrency %.2f", tokens, conc)
	}
	if m := ch.Measured; m != nil && m.KVTokens > 0 {
		before = fp(m.KVTokens, m.MaxConcurrency) + " (measured)"
	} else if ch.Before != nil && ch.Before.Predicted != nil {
		before = fp(ch.Before.Predicted.KVTokens, ch.Before.Predicted.MaxConcurrency)
	}
	if ch.After != nil && ch.After.Predicted != nil {
		after = fp(ch.After.Predicted.KVTokens, ch.After.Predicted.MaxConcurrency)
	}
	switch {
	case before != "" && after != "":
		return before + " → " + after
	case after != "":
		return after
	case before != "" && ch.After == nil:
		return before + " → none"
	}
	return ""
}

func gateLine(ch plan.JSONChange) string {
	if ch.After == nil || ch.After.Gate == nil {
		return ""
	}
	g := ch.After.Gate
	var parts []string
	if g.HealthTimeout > 0 {
		parts = append(parts, "health within "+g.HealthTimeout.String())
	} else {
		parts = append(parts, "health")
	}
	if g.SmokeToolcall {
		parts = append(parts, "tool-call smoke test")
	}
	if b := g.Bench; b != nil {
		var th []string
		if b.MinOutputTokensPerSecond > 0 {
			th = append(th, fmt.Sprintf("≥ %.0f output tok/s", b.MinOutputTokensPerSecond))
		}
		if b.MinRequestsPerSecond > 0 {
			th = append(th, fmt.Sprintf("≥ %.2f req/s", b.MinRequestsPerSecond))
		}
		if b.MaxTTFTP99 > 0 {
			th = append(th, "TTFT p99 ≤ "+b.MaxTTFTP99.String())
		}
		if b.MaxTPOTP99 > 0 {
			th = append(th, "TPOT p99 ≤ "+b.MaxTPOTP99.String())
		}
		if b.MaxITLP99 > 0 {
			th = append(th, "ITL p99 ≤ "+b.MaxITLP99.String())
		}
		s := fmt.Sprintf("bench (%d requests at concurrency %d)", b.Requests, b.Concurrency)
		if len(th) > 0 {
			s += ": " + strings.Join(th, ", ")
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func warningsSection(w io.Writer, j *plan.JSONPlan) {
	var lines []string
	for _, d := range j.Diagnostics {
		line := "- **" + mdText(d.Summary) + "**"
		if d.Severity == "error" {
			line = "- **Error: " + mdText(d.Summary) + "**"
		}
		if d.Range != nil {
			line += fmt.Sprintf(" (`%s:%d`)", d.Range.Filename, d.Range.Start.Line)
		}
		if d.Detail != "" {
			line += ": " + mdText(strings.ReplaceAll(d.Detail, "\n", " "))
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(w, "<details><summary>%s</summary>\n\n%s\n\n</details>\n", plural(len(lines), "diagnostic", "diagnostics"), strings.Join(lines, "\n"))
}

// mdText escapes the characters Markdown would read as markup.
func mdText(s string) string {
	r := strings.NewReplacer("\\", "\\\\", "*", "\\*", "_", "\\_", "`", "\\`", "<", "&lt;", ">", "&gt;", "|", "\\|", "[", "\\[", "]", "\\]")
	return r.Replace(s)
}

// mdCode keeps a value inside a code span: backticks and table pipes.
func mdCode(s string) string {
	return strings.NewReplacer("`", "'", "|", "\\|").Replace(s)
}

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// mdHTML turns **bold** into <b> inside an HTML summary.
func mdHTML(s string) string {
	for strings.Count(s, "**") >= 2 {
		s = strings.Replace(s, "**", "<b>", 1)
		s = strings.Replace(s, "**", "</b>", 1)
	}
	return s
}
