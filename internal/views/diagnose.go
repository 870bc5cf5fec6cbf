package views

import (
	"fmt"
	"strconv"

	"github.com/roofline/roofline/internal/engine/logdiag"
)

// Diagnose is roofline diagnose's view.
type Diagnose interface {
	// Diagnosis prints the classifier's verdict on the log at path ("-"
	// is standard input).
	Diagnosis(d logdiag.Diagnosis, path string)
}

// NewDiagnose returns the diagnose view of type vt.
func NewDiagnose(vt ViewType, v *View) Diagnose {
	if vt == ViewJSON {
		return DiagnoseJSON{v}
	}
	return DiagnoseHuman{v}
}

// DiagnoseJSON prints one JSON object.
type DiagnoseJSON struct{ view *View }

// DiagnoseHuman prints the class, cause, evidence lines and action.
type DiagnoseHuman struct{ view *View }

// DiagnoseDocument is diagnose -json.
type DiagnoseDocument struct {
	Class    string             `json:"class"`
	Title    string             `json:"title"`
	Summary  string             `json:"summary"`
	Cause    string             `json:"cause"`
	Action   string             `json:"action"`
	Evidence []DiagnoseEvidence `json:"evidence"`
	File     string             `json:"file"`
}

// DiagnoseEvidence is one log line that supports a diagnosis.
type DiagnoseEvidence struct {
	Line int    `json:"line"`
	Text string `json:"text"`
}

func (v DiagnoseJSON) Diagnosis(d logdiag.Diagnosis, path string) {
	w := v.view.Out
	out := DiagnoseDocument{Class: d.Class, Title: d.Title, Summary: d.Summary, Cause: d.Cause, Action: d.Action,
		Evidence: []DiagnoseEvidence{}, File: path}
	for i, text := range d.Evidence {
		out.Evidence = append(out.Evidence, DiagnoseEvidence{Line: d.EvidenceLines[i], Text: text})
	}
	writeJSON(w, out)
}

func (v DiagnoseHuman) Diagnosis(d logdiag.Diagnosis, path string) {
	m := v.view
	bold := func(s string) string {
		if m.Color {
			return "\x1b[1m" + s + "\x1b[0m"
		}
		return s
	}
	w := m.Out
	if d.Class == logdiag.Unknown && len(d.Evidence) == 0 {
		// Nothing failed that the log shows (a healthy server's log):
		// "cause not recognised" would read as a failure.
		fmt.Fprintf(w, "%s %s (no error in the log)\n\n", bold("Diagnosis:"), bold("none"))
	} else {
		fmt.Fprintf(w, "%s %s (%s)\n\n", bold("Diagnosis:"), bold(d.Class), d.Title)
	}
	fmt.Fprintf(w, "  %s\n\n", d.Summary)
	fmt.Fprintf(w, "%s  %s\n\n", bold("Cause:"), d.Cause)
	if path == "-" {
		path = "standard input"
	}
	if len(d.Evidence) == 0 {
		fmt.Fprintf(w, "%s none: no error lines near the end of %s.\n\n", bold("Evidence:"), path)
	} else {
		fmt.Fprintf(w, "%s %s\n", bold("Evidence"), "("+path+"):")
		width := len(strconv.Itoa(d.EvidenceLines[len(d.EvidenceLines)-1]))
		for i, text := range d.Evidence {
			fmt.Fprintf(w, "  %*d | %s\n", width, d.EvidenceLines[i], text)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%s %s\n", bold("Action:"), d.Action)
}
