package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/engine/kinds"
)

// kindExempt are the trees that may compare engine kinds: the kinds' own
// files (internal/engine) and the rehearsal engine, which plays each kind.
var kindExempt = []string{"internal/engine", "internal/rehearsal"}

// kindChecked are folders inside the exempt trees that are checked all the
// same, and must not even name a kind: the log classifier, whose kind-specific
// rules come from each kind (engine/NAME_log.go).
var kindChecked = []string{"internal/engine/logdiag"}

// kindExempted reports whether the files of folder dir are exempt.
func kindExempted(dir string) bool {
	under := func(roots []string) bool {
		for _, r := range roots {
			if dir == r || strings.HasPrefix(dir, r+"/") {
				return true
			}
		}
		return false
	}
	return !under(kindChecked) && under(kindExempt)
}

// TestNoKindSwitches: outside the exempt trees, no code compares a value
// with an engine kind's name (== "vllm", case kinds.SGLang, a constant
// holding "sglang"): it asks the kind (engine.Lookup) instead, so that a new
// kind is a file set in internal/engine and not a hunt through the tree.
func TestNoKindSwitches(t *testing.T) {
	root, rels := goSources(t)
	type parsed struct {
		rel  string
		fset *token.FileSet
		f    *ast.File
	}
	var files []parsed
	for _, rel := range rels {
		if kindExempted(filepath.Dir(rel)) {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, parsed{rel, fset, f})
	}
	if len(files) < 100 {
		t.Fatalf("only %d files parsed: the walk is broken", len(files))
	}
	consts := map[string]bool{}
	for _, p := range files {
		kindConsts(p.f, consts)
	}
	checked := 0
	for _, p := range files {
		for _, pos := range kindComparisons(p.fset, p.f, consts) {
			t.Errorf("%s:%d compares with an engine kind's name: ask the kind (engine.Lookup(name)) instead (docs/architecture.md, Adding an engine kind)", p.rel, pos.Line)
		}
		if slices.ContainsFunc(kindChecked, func(c string) bool { return strings.HasPrefix(p.rel, c+"/") }) {
			checked++
			for _, pos := range kindNames(p.fset, p.f) {
				t.Errorf("%s:%d names an engine kind: its lines belong to the kind's Rules (internal/engine/NAME_log.go)", p.rel, pos.Line)
			}
		}
	}
	if checked == 0 {
		t.Errorf("no file of %v checked: the walk is broken", kindChecked)
	}
}

// kindNames returns where f writes a kind's name as a string.
func kindNames(fset *token.FileSet, f *ast.File) []token.Position {
	var out []token.Position
	ast.Inspect(f, func(n ast.Node) bool {
		if e, ok := n.(ast.Expr); ok && kindLiteral(e) {
			out = append(out, fset.Position(e.Pos()))
		}
		return true
	})
	return out
}

// isKindName reports whether s is the name of an engine kind.
func isKindName(s string) bool { return slices.Contains(kinds.Names(), s) }

// kindConsts adds to consts the constants of f whose value is a kind's
// name (config's old KindVLLM = "vllm").
func kindConsts(f *ast.File, consts map[string]bool) {
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, v := range vs.Values {
			if kindLiteral(v) && i < len(vs.Names) {
				consts[vs.Names[i].Name] = true
			}
		}
		return true
	})
}

func kindLiteral(e ast.Expr) bool {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return false
	}
	s, err := strconv.Unquote(lit.Value)
	return err == nil && isKindName(s)
}

// kindOperand: a kind name written out, a selector of the kinds package
// (kinds.VLLM), or a constant that holds a kind name.
func kindOperand(e ast.Expr, consts map[string]bool) bool {
	switch x := e.(type) {
	case *ast.ParenExpr:
		return kindOperand(x.X, consts)
	case *ast.BasicLit:
		return kindLiteral(x)
	case *ast.Ident:
		return consts[x.Name]
	case *ast.SelectorExpr:
		if pkg, ok := x.X.(*ast.Ident); ok && pkg.Name == "kinds" {
			return true
		}
		return consts[x.Sel.Name]
	}
	return false
}

// kindComparisons returns where f compares with a kind: ==, != and switch
// cases.
func kindComparisons(fset *token.FileSet, f *ast.File, consts map[string]bool) []token.Position {
	var out []token.Position
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.BinaryExpr:
			if (x.Op == token.EQL || x.Op == token.NEQ) && (kindOperand(x.X, consts) || kindOperand(x.Y, consts)) {
				out = append(out, fset.Position(x.Pos()))
			}
		case *ast.CaseClause:
			for _, e := range x.List {
				if kindOperand(e, consts) {
					out = append(out, fset.Position(e.Pos()))
					break
				}
			}
		}
		return true
	})
	return out
}

// TestKindComparisonsFound: the check above finds what it must and only that.
func TestKindComparisonsFound(t *testing.T) {
	for _, c := range []struct {
		name, src string
		want      int
	}{
		{"equal literal", `if k == "vllm" {}`, 1},
		{"literal first", `if "sglang" != k {}`, 1},
		{"switch case", `switch k { case "tgi": case "sglang": }`, 1},
		{"case list", `switch k { case "", "vllm", "sglang": }`, 1},
		{"kinds selector", `if e.Kind == kinds.SGLang {}`, 1},
		{"kinds selector in case", `switch k { case kinds.VLLM: }`, 1},
		{"local constant", `const mine = "vllm"; if k == mine {}`, 1},
		{"package constant", `if k == config.KindVLLM {}`, 1},
		{"parenthesised", `if (k) == ("vllm") {}`, 1},
		{"two in one condition", `if k == "vllm" || k == "sglang" {}`, 2},
		{"a map keyed by kind", `m := map[string]int{"vllm": 1, kinds.SGLang: 2}; _ = m["vllm"]`, 0},
		{"assignment", `k = "vllm"; f(kinds.SGLang)`, 0},
		{"other strings", `if k == "vllmx" || k == "Service" {}`, 0},
		{"a lookup", `if engine.Lookup(k).APIKeyEnv == "" {}`, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := "package p\n\nconst KindVLLM = \"vllm\"\n\nfunc f(k string) {\n" + c.src + "\n}\n"
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "p.go", src, 0)
			if err != nil {
				t.Fatal(err)
			}
			consts := map[string]bool{}
			kindConsts(f, consts)
			if got := kindComparisons(fset, f, consts); len(got) != c.want {
				t.Errorf("found %d comparisons %v, want %d", len(got), got, c.want)
			}
		})
	}
}
