package config

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRewrite(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "main.hcl")
	target := filepath.Join(dir, "dotfiles", "servers.hcl")
	link := filepath.Join(dir, "servers.hcl")
	if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
		t.Fatal(err)
	}
	for path, mode := range map[string]os.FileMode{plain: 0o640, target: 0o600} {
		if err := os.WriteFile(path, []byte("old\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil { // past the umask
			t.Fatal(err)
		}
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path, written string
		mode                os.FileMode
		wantErr             bool
	}{
		{name: "keeps the mode", path: plain, written: plain, mode: 0o640},
		{name: "a symlink is written where it points", path: link, written: target, mode: 0o600},
		{name: "a missing file", path: filepath.Join(dir, "gone.hcl"), wantErr: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Rewrite(c.path, []byte("new\n"))
			if c.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(c.written)
			if err != nil || string(got) != "new\n" {
				t.Errorf("%s holds %q, %v", c.written, got, err)
			}
			fi, err := os.Lstat(c.written)
			if err != nil || fi.Mode() != c.mode {
				t.Errorf("%s: mode %v, %v; want %v", c.written, fi.Mode(), err, c.mode)
			}
		})
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink was replaced: %v, %v", fi.Mode(), err)
	}
}
