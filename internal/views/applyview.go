package views

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/apply"
	"github.com/roofline/roofline/internal/diagfmt"
	"github.com/roofline/roofline/internal/plan"
)

// Apply is roofline apply's and destroy's view.
type Apply interface {
	// NoApproval refuses to run without a way to approve (-auto-approve
	// or a plan file): noInput when prompts are forbidden.
	NoApproval(name string, noInput bool)
	// LoadFailed prints the diagnostics of a configuration that did not load.
	LoadFailed(files map[string]*hcl.File, diags hcl.Diagnostics)
	// Plan prints what apply is about to do; saved when it comes from a
	// plan file (people reviewed it already).
	Plan(p *plan.Plan, saved bool)
	// PlanErrors closes a plan that has errors.
	PlanErrors()
	// NoChanges closes an apply with nothing to do.
	NoChanges(saved, destroy bool)
	// Hooks reports apply's progress, then Starting opens it.
	Hooks(p *plan.Plan) apply.Hooks
	Starting()
	// Failed closes an apply that failed, Complete one that did not.
	Failed(err error)
	Complete(destroy bool, add, change, del int, targeted bool)
}

// NewApply returns apply's view of type vt: ViewHuman, or ViewJSON (the
// machine-readable stream, docs/json.md). terminal and width are the human
// progress's (NewApplyUI).
func NewApply(vt ViewType, v *View, terminal bool, width func() int) Apply {
	if vt == ViewJSON {
		return &ApplyJSON{view: v, s: NewStream(v.Out)}
	}
	return ApplyHuman{view: v, terminal: terminal, width: width}
}

// ApplyHuman prints apply for people.
type ApplyHuman struct {
	view     *View
	terminal bool
	width    func() int
}

func (h ApplyHuman) NoApproval(name string, noInput bool) { h.view.NoApproval(name, noInput) }

func (h ApplyHuman) LoadFailed(files map[string]*hcl.File, diags hcl.Diagnostics) {
	h.view.DiagnosticsSplit(files, diags)
}

func (h ApplyHuman) Plan(p *plan.Plan, saved bool) {
	if !saved {
		PlanHuman{h.view}.Plan(p)
	}
}

func (h ApplyHuman) PlanErrors() { h.view.ApplyPlanErrors(false) }

func (h ApplyHuman) NoChanges(saved, _ bool) {
	if saved {
		h.view.SavedPlanNoChanges()
	}
}

func (h ApplyHuman) Hooks(*plan.Plan) apply.Hooks { return NewApplyUI(h.view, h.terminal, h.width) }
func (h ApplyHuman) Starting()                    { fmt.Fprintln(h.view.Out) }
func (h ApplyHuman) Failed(err error)             { h.view.ApplyFailed(err) }

func (h ApplyHuman) Complete(destroy bool, add, change, del int, targeted bool) {
	h.view.ApplyComplete(destroy, add, change, del, targeted)
}

// ApplyJSON streams apply as JSON messages: the version and the plan, the
// progress and gate results, the summary or the errors.
type ApplyJSON struct {
	view *View
	s    *Stream
	j    *plan.JSONPlan
}

// NoApproval: a machine cannot answer the prompt (as Terraform).
func (a *ApplyJSON) NoApproval(name string, _ bool) {
	a.s.Version()
	a.s.Diagnostics([]diagfmt.Diag{{Severity: "error", Summary: "Plan file or auto-approve required",
		Detail: name + " -json needs -auto-approve or a saved plan file (roofline plan -out=FILE): it cannot ask for approval."}})
}

func (a *ApplyJSON) LoadFailed(files map[string]*hcl.File, diags hcl.Diagnostics) {
	a.s.Version()
	a.s.Diagnostics(diagfmt.JSON(files, diags))
}

func (a *ApplyJSON) Plan(p *plan.Plan, _ bool) {
	a.j = p.ToJSON()
	ApplyPlan(a.s, a.j)
}

func (a *ApplyJSON) PlanErrors() {}

func (a *ApplyJSON) NoChanges(_, destroy bool) { a.Complete(destroy, 0, 0, 0, false) }

func (a *ApplyJSON) Hooks(p *plan.Plan) apply.Hooks {
	if a.j == nil {
		a.j = p.ToJSON()
	}
	return NewApplyHooks(a.s, a.j)
}

func (a *ApplyJSON) Starting()        {}
func (a *ApplyJSON) Failed(err error) { a.s.Diagnostics(ApplyErrorDiags(err)) }

func (a *ApplyJSON) Complete(destroy bool, add, change, del int, _ bool) {
	ApplySummary(a.s, add, change, del, destroy)
}
