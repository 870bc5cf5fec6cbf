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

// driverBlind are the trees that reach drivers only through the set cli
// fills (driver.Set: its choice, its words): they never name one, so that
// a new driver is a package and a line in cli/wire.go.
var driverBlind = []string{"internal/plan", "internal/apply", "internal/views"}

// TestNoDriverNames: no non-test code of plan, apply or views names a
// driver, neither state's constants (state.DriverDocker) nor their values
// ("docker"): plan asks the set which driver runs a server (Set.Choose),
// apply and views ask it how to read and word an instance (Read,
// StopHint, Identity).
func TestNoDriverNames(t *testing.T) {
	root, _ := filepath.Abs("../..")
	consts, names := driverConsts(t, filepath.Join(root, "internal/state"))
	if len(consts) < 2 {
		t.Fatalf("found the driver constants %v in internal/state: the scan is broken", consts)
	}
	_, rels := goSources(t, driverBlind...)
	checked := 0
	for _, rel := range rels {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			switch e := n.(type) {
			case *ast.SelectorExpr:
				if x, ok := e.X.(*ast.Ident); ok && x.Name == "state" && consts[e.Sel.Name] {
					t.Errorf("%s:%d names state.%s: ask the driver set instead (docs/architecture.md, Adding a driver)", rel, fset.Position(e.Pos()).Line, e.Sel.Name)
				}
			case *ast.BasicLit:
				if s, err := strconv.Unquote(e.Value); e.Kind == token.STRING && err == nil && names[s] {
					t.Errorf("%s:%d names the driver %q: ask the driver set instead (docs/architecture.md, Adding a driver)", rel, fset.Position(e.Pos()).Line, s)
				}
			}
			return true
		})
	}
	if checked < 50 {
		t.Fatalf("only %d files of %v checked: the walk is broken", checked, driverBlind)
	}
}

// driverConsts returns state's Driver* string constants and their values.
func driverConsts(t *testing.T, dir string) (consts, values map[string]bool) {
	consts, values = map[string]bool{}, map[string]bool{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, id := range vs.Names {
				if !strings.HasPrefix(id.Name, "Driver") || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, _ := strconv.Unquote(lit.Value)
					consts[id.Name], values[v] = true, true
				}
			}
			return true
		})
	}
	return consts, values
}
