package fsx

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestWriteFileReplacesAtomicallyWithExactMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	for i, data := range []string{"first\n", "second\n"} {
		perm := []os.FileMode{0o600, 0o755}[i]
		if err := WriteFile(path, []byte(data), perm); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(path)
		if string(got) != data {
			t.Fatalf("content %q, want %q", got, data)
		}
		fi, _ := os.Stat(path)
		if fi.Mode().Perm() != perm {
			t.Fatalf("mode %v, want %v (umask must not apply)", fi.Mode().Perm(), perm)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

func TestWriteRefusesASymlinkedDestination(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "precious")
	os.WriteFile(target, []byte("keep me"), 0o600)
	link := filepath.Join(dir, "state.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	err := WriteFile(link, []byte("overwrite"), 0o600)
	if !errors.Is(err, ErrSymlink) || !strings.Contains(err.Error(), link) {
		t.Fatalf("err = %v, want a refusal naming %s", err, link)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep me" {
		t.Fatalf("target changed to %q", b)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the symlink was replaced")
	}
}

func TestWriteErrorNamesTheDirectoryNotTheTempFile(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes into read-only directories")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o500)
	defer os.Chmod(dir, 0o700)
	err := WriteFile(filepath.Join(dir, "state.json"), []byte("x"), 0o600)
	if err == nil {
		t.Fatal("write into a read-only directory succeeded")
	}
	msg := err.Error()
	if !strings.Contains(msg, "cannot create a file in "+dir) || strings.Contains(msg, ".tmp-") || !errors.Is(err, os.ErrPermission) {
		t.Fatalf("unclear error: %v", msg)
	}
}

func TestWriteFailureLeavesTheOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "plan")
	os.WriteFile(path, []byte("old"), 0o600)
	boom := errors.New("disk full")
	err := Write(path, 0o600, func(w io.Writer) error {
		w.Write([]byte("half"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Fatalf("content %q after a failed write", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("temporary file left: %v", entries)
	}
}

func TestReadFileRefusesDevicesAndFIFOsWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "config.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, kind string }{
		{fifo, "FIFO"},
		{zero, "character device"},
		{dir, "directory"},
	} {
		done := make(chan error, 1)
		go func() {
			_, err := ReadFile(tc.path, 1<<20)
			done <- err
		}()
		select {
		case err := <-done:
			if !IsNotRegular(err) || !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.kind) {
				t.Errorf("%s: err = %v, want a refusal naming the file and %q", tc.path, err, tc.kind)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("reading %s blocked", tc.path)
		}
	}
}

func TestReadFileCapsSize(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	os.WriteFile(path, []byte(strings.Repeat("x", 100)), 0o600)
	if b, err := ReadFile(path, 100); err != nil || len(b) != 100 {
		t.Fatalf("at the cap: %d bytes, %v", len(b), err)
	}
	_, err := ReadFile(path, 99)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "99") {
		t.Fatalf("err = %v", err)
	}
}

func TestReadFollowsLinksUnlessNoFollow(t *testing.T) {
	dir := t.TempDir()
	blob := filepath.Join(dir, "blob")
	os.WriteFile(blob, []byte("{}"), 0o600)
	link := filepath.Join(dir, "config.json")
	os.Symlink(blob, link)
	if b, err := ReadFile(link, 10); err != nil || string(b) != "{}" {
		t.Fatalf("through a link: %q, %v", b, err)
	}
	if _, err := ReadFileNoFollow(link, 10); !errors.Is(err, ErrSymlink) {
		t.Fatalf("NoFollow: err = %v", err)
	}
}

func TestOpenAppendRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	os.WriteFile(target, []byte("keep"), 0o600)
	link := filepath.Join(dir, "journal.jsonl")
	os.Symlink(target, link)
	if _, err := OpenAppend(link, 0o600); !errors.Is(err, ErrSymlink) {
		t.Fatalf("err = %v", err)
	}
	f, err := OpenAppend(filepath.Join(dir, "j"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// CreateOnce: the first caller creates the file with its mode and content,
// every later or concurrent one finds it and changes nothing; so too on a
// filesystem without hard links.
func TestCreateOnce(t *testing.T) {
	for _, noLinks := range []bool{false, true} {
		name := "hard links"
		if noLinks {
			name = "no hard links"
		}
		t.Run(name, func(t *testing.T) {
			if noLinks {
				link = func(string, string) error { return &os.LinkError{Op: "link", Err: syscall.EPERM} }
				t.Cleanup(func() { link = os.Link })
			}
			old := syscall.Umask(0o077)
			defer syscall.Umask(old)
			dir := t.TempDir()
			path := filepath.Join(dir, "generated.hcl")
			created, err := CreateOnce(path, []byte("first\n"), 0o644)
			if err != nil || !created {
				t.Fatalf("first: created %v, %v", created, err)
			}
			created, err = CreateOnce(path, []byte("second\n"), 0o600)
			if err != nil || created {
				t.Fatalf("second: created %v, %v", created, err)
			}
			b, _ := os.ReadFile(path)
			fi, _ := os.Stat(path)
			if string(b) != "first\n" || fi.Mode().Perm() != 0o644 {
				t.Errorf("content %q mode %v, want the first caller's", b, fi.Mode().Perm())
			}
			// Many at once: one creates.
			race := filepath.Join(dir, "race")
			var wins int
			var mu sync.Mutex
			var wg sync.WaitGroup
			for i := 0; i < 16; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c, err := CreateOnce(race, []byte("x"), 0o600)
					if err != nil {
						t.Error(err)
					}
					if c {
						mu.Lock()
						wins++
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if wins != 1 {
				t.Errorf("%d callers created the file, want 1", wins)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
				t.Errorf("temporary files left: %v", left)
			}
		})
	}
}
