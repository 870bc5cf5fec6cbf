package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
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
	root, _ := filepath.Abs("../..")
	parsed := 0
	for _, tree := range unaware {
		err := filepath.WalkDir(filepath.Join(root, tree), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "testdata" {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			parsed++
			rel, _ := filepath.Rel(root, path)
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
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if parsed < 20 {
		t.Fatalf("only %d files parsed: the walk is broken", parsed)
	}
}
