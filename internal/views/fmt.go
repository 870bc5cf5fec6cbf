package views

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/textdiff"
)

// Fmt is roofline fmt's view (it has no -json).
type Fmt struct{ view *View }

// NewFmt returns fmt's view.
func NewFmt(v *View) *Fmt { return &Fmt{v} }

// Changed names a file fmt changed (or would change).
func (f *Fmt) Changed(file string) { fmt.Fprintln(f.view.Out, file) }

// Diff prints the change of one file as a unified diff.
func (f *Fmt) Diff(name, before, after string) {
	fmt.Fprint(f.view.Out, textdiff.Unified(name, name, before, after))
}

// Formatted writes standard input's formatted text.
func (f *Fmt) Formatted(out []byte) { _, _ = f.view.Out.Write(out) }

// SyntaxErrors reports a file fmt leaves alone because it does not parse.
func (f *Fmt) SyntaxErrors(file string, src []byte, diags hcl.Diagnostics) {
	WriteDiagnostics(f.view.Err, map[string]*hcl.File{file: {Bytes: src}}, diags, f.view.Color)
}
