package views

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/diagfmt"
)

// Validate is roofline validate's view.
type Validate interface {
	// Results prints the diagnostics of the configuration in files and
	// the verdict.
	Results(files map[string]*hcl.File, diags hcl.Diagnostics)
}

// NewValidate returns the validate view of type vt.
func NewValidate(vt ViewType, v *View) Validate {
	if vt == ViewJSON {
		return ValidateJSON{v}
	}
	return ValidateHuman{v}
}

// ValidateJSON prints diagnostics in Terraform's validate -json shape, so
// editors and CI annotators that read `terraform validate -json` can read
// ours.
type ValidateJSON struct{ view *View }

// ValidateDocument is validate -json: Terraform's validate document.
type ValidateDocument struct {
	FormatVersion string         `json:"format_version"`
	Valid         bool           `json:"valid"`
	ErrorCount    int            `json:"error_count"`
	WarningCount  int            `json:"warning_count"`
	Diagnostics   []diagfmt.Diag `json:"diagnostics"`
}

func (v ValidateJSON) Results(files map[string]*hcl.File, diags hcl.Diagnostics) {
	errs, warns := countDiags(diags)
	writeJSON(v.view.Out, ValidateDocument{FormatVersion: "1.0", Valid: errs == 0, ErrorCount: errs, WarningCount: warns, Diagnostics: diagfmt.JSON(files, diags)})
}

// ValidateHuman prints each diagnostic with its snippet, then the verdict.
type ValidateHuman struct{ view *View }

func (v ValidateHuman) Results(files map[string]*hcl.File, diags hcl.Diagnostics) {
	WriteDiagnostics(v.view.Err, files, diags, v.view.Color)
	errs, warns := countDiags(diags)
	if errs > 0 {
		fmt.Fprintf(v.view.Err, "%s, %s.\n", countOf(errs, "error"), countOf(warns, "warning"))
		return
	}
	fmt.Fprintf(v.view.Out, "%s The configuration is valid", v.view.Colorize("[green][bold]Success![reset]"))
	if warns > 0 {
		fmt.Fprintf(v.view.Out, ", with %s", countOf(warns, "warning"))
	}
	fmt.Fprintln(v.view.Out, ".")
}

func countDiags(diags hcl.Diagnostics) (errs, warns int) {
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			errs++
		} else {
			warns++
		}
	}
	return
}

// countOf is "1 error", "2 errors".
func countOf(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}
