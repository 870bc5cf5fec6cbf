// Package views renders what the commands print: for people (text, with
// optional colour) and for machines (JSON). Commands decide; views print.
// Terraform's internal/command/views has the same shape: warnings go to
// stdout after the result, errors to stderr.
package views

import (
	"fmt"
	"io"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// Consolidate merges warnings with the same summary into the first one,
// which then says how many more there were (Terraform's
// ConsolidateWarnings). Errors are kept as they are.
func Consolidate(diags hcl.Diagnostics) hcl.Diagnostics {
	count := map[string]int{}
	for _, d := range diags {
		if d.Severity == hcl.DiagWarning {
			count[d.Summary]++
		}
	}
	var out hcl.Diagnostics
	seen := map[string]bool{}
	for _, d := range diags {
		if d.Severity != hcl.DiagWarning {
			out = append(out, d)
			continue
		}
		if seen[d.Summary] {
			continue
		}
		seen[d.Summary] = true
		if n := count[d.Summary] - 1; n > 0 {
			c := *d
			more := "warning"
			if n > 1 {
				more = "warnings"
			}
			c.Detail = strings.TrimRight(c.Detail, "\n") + fmt.Sprintf("\n\n(and %d more similar %s elsewhere)", n, more)
			d = &c
		}
		out = append(out, d)
	}
	return out
}

// Split returns the errors and the warnings of diags.
func Split(diags hcl.Diagnostics) (errs, warns hcl.Diagnostics) {
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			errs = append(errs, d)
		} else {
			warns = append(warns, d)
		}
	}
	return errs, warns
}

// CountWarnings is the number of warnings in diags, before merging.
func CountWarnings(diags hcl.Diagnostics) int {
	n := 0
	for _, d := range diags {
		if d.Severity == hcl.DiagWarning {
			n++
		}
	}
	return n
}

// WriteDiagnostics writes diags in HCL's text form: file, line, snippet,
// a snippet line longer than snippetWidth cut around the error.
func WriteDiagnostics(w io.Writer, files map[string]*hcl.File, diags hcl.Diagnostics, color bool) {
	if files == nil {
		files = map[string]*hcl.File{}
	}
	spans, _ := w.(secretSpans)
	for _, d := range diags {
		// Each diagnostic cuts its own long lines, around its own column.
		cf, cd := cutSnippet(files, d, spans)
		_ = hcl.NewDiagnosticTextWriter(w, cf, 100, color).WriteDiagnostic(cd)
	}
}

// WriteWarnings writes warnings after a command's result. compact
// (-compact-warnings) writes one line per merged warning with its place.
func WriteWarnings(w io.Writer, files map[string]*hcl.File, warns hcl.Diagnostics, compact, color bool) {
	if len(warns) == 0 {
		return
	}
	merged := Consolidate(warns)
	if !compact {
		fmt.Fprintln(w)
		WriteDiagnostics(w, files, merged, color)
		return
	}
	fmt.Fprintln(w, "\nWarnings:")
	fmt.Fprintln(w)
	for _, d := range merged {
		line := "- " + d.Summary
		if i := strings.LastIndex(d.Detail, "\n\n(and "); i >= 0 {
			line += " " + d.Detail[i+2:]
		}
		fmt.Fprintln(w, line)
		if d.Subject != nil {
			fmt.Fprintf(w, "  on %s line %d\n", d.Subject.Filename, d.Subject.Start.Line)
		}
	}
	fmt.Fprintln(w, "\nTo see the full warning notes, run roofline without -compact-warnings.")
}
