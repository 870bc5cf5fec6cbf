package model_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/model"
	"github.com/roofline/roofline/internal/model/modeltest"
)

// A model folder comes from elsewhere. Its JSON files linked to /dev/zero,
// or replaced by FIFOs with no writer, must give an error naming the file
// within moments: not 12 GB read in 20 s, not a hang.
func TestInspectRefusesDevicesAndFIFOs(t *testing.T) {
	for _, tc := range []struct {
		file, kind string
		fifo       bool
	}{
		{"config.json", "character device", false},
		{"config.json", "FIFO", true},
		{"tokenizer_config.json", "FIFO", true},
		{model.IndexFile, "character device", false},
	} {
		t.Run(tc.file+"/"+tc.kind, func(t *testing.T) {
			dir := t.TempDir()
			if err := modeltest.Write(dir, modeltest.Qwen3_0_6B, modeltest.Shards(2)); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, tc.file)
			os.Remove(path)
			var err error
			if tc.fifo {
				err = syscall.Mkfifo(path, 0o600)
			} else {
				err = os.Symlink("/dev/zero", path)
			}
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan *model.Info, 1)
			go func() {
				info, _ := model.Inspect(dir)
				done <- info
			}()
			var info *model.Info
			select {
			case info = <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("Inspect blocked on %s", tc.file)
			}
			for _, p := range info.Problems {
				if p.Severity == model.SeverityError && p.File == tc.file &&
					strings.Contains(p.Detail, path) && strings.Contains(p.Detail, tc.kind) && strings.Contains(p.Detail, "not a regular file") {
					return
				}
			}
			t.Fatalf("no error naming %s as a %s: %+v", path, tc.kind, info.Problems)
		})
	}
}

func TestInspectCapsConfigSize(t *testing.T) {
	dir := t.TempDir()
	if err := modeltest.Write(dir, modeltest.Qwen3_0_6B); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.json")
	// A sparse 1 GiB config.json: refused from its size, not read.
	if err := os.Truncate(path, 1<<30); err != nil {
		t.Fatal(err)
	}
	info, _ := model.Inspect(dir)
	for _, p := range info.Problems {
		if p.File == "config.json" && strings.Contains(p.Detail, "roofline reads at most") {
			return
		}
	}
	t.Fatalf("no size error: %+v", info.Problems)
}
