package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// unaware are the trees that never see the rehearsal engine: cli resolves
// it to a plain engine command (rehearsal.Resolve) and recognises its
// command line for import (rehearsal.Recognize), so plan and engine know
// commands only (docs/architecture.md).
var unaware = []string{"internal/plan", "internal/engine"}

// TestRehearsalUnseen: no code of plan or engine names the rehearsal engine:
// no identifier (e.Rehearsal), no "rehearsal" word as a literal of its own,
// no import of internal/rehearsal. Comments and messages to people may.
func TestRehearsalUnseen(t *testing.T) {
	root, rels := goSources(t, unaware...)
	parsed := 0
	for _, rel := range rels {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed++
		ast.Inspect(f, func(n ast.Node) bool {
			var bad string
			switch n := n.(type) {
			case *ast.Ident:
				if strings.Contains(strings.ToLower(n.Name), "rehearsal") {
					bad = n.Name
				}
			case *ast.BasicLit:
				if v, err := strconv.Unquote(n.Value); err == nil && n.Kind == token.STRING &&
					(strings.EqualFold(strings.TrimSpace(v), "rehearsal") || strings.HasSuffix(v, "/internal/rehearsal")) {
					bad = n.Value
				}
			}
			if bad != "" {
				t.Errorf("%s:%d names the rehearsal engine (%s): cli resolves it to a command, see internal/rehearsal Resolve and Recognize", rel, fset.Position(n.Pos()).Line, bad)
			}
			return true
		})
	}
	if parsed < 20 {
		t.Fatalf("only %d files parsed: the walk is broken", parsed)
	}
}
