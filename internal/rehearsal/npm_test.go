package rehearsal

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestOpenAINpmClient runs the official openai npm SDK (testdata/npm,
// pinned by its package-lock.json) against every emulated engine version.
// It needs node and the installed package: `npm ci --prefix
// internal/rehearsal/testdata/npm` (.ci/run does it and sets
// ROOFLINE_NPM_REQUIRED=1, which turns the skip into a failure).
func TestOpenAINpmClient(t *testing.T) {
	dir, _ := filepath.Abs(filepath.Join("testdata", "npm"))
	node, err := exec.LookPath("node")
	_, statErr := os.Stat(filepath.Join(dir, "node_modules", "openai", "package.json"))
	if err != nil || statErr != nil {
		msg := "node or the openai npm package is missing; run: npm ci --prefix internal/rehearsal/testdata/npm"
		if os.Getenv("ROOFLINE_NPM_REQUIRED") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	for _, ev := range engineVersions {
		t.Run(ev.kind+"-"+ev.version, func(t *testing.T) {
			srv := clientServer(t, ev.kind, ev.version, ev.parser)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, "client.mjs", srv.URL, ev.kind, ev.version)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("node client.mjs: %v\n%s", err, out)
			}
		})
	}
}
