package config

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// TestInSourceOrder: attributes come back as the file writes them, not in
// the map's order (locals and variable files are read in that order).
func TestInSourceOrder(t *testing.T) {
	names := []string{"zeta", "alpha", "mid", "beta", "omega", "a1", "gamma"}
	var src strings.Builder
	for i, n := range names {
		src.WriteString(n + " = " + string(rune('0'+i)) + "\n")
	}
	f, diags := hclsyntax.ParseConfig([]byte(src.String()), "x.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	attrs, diags := f.Body.JustAttributes()
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var got []string
	for _, a := range inSourceOrder(attrs) {
		got = append(got, a.Name)
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Errorf("inSourceOrder = %v, want %v", got, names)
	}
}
