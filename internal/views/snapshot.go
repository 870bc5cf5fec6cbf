package views

import (
	"fmt"

	"github.com/roofline/roofline/internal/snapshot"
)

// SnapshotWritten reports roofline snapshot's file: what it holds, and how
// many engines or models it records as unreadable.
func (v *View) SnapshotWritten(f *snapshot.File, path string) {
	fmt.Fprintf(v.Out, "Wrote the host snapshot of %s to %s: %d server(s), %d GPU(s), %d engine(s), %d model(s)",
		f.Host, path, len(f.State.Servers), f.GPUCount(), len(f.Engines), len(f.Models))
	if n := f.Unreadable(); n > 0 {
		fmt.Fprintf(v.Out, "; %d engine or model could not be read here (recorded as errors; plan reports them)", n)
	}
	fmt.Fprintln(v.Out, ".")
}
