package views

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/roofline/roofline/internal/secret"
)

// parseDiags parses src as main.hcl and returns its files and diagnostics.
func parseDiags(t *testing.T, src string) (map[string]*hcl.File, hcl.Diagnostics) {
	t.Helper()
	f, diags := hclsyntax.ParseConfig([]byte(src), "main.hcl", hcl.InitialPos)
	if !diags.HasErrors() {
		t.Fatalf("%q parses", src)
	}
	return map[string]*hcl.File{"main.hcl": f}, diags
}

// longList is a list of n items on one line with a missing comma before
// item at, so the parser's error is in the middle of a long line.
func longList(n, at int, item string) string {
	var b strings.Builder
	b.WriteString("server \"q\" {\n  extra_args = [")
	for i := range n {
		if i > 0 && i != at {
			b.WriteString(",")
		}
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(item)
	}
	b.WriteString("]\n}\n")
	return b.String()
}

// TestLongSnippetLines: a 5,000-character source line is cut around the
// error's column, each cut marked "…", the highlight (colour's underline)
// still on the token it marks; a line of the width or under stays whole.
func TestLongSnippetLines(t *testing.T) {
	long := longList(500, 250, `"--a-flag"`)
	if n := len(strings.Split(long, "\n")[1]); n < 5000 {
		t.Fatalf("the long line has %d characters", n)
	}
	atWidth := "server \"q\" {\n  x = " + strings.Repeat("1", snippetWidth-8) + " y\n}\n"
	if n := utf8.RuneCountInString(strings.Split(atWidth, "\n")[1]); n != snippetWidth {
		t.Fatalf("the line at the width has %d characters", n)
	}
	for _, c := range []struct {
		name, src string
		color     bool
	}{
		{"long-line", long, false},
		{"long-line-color", long, true},
		{"long-line-start", longList(500, 2, `"--a-flag"`), false},
		{"long-line-end", longList(500, 499, `"--a-flag"`), false},
		{"long-line-wide-chars", longList(500, 250, `"é—"`), false},
		{"line-at-width", atWidth, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			files, diags := parseDiags(t, c.src)
			var out bytes.Buffer
			WriteDiagnostics(&out, files, diags, c.color)
			for _, l := range strings.Split(out.String(), "\n") {
				if n := utf8.RuneCountInString(l); n > snippetWidth+len("  12: ")+2+len("\x1b[1;4m\x1b[0m") {
					t.Errorf("a line of %d characters: %.80q...", n, l)
				}
			}
			if !utf8.Valid(out.Bytes()) {
				t.Error("the output is not valid UTF-8: a cut split a character")
			}
			golden(t, filepath.Join("testdata", "diags", c.name+".golden"), out.String())
		})
	}
}

// TestLongSnippetLineKeepsSecretsWhole: a cut never leaves part of a
// secret, which the masking writer would no longer recognise.
func TestLongSnippetLineKeepsSecretsWhole(t *testing.T) {
	const key = "sk-0123456789abcdefghijklmnopqrstuvwxyz"
	for _, inside := range []int{1, 5, 20, 32} {
		// The window starts snippetLead characters before the error (the
		// missing comma before "--c"); the secret's last inside characters
		// are in it.
		gap := snippetLead - inside - len(`" "--b" `)
		src := "server \"q\" {\n  extra_args = [\"" + strings.Repeat("x", 300) + "\", \"" + key + "\"," +
			strings.Repeat(" ", gap) + "\"--b\" \"--c\"" + strings.Repeat(", \"--d\"", 100) + "]\n}\n"
		files, diags := parseDiags(t, src)
		var out bytes.Buffer
		WriteDiagnostics(secret.NewSet(key).Writer(&out), files, diags, false)
		for i := 0; i+6 <= len(key); i++ {
			if strings.Contains(out.String(), key[i:i+6]) {
				t.Fatalf("%d characters in the window: part of the secret %q is printed:\n%s", inside, key[i:i+6], out.String())
			}
		}
		if !strings.Contains(out.String(), "…") {
			t.Errorf("%d characters in the window: the line was not cut:\n%s", inside, out.String())
		}
	}
}

// FuzzCutSnippet: any source and any range (a diagnostic's range can be
// off its file) render without a panic, and a valid UTF-8 source stays
// valid: a cut never splits a character.
func FuzzCutSnippet(f *testing.F) {
	f.Add(longList(200, 100, `"é—"`), 5, 300, 310, true)
	f.Add("a = 1\n", 0, 2, 3, false)
	f.Add(strings.Repeat("x", 500)+"\n"+strings.Repeat("y", 500), 1, 700, 20, true)
	f.Fuzz(func(t *testing.T, src string, line, start, end int, ctx bool) {
		rng := hcl.Range{Filename: "main.hcl", Start: hcl.Pos{Line: line, Column: 1, Byte: start}, End: hcl.Pos{Line: line, Column: 2, Byte: end}}
		d := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "s", Subject: &rng}
		if ctx {
			c := hcl.Range{Filename: "main.hcl", Start: hcl.Pos{Byte: min(start, end) - 3}, End: hcl.Pos{Byte: max(start, end) + 3}}
			d.Context = &c
		}
		var out bytes.Buffer
		WriteDiagnostics(&out, map[string]*hcl.File{"main.hcl": {Bytes: []byte(src)}}, hcl.Diagnostics{d}, true)
		// A range inside a character (no parser makes one) splits it
		// already without a cut.
		onBoundary := func(b int) bool { return b <= 0 || b >= len(src) || utf8.RuneStart(src[b]) }
		if utf8.ValidString(src) && onBoundary(start) && onBoundary(end) && (!ctx || onBoundary(min(start, end)-3) && onBoundary(max(start, end)+3)) && !utf8.Valid(out.Bytes()) {
			t.Errorf("invalid UTF-8 out of a valid source")
		}
	})
}
