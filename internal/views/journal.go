package views

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/roofline/roofline/internal/journal"
	"github.com/roofline/roofline/internal/jsonplan"
	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/state"
)

// Journal is roofline journal's view.
type Journal interface {
	// Entries prints the journal's entries; path is where it is kept.
	Entries(path string, entries []journal.Entry)
}

// NewJournal returns the journal view of type vt.
func NewJournal(vt ViewType, v *View) Journal {
	if vt == ViewJSON {
		return JournalJSON{v}
	}
	return JournalHuman{v}
}

// JournalJSON prints the entries as a JSON array ([] when there are none),
// each as the plan document's last_bench shows one (jsonplan.JournalEntry).
type JournalJSON struct{ view *View }

func (j JournalJSON) Entries(_ string, entries []journal.Entry) {
	enc := json.NewEncoder(j.view.Out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(JournalDocumentOf(entries))
}

// JournalDocumentOf converts the journal's entries into journal -json's
// own type.
func JournalDocumentOf(entries []journal.Entry) []jsonplan.JournalEntry {
	out := make([]jsonplan.JournalEntry, 0, len(entries))
	for i := range entries {
		out = append(out, *plan.JournalEntryDocument(&entries[i]))
	}
	return out
}

// JournalHuman prints one short block per entry.
type JournalHuman struct{ view *View }

func (j JournalHuman) Entries(path string, entries []journal.Entry) {
	w := j.view.Out
	if len(entries) == 0 {
		fmt.Fprintf(w, "The journal is empty (%s): entries are added by every rollout and every roofline bench SERVER.\n", path)
		return
	}
	for i, e := range entries {
		if i > 0 {
			fmt.Fprintln(w)
		}
		WriteJournalEntry(w, e)
	}
}

// WriteJournalEntry prints one entry as a short block.
func WriteJournalEntry(w io.Writer, e journal.Entry) {
	who := state.ServerAddr(e.Server)
	if e.Server == "" {
		who = e.URL
	}
	if a := e.Agent; a != nil {
		if e.Server == "" {
			who = "host"
		}
		fmt.Fprintf(w, "%s  %s  %s: %s\n", e.Time.UTC().Format("2006-01-02 15:04:05 UTC"), e.Kind, who, a.Action)
		if a.Reason != "" {
			fmt.Fprintf(w, "  %-7s %s\n", "reason", a.Reason)
		}
		if a.Class != "" {
			fmt.Fprintf(w, "  %-7s %s: %s\n", "cause", a.Class, a.Cause)
		}
		if a.PID > 0 {
			fmt.Fprintf(w, "  %-7s %d\n", "pid", a.PID)
		}
		return
	}
	fmt.Fprintf(w, "%s  %s  %s\n", e.Time.UTC().Format("2006-01-02 15:04:05 UTC"), e.Kind, who)
	row := func(label, value string) {
		if strings.TrimSpace(value) != "" {
			fmt.Fprintf(w, "  %-7s %s\n", label, value)
		}
	}
	eng := strings.TrimSpace(e.Engine.Kind + " " + e.Engine.Version)
	if e.Engine.Identity != "" {
		eng += " (" + e.Engine.Identity + ")"
	}
	row("engine", eng)
	var model []string
	for _, s := range []string{e.Model.Path, e.Model.Fingerprint} {
		if s != "" {
			model = append(model, s)
		}
	}
	mdl := e.Model.Name
	if len(model) > 0 {
		mdl += " (" + strings.Join(model, ", ") + ")"
	}
	row("model", mdl)
	var hw []string
	if len(e.GPUs) > 0 {
		hw = append(hw, countNames(e.GPUs))
	}
	if e.DriverVersion != "" {
		hw = append(hw, "driver "+e.DriverVersion)
	}
	if e.CUDAVersion != "" {
		hw = append(hw, "CUDA "+e.CUDAVersion)
	}
	row("gpus", strings.Join(hw, ", "))
	if len(e.Argv) > 0 {
		row("argv", strings.Join(e.Argv, " "))
	}
	if g := e.Gate; g != nil {
		verdict := "FAIL"
		if g.Passed {
			verdict = "pass"
		}
		row("gate", fmt.Sprintf("%s (health %s, smoke %s, bench %s)", verdict, orDash(g.Health), orDash(g.Smoke), orDash(g.Bench)))
		for _, f := range g.Failures {
			row("", f)
		}
	}
	if f := e.Failure; f != nil {
		what := "FAILED in " + f.Phase
		if f.Class != "" && f.Class != "unknown" {
			what += " (" + f.Class + ")"
		}
		if f.KeptOld {
			what += "; the old instance kept serving"
		}
		row("rollout", what)
		row("", f.Error)
	}
	if b := e.Bench; b != nil {
		load := fmt.Sprintf("%d requests", b.NumPrompts)
		if b.MaxConcurrency > 0 {
			load += fmt.Sprintf(", concurrency %d", b.MaxConcurrency)
		}
		if b.RequestRate > 0 {
			load += fmt.Sprintf(", %.2f req/s", b.RequestRate)
		}
		load += fmt.Sprintf(", %d in / %d out tokens", b.InputTokens, b.OutputTokens)
		row("load", load)
		row("result", fmt.Sprintf("%.2f tok/s out, %.2f req/s; TTFT median %.2f ms, P99 %.2f ms; TPOT median %.2f ms; ITL P99 %.2f ms; %d failed",
			b.OutputThroughput, b.RequestThroughput, b.MedianTTFTMs, b.P99TTFTMs, b.MedianTPOTMs, b.P99ITLMs, b.Failed))
		if b.Passed != nil {
			verdict := "pass"
			if !*b.Passed {
				verdict = "FAIL: " + strings.Join(b.Violations, "; ")
			}
			row("verdict", "thresholds "+verdict)
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// countNames writes ["H200","H200","A100"] as "2x H200, 1x A100", in order
// of first appearance.
func countNames(names []string) string {
	var order []string
	count := map[string]int{}
	for _, n := range names {
		if count[n] == 0 {
			order = append(order, n)
		}
		count[n]++
	}
	parts := make([]string, len(order))
	for i, n := range order {
		parts[i] = fmt.Sprintf("%dx %s", count[n], n)
	}
	return strings.Join(parts, ", ")
}
