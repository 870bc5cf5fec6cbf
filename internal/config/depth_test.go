package config

import (
	"strings"
	"testing"
)

func TestDeepNestingIsADiagnosticNotAStackOverflow(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		line      int
	}{
		{"lists", "x = " + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "\n", 1},
		{"objects", "\n\nx = " + strings.Repeat("{a=", 100000) + "1" + strings.Repeat("}", 100000), 3},
		{"parens", "x = " + strings.Repeat("(", 100000) + "1" + strings.Repeat(")", 100000), 1},
		{"templates", `x = ` + strings.Repeat(`"${`, 50000) + "1" + strings.Repeat(`}"`, 50000), 1},
		{"blocks", strings.Repeat("a {\n", 100000) + strings.Repeat("}\n", 100000), MaxNesting + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := Load("/tmp", []string{"deep.hcl"}, map[string][]byte{"deep.hcl": []byte(tc.src)})
			if !diags.HasErrors() || diags[0].Summary != "Configuration nested too deeply" {
				t.Fatalf("diags = %v", diags)
			}
			if s := diags[0].Subject; s == nil || s.Filename != "deep.hcl" || s.Start.Line != tc.line {
				t.Fatalf("subject %v, want deep.hcl line %d", s, tc.line)
			}
		})
	}
}

func TestNestingScanAcceptsOrdinarySyntax(t *testing.T) {
	for _, src := range []string{
		`a = "}}}]]])))"`,
		`a = "$${{{{{{{"`,
		"a = \"\\\"{{{{\"",
		"# {{{{{{\n// [[[[[\n/* ((((( */\nb = 1",
		"c = <<EOT\n{{{{{{{{{{\nEOT\n",
		"c = <<-EOT\n  {{{{{{{{{{\n  EOT\n",
		`d = "${upper("x${"y"}")}"`,
		"e = [for k, v in {a = 1} : \"${k}=${v}\"]",
	} {
		if ds := checkNesting("f.hcl", []byte(strings.Repeat(src+"\n", 1))); ds.HasErrors() {
			t.Errorf("%q: %v", src, ds)
		}
	}
	// Exactly MaxNesting levels pass; one more does not.
	ok := "x = " + strings.Repeat("[", MaxNesting) + strings.Repeat("]", MaxNesting)
	if ds := checkNesting("f.hcl", []byte(ok)); ds.HasErrors() {
		t.Errorf("%d levels refused: %v", MaxNesting, ds)
	}
	if ds := checkNesting("f.hcl", []byte("x = ["+ok[4:]+"]")); !ds.HasErrors() {
		t.Errorf("%d levels accepted", MaxNesting+1)
	}
}

func FuzzCheckNesting(f *testing.F) {
	f.Add([]byte(`a = "${b}" # {`))
	f.Add([]byte("c = <<EOT\n{\nEOT\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		checkNesting("f.hcl", src) // must not panic or loop
	})
}
