package plan

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/roofline/roofline/internal/fsx"
)

// plan -out never writes through a symlink: neither a symlinked
// destination nor a planted "<out>.tmp" link.
func TestSaveNeverWritesThroughASymlink(t *testing.T) {
	p := run(t, tc{hcl: qwenServer})
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("precious"), 0o600)

	out := filepath.Join(dir, "plan.out")
	os.Symlink(victim, out)
	if err := Save(out, p, testKey); !errors.Is(err, fsx.ErrSymlink) {
		t.Fatalf("symlinked -out: err = %v, want a refusal", err)
	}

	out2 := filepath.Join(dir, "plan2.out")
	os.Symlink(victim, out2+".tmp")
	if err := Save(out2, p, testKey); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(out2); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Fatalf("plan file: %v %v", fi, err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Fatalf("the link's target became %q", b)
	}
}

var testKey = []byte("0123456789abcdef0123456789abcdef")
