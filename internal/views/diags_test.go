package views

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

func TestConsolidateMergesRepeatedWarnings(t *testing.T) {
	w := func(s string) *hcl.Diagnostic {
		return &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: s, Detail: "d"}
	}
	e := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "E"}
	in := hcl.Diagnostics{w("A"), w("B"), e, w("A"), w("A"), e}
	got := Consolidate(in)
	if len(got) != 4 || got[0].Summary != "A" || got[1].Summary != "B" || got[2] != e || got[3] != e {
		t.Fatalf("Consolidate: %v", got)
	}
	if !strings.HasSuffix(got[0].Detail, "(and 2 more similar warnings elsewhere)") || got[1].Detail != "d" {
		t.Errorf("details: %q, %q", got[0].Detail, got[1].Detail)
	}
	if in[0].Detail != "d" {
		t.Error("Consolidate changed its input")
	}
	if CountWarnings(in) != 4 {
		t.Errorf("CountWarnings = %d", CountWarnings(in))
	}
	var buf bytes.Buffer
	WriteWarnings(&buf, nil, hcl.Diagnostics{w("A"), w("A")}, true, false)
	if !strings.Contains(buf.String(), "- A (and 1 more similar warning elsewhere)\n") {
		t.Errorf("compact:\n%s", buf.String())
	}
}
