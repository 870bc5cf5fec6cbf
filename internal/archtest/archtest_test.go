// Package archtest checks the import layers of roofline's packages
// (docs/architecture.md): cmd → cli → plan/apply → the leaf packages.
package archtest

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/roofline/roofline/"

// allowed lists, per package, the internal packages its non-test files may
// import. A package missing here may import nothing internal.
var allowed = map[string][]string{
	"cmd/roofline":             {"internal/cli"},
	"internal/cli":             {"*"},
	"internal/config":          {"internal/suggest", "internal/version", "internal/engine/kinds"},
	"internal/engine":          {"internal/config", "internal/engine/refdata", "internal/suggest"},
	"internal/vram":            {"internal/engine/kinds"},
	"internal/plan":            {"internal/config", "internal/engine", "internal/enginelock", "internal/gpu", "internal/model", "internal/vram", "internal/vram/fromodel", "internal/state", "internal/journal", "internal/diagfmt", "internal/textdiff", "internal/version", "internal/jsonplan", "internal/suggest", "internal/portcheck"},
	"internal/apply":           {"internal/plan", "internal/driver", "internal/state", "internal/journal", "internal/proxy", "internal/proxy/launch", "internal/engine", "internal/engine/logdiag"},
	"internal/proxy/launch":    {"internal/driver", "internal/proxy", "internal/state"},
	"internal/gate":            {"internal/config", "internal/journal", "internal/engine", "internal/engine/kinds", "internal/suggest"},
	"internal/gate/gatetest":   {"internal/engine/kinds"},
	"internal/proxy":           {"internal/engine"},
	"internal/enginelock":      {"internal/config", "internal/engine"},
	"internal/views":           {"internal/agent", "internal/apply", "internal/gate", "internal/plan", "internal/jsonplan", "internal/diagfmt", "internal/version", "internal/state", "internal/journal", "internal/gpu", "internal/model", "internal/vram", "internal/engine", "internal/engine/logdiag", "internal/textdiff", "internal/enginelock", "internal/snapshot", "internal/suggest"},
	"internal/snapshot":        {"internal/config", "internal/engine", "internal/gpu", "internal/journal", "internal/model", "internal/plan", "internal/rehearsal", "internal/state", "internal/version", "internal/vram"},
	"internal/agent":           {"internal/state", "internal/journal", "internal/jsonplan", "internal/engine", "internal/engine/logdiag"},
	"internal/agent/live":      {"internal/agent", "internal/apply", "internal/config", "internal/gate", "internal/plan", "internal/snapshot", "internal/state"},
	"internal/journal":         {"internal/jsonplan", "internal/state", "internal/gpu"},
	"internal/rehearsal":       {"internal/config", "internal/engine", "internal/engine/kinds", "internal/engine/refdata", "internal/model", "internal/vram", "internal/vram/fromodel", "internal/gpu"},
	"internal/state":           {"internal/version", "internal/suggest"},
	"internal/driver":          {"internal/state", "internal/config"},
	"internal/driver/process":  {"internal/driver", "internal/state", "internal/config", "internal/portcheck"},
	"internal/driver/docker":   {"internal/driver", "internal/state", "internal/config", "internal/engine"},
	"internal/kube":            {"internal/config", "internal/engine"},
	"internal/kube/live":       {"internal/config", "internal/kube", "internal/engine", "internal/engine/logdiag", "internal/gpu", "internal/model", "internal/vram", "internal/vram/fromodel", "internal/textdiff"},
	"internal/vram/fromodel":   {"internal/model", "internal/vram"},
	"internal/model/modeltest": {"internal/model", "internal/suggest"},
	"internal/gpu":             {"internal/suggest"},
	"internal/gpu/gputest":     {"internal/gpu"},
	// Test helpers (conformance suites, builders) of their parent package.
	"internal/state/statetest":          {"internal/state"},
	"internal/driver/drivertest":        {"internal/driver", "internal/state"},
	"internal/driver/docker/dockertest": {"internal/driver/docker"},
}

func TestImportLayers(t *testing.T) {
	root, files := goSources(t)
	checked := 0
	for _, file := range files {
		path, rel := filepath.Join(root, file), filepath.Dir(file)
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !strings.HasPrefix(p, module) {
				continue
			}
			dep := strings.TrimPrefix(p, module)
			checked++
			if dep == "internal/cli" && rel != "cmd/roofline" {
				t.Errorf("%s imports internal/cli: nothing but main may", path)
			}
			if dep == "internal/views" && rel != "internal/cli" {
				t.Errorf("%s imports internal/views: only cli builds views (a layer below returns data)", path)
			}
			if !permitted(rel, dep) {
				t.Errorf("%s imports %s, which its layer may not (docs/architecture.md)", path, dep)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no internal imports found: the walk is broken")
	}
}

// leaves are imported by any package: they import nothing internal.
var leaves = []string{"internal/fsx", "internal/secret"}

// permitted: a package may import its own subpackages' helpers listed for
// it, the shared leaves, and what the table allows.
func permitted(pkg, dep string) bool {
	if slices.Contains(leaves, dep) && !slices.Contains(leaves, pkg) {
		return true
	}
	for _, a := range allowed[pkg] {
		if a == "*" || a == dep {
			return true
		}
	}
	// Parent packages may use their own subpackages (engine → engine/logdiag).
	if strings.HasPrefix(dep, pkg+"/") {
		return true
	}
	return false
}
