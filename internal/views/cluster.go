package views

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
)

// ClusterPlan prints one cluster's plan: its errors (diags), the plan
// (human, live.Human's rendering) when it has none, then its warnings.
func (v *View) ClusterPlan(files map[string]*hcl.File, diags hcl.Diagnostics, human string) {
	errs, warns := Split(diags)
	WriteDiagnostics(v.Err, files, errs, v.Color)
	if !diags.HasErrors() {
		fmt.Fprint(v.Out, human)
	}
	WriteWarnings(v.Out, files, warns, v.CompactWarnings, v.Color)
}

// ClusterError says why a cluster could not be planned (its kubeconfig,
// its client).
func (v *View) ClusterError(err error) { fmt.Fprintf(v.Err, "\nError: %v\n", err) }

// ClusterProgress prints one line of a cluster apply's progress.
func (v *View) ClusterProgress(format string, args ...any) {
	fmt.Fprintf(v.Out, format+"\n", args...)
}
