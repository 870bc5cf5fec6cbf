package views

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/diagfmt"
	"github.com/roofline/roofline/internal/plan"
)

// Plan is roofline plan's view.
type Plan interface {
	// LoadFailed prints the diagnostics of a configuration that did not
	// load (or of a state that could not be locked): still the answer.
	LoadFailed(files map[string]*hcl.File, diags hcl.Diagnostics)
	// Plan prints the plan and its diagnostics.
	Plan(p *plan.Plan)
	// Errors closes a plan that has errors.
	Errors(inAutomation bool)
	// Saved says where -out saved the plan; advice adds how to apply it.
	Saved(path string, advice bool)
	// NotSaved notes that apply may do otherwise without -out.
	NotSaved()
	// ClusterErrors closes a plan whose cluster part has errors.
	ClusterErrors()
}

// NewPlan returns the plan view of type vt: ViewHuman, ViewJSON (the
// machine-readable stream, docs/json.md) or ViewMarkdown.
func NewPlan(vt ViewType, v *View) Plan {
	switch vt {
	case ViewJSON:
		return PlanJSON{v}
	case ViewMarkdown:
		return PlanMarkdownView{v}
	}
	return PlanHuman{v}
}

// DiagnosticsSplit prints errors to stderr and warnings to stdout, after
// the result (Terraform's order).
func (v *View) DiagnosticsSplit(files map[string]*hcl.File, diags hcl.Diagnostics) {
	errs, warns := Split(diags)
	WriteDiagnostics(v.Err, files, errs, v.Color)
	WriteWarnings(v.Out, files, warns, v.CompactWarnings, v.Color)
}

// Unrecorded names the instances refresh found by launch id that the state
// does not record (an interrupted run started them); apply records them.
func (v *View) Unrecorded(observed map[string]*plan.Observation) {
	var found []string
	for _, name := range slices.Sorted(maps.Keys(observed)) {
		if f := observed[name].Found; f != nil {
			found = append(found, fmt.Sprintf("server.%s: %s", name, f.Describe()))
		}
	}
	if len(found) > 0 {
		fmt.Fprintf(v.Err, "roofline found instances it had started but not recorded (an earlier run was interrupted): %s; apply records them first.\n", strings.Join(found, ", "))
	}
}

// PlanHuman prints the plan for people: errors on stderr, then the plan
// (unless it has errors), then the warnings.
type PlanHuman struct{ view *View }

func (h PlanHuman) LoadFailed(files map[string]*hcl.File, diags hcl.Diagnostics) {
	h.view.DiagnosticsSplit(files, diags)
}

func (h PlanHuman) Plan(p *plan.Plan) {
	errs, warns := Split(p.Diagnostics)
	WriteDiagnostics(h.view.Err, p.Files, errs, h.view.Color)
	if !p.HasErrors() {
		plan.RenderHuman(h.view.Out, p.ToJSON(), h.view.Colorize)
	}
	WriteWarnings(h.view.Out, p.Files, warns, h.view.CompactWarnings, h.view.Color)
}

func (h PlanHuman) Errors(inAutomation bool) {
	if inAutomation {
		fmt.Fprintln(h.view.Err, "\nThe plan has errors. Nothing was changed.")
		return
	}
	fmt.Fprintln(h.view.Err, "\nThe plan has errors: fix them and run roofline plan again. Nothing was changed.")
}

func (h PlanHuman) Saved(path string, advice bool) {
	fmt.Fprintf(h.view.Out, "\nSaved the plan to: %s\n", path)
	if advice {
		fmt.Fprintf(h.view.Out, "\nTo perform exactly these actions, run:\n    roofline apply %s\n", path)
	}
}

func (h PlanHuman) NotSaved() {
	fmt.Fprintln(h.view.Out, "\nNote: you didn't use the -out option to save this plan, so roofline can't guarantee to take exactly these actions if you run \"roofline apply\" now.")
}

func (h PlanHuman) ClusterErrors() {
	fmt.Fprintln(h.view.Err, "\nThe cluster plan has errors: fix them and run roofline plan again. Nothing was changed.")
}

// PlanJSON prints the stream; everything is in it, so the closing words
// are not.
type PlanJSON struct{ view *View }

func (j PlanJSON) LoadFailed(files map[string]*hcl.File, diags hcl.Diagnostics) {
	if len(diags) == 0 {
		j.view.DiagnosticsSplit(files, diags)
		return
	}
	s := NewStream(j.view.Out)
	s.Version()
	s.Diagnostics(diagfmt.JSON(files, diags))
}

func (j PlanJSON) Plan(p *plan.Plan) { PlanStream(NewStream(j.view.Out), p.ToJSON()) }
func (PlanJSON) Errors(bool)         {}
func (PlanJSON) Saved(string, bool)  {}
func (PlanJSON) NotSaved()           {}
func (PlanJSON) ClusterErrors()      {}

// PlanMarkdownView prints the plan for a pull request comment, and its
// errors on stderr.
type PlanMarkdownView struct{ view *View }

func (v PlanMarkdownView) LoadFailed(files map[string]*hcl.File, diags hcl.Diagnostics) {
	v.view.DiagnosticsSplit(files, diags)
}

func (v PlanMarkdownView) Plan(p *plan.Plan) {
	PlanMarkdown(v.view.Out, p.ToJSON())
	errs, _ := Split(p.Diagnostics)
	WriteDiagnostics(v.view.Err, p.Files, errs, v.view.Color)
}

func (PlanMarkdownView) Errors(bool)        {}
func (PlanMarkdownView) Saved(string, bool) {}
func (PlanMarkdownView) NotSaved()          {}
func (PlanMarkdownView) ClusterErrors()     {}
