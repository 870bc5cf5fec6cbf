package views

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
)

// NoApproval refuses an apply that cannot ask for approval (Terraform's
// -input=false): noInput when prompts are forbidden, else stdin is not a
// terminal.
func (v *View) NoApproval(name string, noInput bool) {
	why := "stdin is not a terminal"
	if noInput {
		why = "-input=false (or ROOFLINE_INPUT=0) forbids prompts"
	}
	fmt.Fprintf(v.Err, "Error: No way to ask for approval\n\n%s needs \"yes\" typed at a terminal, and %s. Nothing was planned or changed. Use -auto-approve, or save a plan with roofline plan -out=FILE, review it, and run roofline apply FILE.\n", name, why)
}

// ApplyPlanErrors says that apply stopped on the errors of the host's
// plan, or of a cluster's, before it changed anything.
func (v *View) ApplyPlanErrors(cluster bool) {
	what := "plan"
	if cluster {
		what = "cluster plan"
	}
	fmt.Fprintf(v.Err, "\nThe %s has errors: fix them and run apply again. Nothing was changed.\n", what)
}

// SavedPlanNoChanges: applying a saved plan with nothing to do.
func (v *View) SavedPlanNoChanges() { fmt.Fprintln(v.Out, "The saved plan has no changes.") }

// ApplyCancelled: the prompt was not answered "yes" (Terraform's "Apply
// cancelled." or "Destroy cancelled.").
func (v *View) ApplyCancelled(destroy bool) {
	verb := "Apply"
	if destroy {
		verb = "Destroy"
	}
	fmt.Fprintf(v.Err, "\n%s cancelled. Nothing was changed.\n", verb)
}

// ClusterApplyFailed: the host's servers were applied, a cluster's failed.
func (v *View) ClusterApplyFailed(err error) {
	fmt.Fprintf(v.Err, "\nError: %v\n", err)
	fmt.Fprint(v.Err, v.Colorize("\n[red][bold]Apply failed[reset] on the cluster. "))
	fmt.Fprintln(v.Err, "Run roofline plan to see what runs there.")
}

// ApplyComplete is the closing line of apply or destroy, and Terraform's
// warning when -target left changes out.
func (v *View) ApplyComplete(destroy bool, add, change, del int, targeted bool) {
	verb := "Apply"
	if destroy {
		verb = "Destroy"
	}
	fmt.Fprintf(v.Out, "%s", v.Colorize(fmt.Sprintf("\n[green][bold]%s complete![reset] Resources: %d added, %d changed, %d destroyed.\n", verb, add, change, del)))
	if targeted {
		WriteWarnings(v.Out, nil, hcl.Diagnostics{{Severity: hcl.DiagWarning, Summary: "Applied changes may be incomplete",
			Detail: "The plan was created with the -target option in effect, so some changes requested in the configuration may have been ignored and the output values may not be fully updated. Run roofline plan to verify that no other changes are pending."}}, v.CompactWarnings, v.Color)
	}
}

// Interrupted is what apply says at the first interrupt (it finishes the
// steps in flight) and at the second (it exits at once).
func (v *View) Interrupted(second bool) {
	if !second {
		fmt.Fprintln(v.Err, "\nInterrupt received: roofline finishes the steps in flight (a rollout runs to its end, its drain included) and starts nothing new. Interrupt again to exit at once.")
		return
	}
	fmt.Fprintln(v.Err, "\nSecond interrupt: roofline exits now. What it started keeps running and is recorded in the state (a process whose pid was not yet written is found by its launch id); run roofline plan to see where each server stands, roofline apply to continue.")
}
