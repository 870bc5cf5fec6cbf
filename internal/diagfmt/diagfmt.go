// Package diagfmt renders HCL diagnostics as JSON in Terraform's shape, so
// editors and CI annotators that read terraform's -json output read ours.
package diagfmt

import "github.com/hashicorp/hcl/v2"

// Diag is one diagnostic.
type Diag struct {
	Severity string   `json:"severity"`
	Summary  string   `json:"summary"`
	Detail   string   `json:"detail,omitempty"`
	Range    *Range   `json:"range,omitempty"`
	Snippet  *Snippet `json:"snippet,omitempty"`
}

// Range is a source range.
type Range struct {
	Filename string `json:"filename"`
	Start    Pos    `json:"start"`
	End      Pos    `json:"end"`
}

// Pos is a source position.
type Pos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
	Byte   int `json:"byte"`
}

// Snippet is the source line of a range.
type Snippet struct {
	Code      string `json:"code"`
	StartLine int    `json:"start_line"`
}

// JSON converts diags; files (by name) supply the snippets.
func JSON(files map[string]*hcl.File, diags hcl.Diagnostics) []Diag {
	out := []Diag{}
	for _, d := range diags {
		jd := Diag{Severity: "error", Summary: d.Summary, Detail: d.Detail}
		if d.Severity == hcl.DiagWarning {
			jd.Severity = "warning"
		}
		if d.Subject != nil {
			r := d.Subject
			jd.Range = &Range{Filename: r.Filename,
				Start: Pos{r.Start.Line, r.Start.Column, r.Start.Byte},
				End:   Pos{r.End.Line, r.End.Column, r.End.Byte}}
			if f := files[r.Filename]; f != nil {
				if line := sourceLine(f.Bytes, r.Start.Line); line != "" {
					jd.Snippet = &Snippet{Code: line, StartLine: r.Start.Line}
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
