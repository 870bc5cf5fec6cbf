package cli

import (
	"encoding/json"
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/config"
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
  -json   Print the result as JSON (Terraform's validate -json shape).
`,
		Run: runValidate,
	})
}

func runValidate(m *Meta, args []string) int {
	fs := newFlags("validate")
	jsonOut := fs.Bool("json", false, "")
	if !parseFlags(m, fs, args) {
		return ExitError
	}
	if fs.NArg() > 0 {
		return usageError(m, "validate", fmt.Sprintf("unexpected argument %q; validate reads the current directory (use -chdir=DIR before the command)", fs.Arg(0)))
	}
	cfg, diags := config.LoadDir(".")
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
	FormatVersion string     `json:"format_version"`
	Valid         bool       `json:"valid"`
	ErrorCount    int        `json:"error_count"`
	WarningCount  int        `json:"warning_count"`
	Diagnostics   []jsonDiag `json:"diagnostics"`
}

type jsonDiag struct {
	Severity string       `json:"severity"`
	Summary  string       `json:"summary"`
	Detail   string       `json:"detail,omitempty"`
	Range    *jsonRange   `json:"range,omitempty"`
	Snippet  *jsonSnippet `json:"snippet,omitempty"`
}

type jsonRange struct {
	Filename string  `json:"filename"`
	Start    jsonPos `json:"start"`
	End      jsonPos `json:"end"`
}

type jsonPos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
	Byte   int `json:"byte"`
}

type jsonSnippet struct {
	Code      string `json:"code"`
	StartLine int    `json:"start_line"`
}

func validateJSON(cfg *config.Config, diags hcl.Diagnostics) jsonValidate {
	errs, warns := countDiags(diags)
	out := jsonValidate{FormatVersion: "1.0", Valid: errs == 0, ErrorCount: errs, WarningCount: warns, Diagnostics: jsonDiags(cfg, diags)}
	return out
}

func jsonDiags(cfg *config.Config, diags hcl.Diagnostics) []jsonDiag {
	out := []jsonDiag{}
	for _, d := range diags {
		jd := jsonDiag{Severity: "error", Summary: d.Summary, Detail: d.Detail}
		if d.Severity == hcl.DiagWarning {
			jd.Severity = "warning"
		}
		if d.Subject != nil {
			r := d.Subject
			jd.Range = &jsonRange{Filename: r.Filename,
				Start: jsonPos{r.Start.Line, r.Start.Column, r.Start.Byte},
				End:   jsonPos{r.End.Line, r.End.Column, r.End.Byte}}
			if cfg != nil {
				if f := cfg.Files[r.Filename]; f != nil {
					if line := sourceLine(f.Bytes, r.Start.Line); line != "" {
						jd.Snippet = &jsonSnippet{Code: line, StartLine: r.Start.Line}
					}
				}
			}
		}
		out = append(out, jd)
	}
	return out
}

func sourceLine(src []byte, line int) string {
	n := 1
	start := 0
	for i, c := range src {
		if c == '\n' {
			if n == line {
				return string(src[start:i])
			}
			n++
			start = i + 1
		}
	}
	if n == line {
		return string(src[start:])
	}
	return ""
}
