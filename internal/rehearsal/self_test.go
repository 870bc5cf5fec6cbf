package rehearsal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestInstallSelf(t *testing.T) {
	dir, stateDir := t.TempDir(), t.TempDir()
	exe := filepath.Join(dir, "roofline")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\necho one\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	first, err := InstallSelf(exe, stateDir)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(first) != filepath.Join(stateDir, "bin") || !strings.HasPrefix(filepath.Base(first), "roofline-") {
		t.Errorf("copy at %s", first)
	}
	if b, err := os.ReadFile(first); err != nil || string(b) != "#!/bin/sh\necho one\n" {
		t.Errorf("copy holds %q (%v)", b, err)
	}
	if fi, err := os.Stat(first); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Errorf("copy is not executable: %v %v", fi.Mode(), err)
	}
	if again, err := InstallSelf(exe, stateDir); err != nil || again != first {
		t.Errorf("the same binary again: %s (%v), want %s", again, err, first)
	}

	// A new build: a new copy, and the old one goes.
	if err := os.WriteFile(exe, []byte("#!/bin/sh\necho two\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Second)
	_ = os.Chtimes(exe, later, later)
	second, err := InstallSelf(exe, stateDir)
	if err != nil || second == first {
		t.Fatalf("a changed binary: %s (%v)", second, err)
	}
	if _, err := os.Stat(first); !os.IsNotExist(err) {
		t.Errorf("the old copy is still there: %v", err)
	}
	if _, err := InstallSelf(filepath.Join(dir, "none"), stateDir); err == nil {
		t.Error("a missing executable: no error")
	}
}
