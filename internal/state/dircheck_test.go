package state

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/fsx"
)

func TestCheckDirRefusesGroupOrWorldWritable(t *testing.T) {
	for _, tc := range []struct {
		mode os.FileMode
		want string // "" means accepted
	}{
		{0o700, ""},
		{0o755, ""},
		{0o775, "writable by its group (mode 0775)"},
		{0o777, "writable by everyone (mode 0777)"},
		{0o1777, "writable by everyone"},
	} {
		dir := filepath.Join(t.TempDir(), "state")
		os.Mkdir(dir, 0o700)
		if err := os.Chmod(dir, tc.mode); err != nil {
			t.Fatal(err)
		}
		fs := NewFilesystem(dir)
		for op, run := range map[string]func() error{
			"read":  func() error { _, err := fs.Read(); return err },
			"write": func() error { return fs.Write(NewFile()) },
			"lock": func() error {
				id, err := fs.Lock(context.Background(), nil)
				if err == nil {
					fs.Unlock(id)
				}
				return err
			},
		} {
			err := run()
			if tc.want == "" {
				if err != nil {
					t.Errorf("mode %04o %s: %v", tc.mode, op, err)
				}
				continue
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "chmod go-w "+dir) {
				t.Errorf("mode %04o %s: err = %v, want %q and the chmod", tc.mode, op, err, tc.want)
			}
		}
		if tc.want != "" {
			if _, err := os.Stat(filepath.Join(dir, StateFileName)); err == nil {
				t.Errorf("mode %04o: a state was written into a refused directory", tc.mode)
			}
		}
	}
}

func TestCheckDirRefusesAnotherOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing a directory's owner needs root")
	}
	dir := t.TempDir()
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	err := CheckDir(dir)
	if err == nil || !strings.Contains(err.Error(), "owned by uid 65534") || !strings.Contains(err.Error(), "chown -R 0 "+dir) {
		t.Fatalf("err = %v", err)
	}
}

func TestSymlinkedStateFileIsAnError(t *testing.T) {
	dir := t.TempDir()
	fs := NewFilesystem(dir)
	elsewhere := filepath.Join(t.TempDir(), "real-state.json")
	f := NewFile()
	f.Lineage = "11111111-2222-3333-4444-555555555555"
	if err := WriteFile(elsewhere, f); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(elsewhere)
	if err := os.Symlink(elsewhere, fs.StatePath()); err != nil {
		t.Fatal(err)
	}
	_, rerr := fs.Read()
	werr := fs.Write(NewFile())
	for op, err := range map[string]error{"read": rerr, "write": werr} {
		if !errors.Is(err, fsx.ErrSymlink) || !strings.Contains(err.Error(), "state file "+fs.StatePath()+" is a symbolic link") ||
			!strings.Contains(err.Error(), "mv "+elsewhere+" "+fs.StatePath()) {
			t.Errorf("%s: err = %v", op, err)
		}
	}
	if after, _ := os.ReadFile(elsewhere); string(after) != string(before) {
		t.Error("the link's target changed")
	}
	if fi, _ := os.Lstat(fs.StatePath()); fi.Mode()&os.ModeSymlink == 0 {
		t.Error("the link was replaced by a regular file")
	}
}

func TestSymlinkedLockFileIsAnErrorAndItsTargetIsNotTruncated(t *testing.T) {
	dir := t.TempDir()
	fs := NewFilesystem(dir)
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("precious"), 0o600)
	if err := os.Symlink(victim, fs.LockPath()); err != nil {
		t.Fatal(err)
	}
	_, err := fs.Lock(context.Background(), nil)
	if !errors.Is(err, fsx.ErrSymlink) || !strings.Contains(err.Error(), "lock file "+fs.LockPath()+" is a symbolic link") {
		t.Fatalf("err = %v", err)
	}
	if _, err := fs.LockStatus(); !errors.Is(err, fsx.ErrSymlink) {
		t.Fatalf("LockStatus: err = %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Fatalf("the link's target became %q", b)
	}
}
