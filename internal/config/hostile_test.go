package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A FIFO named *.hcl is refused with a diagnostic naming it, not waited on.
func TestLoadDirRefusesAFIFO(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "main.hcl")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 1)
	go func() {
		_, diags := LoadDir(dir)
		done <- diags.Error()
	}()
	select {
	case msg := <-done:
		if !strings.Contains(msg, path) || !strings.Contains(msg, "FIFO") {
			t.Fatalf("diagnostic %q does not name the FIFO", msg)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("LoadDir blocked on a FIFO")
	}
}

// A 100,000-deep file on disk (200 KB) gives a diagnostic through LoadDir.
func TestLoadDirDeepFile(t *testing.T) {
	dir := t.TempDir()
	src := "x = " + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "\n"
	os.WriteFile(filepath.Join(dir, "deep.hcl"), []byte(src), 0o600)
	_, diags := LoadDir(dir)
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "nested too deeply") {
		t.Fatalf("diags = %v", diags)
	}
}
