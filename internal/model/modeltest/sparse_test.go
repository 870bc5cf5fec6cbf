//go:build unix

package modeltest_test

import (
	"os"
	"syscall"
	"testing"

	"github.com/roofline/roofline/internal/model/modeltest"
)

// Sparse data: a 16 GB model must not take 16 GB of disk.
func TestSparse(t *testing.T) {
	dir := t.TempDir()
	if err := modeltest.Write(dir, modeltest.Llama31_8B); err != nil {
		t.Fatal(err)
	}
	var blocks int64
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		fi, _ := e.Info()
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			blocks += st.Blocks * 512
		}
	}
	if blocks > 64<<20 {
		t.Errorf("the folder takes %d bytes of disk", blocks)
	}
}
