package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoHandWrittenAtomicWrites: every file replaced by temp-and-rename goes
// through internal/fsx, which refuses symlinked destinations, creates its
// temporary file O_EXCL|O_NOFOLLOW and fsyncs. A hand-written copy elsewhere
// is how a symlinked ".tmp" got written through before.
func TestNoHandWrittenAtomicWrites(t *testing.T) {
	root, rels := goSources(t)
	files := 0
	for _, rel := range rels {
		if dir := filepath.Dir(rel); dir == "internal/fsx" || strings.HasPrefix(dir, "internal/fsx/") {
			continue
		}
		path := filepath.Join(root, rel)
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		files++
		for _, p := range handWrittenAtomicWrites(path, src) {
			t.Errorf("%s: hand-written atomic write (%s); use fsx.WriteFile or fsx.Write", path, p)
		}
	}
	if files == 0 {
		t.Fatal("no Go files found: the walk is broken")
	}
}

// handWrittenAtomicWrites returns, per function of src, why it looks like a
// temp-and-rename write: os.CreateTemp at all, os.Rename in a function that
// also calls os.WriteFile, or os.Rename of a path built with "tmp".
func handWrittenAtomicWrites(name string, src []byte) []string {
	f, err := parser.ParseFile(token.NewFileSet(), name, src, 0)
	if err != nil {
		return []string{"does not parse: " + err.Error()}
	}
	var found []string
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		calls := map[string]bool{}
		tmpRename := false
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); !ok || id.Name != "os" {
				return true
			}
			calls[sel.Sel.Name] = true
			if sel.Sel.Name == "Rename" && len(call.Args) > 0 && mentionsTmp(call.Args[0]) {
				tmpRename = true
			}
			return true
		})
		switch {
		case calls["CreateTemp"]:
			found = append(found, fn.Name.Name+" calls os.CreateTemp")
		case calls["Rename"] && calls["WriteFile"]:
			found = append(found, fn.Name.Name+" calls os.WriteFile and os.Rename")
		case tmpRename:
			found = append(found, fn.Name.Name+" renames a temporary file")
		}
	}
	return found
}

func mentionsTmp(e ast.Expr) bool {
	hit := false
	ast.Inspect(e, func(n ast.Node) bool {
		switch v := n.(type) {
		case *ast.BasicLit:
			hit = hit || strings.Contains(strings.ToLower(v.Value), "tmp")
		case *ast.Ident:
			hit = hit || strings.Contains(strings.ToLower(v.Name), "tmp")
		}
		return true
	})
	return hit
}

// The check itself must catch the shapes it is meant to.
func TestHandWrittenAtomicWriteShapesAreCaught(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want bool
	}{
		{`func f(p string, b []byte) error { t, _ := os.CreateTemp("", "x"); return os.Rename(t.Name(), p) }`, true},
		{`func f(p string, b []byte) error { os.WriteFile(p+".tmp", b, 0o600); return os.Rename(p+".tmp", p) }`, true},
		{`func f(tmp, p string) error { return os.Rename(tmp, p) }`, true},
		{`func f(p string) error { return os.Rename(p, p+".1") }`, false},
		{`func f(p string, b []byte) error { return os.WriteFile(p, b, 0o600) }`, false},
	} {
		got := handWrittenAtomicWrites("x.go", []byte("package x\nimport \"os\"\n"+tc.src))
		if (len(got) > 0) != tc.want {
			t.Errorf("%s: found %v, want found=%v", tc.src, got, tc.want)
		}
	}
}
