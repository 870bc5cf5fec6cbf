package cli

import (
	"encoding/json"
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/diagfmt"
)

func init() {
	register(&Command{
		Name:     "validate",
		Synopsis: "Check the configuration files",
		Usage: `Usage: roofline [global options] validate [-json]

  Checks the *.hcl files of the current directory (or -chdir=DIR) for
  mistakes that need nothing but the files: syntax, unknown blocks and
  attributes, references, ports, GPU lists, value ranges, gate thresholds.
  Every problem is reported, each with its file, line and a snippet.
  It does not look at GPUs, engines or model folders: "roofline plan" does.

  Exit status: 0 valid (warnings allowed), 1 invalid.

Options:
  -json             Print the result as JSON (Terraform's validate -json shape).
  -var NAME=VALUE   Set a variable (repeatable); see docs/language.md for
                    roofline.rfvars, *.auto.rfvars and ROOFLINE_VAR_NAME.
  -var-file=FILE    Read variable values from FILE (repeatable; in order
                    with -var).
`,
		Run: runValidate,
	})
}

func runValidate(m *Meta, args []string) int {
	fs := newFlags("validate")
	jsonOut := fs.Bool("json", false, "")
	vars := varFlags(fs)
	if !parseFlags(m, fs, args) || !setVars(m, "validate", *vars) {
		return ExitError
	}
	if fs.NArg() > 0 {
		return usageError(m, "validate", fmt.Sprintf("unexpected argument %q; validate reads the current directory (use -chdir=DIR before the command)", fs.Arg(0)))
	}
	// As Terraform's validate: variables without a value are unknown, and
	// what depends on them is not checked.
	in := m.inputs()
	in.Partial = true
	cfg, diags := config.LoadDirInputs(".", in)
	m.noteSecrets(cfg)
	if *jsonOut {
		b, _ := json.MarshalIndent(validateJSON(cfg, diags), "", "  ")
		fmt.Fprintln(m.Out, string(b))
		if diags.HasErrors() {
			return ExitError
		}
		return ExitOK
	}
	printDiags(m, cfg, diags)
	if diags.HasErrors() {
		errs, warns := countDiags(diags)
		fmt.Fprintf(m.Err, "%s, %s.\n", plural(errs, "error"), plural(warns, "warning"))
		return ExitError
	}
	fmt.Fprintf(m.Out, "%s The configuration is valid", m.colorize("[green][bold]Success![reset]"))
	if _, warns := countDiags(diags); warns > 0 {
		fmt.Fprintf(m.Out, ", with %s", plural(warns, "warning"))
	}
	fmt.Fprintln(m.Out, ".")
	return ExitOK
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

func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// JSON diagnostics in Terraform's shape, so editors and CI annotators that
// read `terraform validate -json` can read ours.
type jsonValidate struct {
	FormatVersion string         `json:"format_version"`
	Valid         bool           `json:"valid"`
	ErrorCount    int            `json:"error_count"`
	WarningCount  int            `json:"warning_count"`
	Diagnostics   []diagfmt.Diag `json:"diagnostics"`
}

func validateJSON(cfg *config.Config, diags hcl.Diagnostics) jsonValidate {
	errs, warns := countDiags(diags)
	out := jsonValidate{FormatVersion: "1.0", Valid: errs == 0, ErrorCount: errs, WarningCount: warns, Diagnostics: diagfmt.JSON(cfgFiles(cfg), diags)}
	return out
}

func cfgFiles(cfg *config.Config) map[string]*hcl.File {
	if cfg == nil {
		return nil
	}
	return cfg.Files
}
