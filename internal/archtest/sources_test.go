package archtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goSources returns the module's root and its non-test Go files below each
// of trees (the whole module when none is given), relative to the root.
// Folders named testdata or node_modules, and hidden ones, are skipped.
func goSources(t *testing.T, trees ...string) (root string, rels []string) {
	t.Helper()
	root, _ = filepath.Abs("../..")
	if len(trees) == 0 {
		trees = []string{"."}
	}
	for _, tree := range trees {
		err := filepath.WalkDir(filepath.Join(root, tree), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if name := d.Name(); path != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".")) {
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
				rel, _ := filepath.Rel(root, path)
				rels = append(rels, rel)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return root, rels
}
