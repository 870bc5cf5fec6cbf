// Package fsx is roofline's one way to write and read files that a user or
// another process could have tampered with: atomic writes that never follow
// a symlink and survive a power loss, and reads that are bounded and never
// block on a device, FIFO or socket.
//
// Every file roofline writes by replacing it (state, backups, plan files,
// the probe cache, proxy target and status files, checksum lists, copied
// binaries) goes through WriteFile or Write; internal/archtest fails the
// build on a hand-written temp-and-rename elsewhere.
package fsx

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrSymlink is returned when a destination or a file read is a symlink
// where roofline refuses one.
var ErrSymlink = errors.New("is a symbolic link")

// ErrNotRegular is returned when a file to read is a device, FIFO, socket
// or directory.
var ErrNotRegular = errors.New("is not a regular file")

// ErrTooLarge is returned when a file is over the size a read allows.
var ErrTooLarge = errors.New("is too large")

// WriteFile atomically replaces path with data, created with mode perm.
// See Write.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return Write(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Write atomically replaces path with what fill writes, created with mode
// perm (exactly: the umask does not apply):
//
//   - a symlink at path is refused (ErrSymlink): replacing it would leave
//     its target stale, writing through it would let whoever made the link
//     choose what roofline overwrites;
//   - the temporary file is created in the same directory (rename is atomic
//     only within a file system) under a random name, with O_EXCL|O_NOFOLLOW,
//     so a name planted in advance is never followed or reused;
//   - file and directory are fsynced, so after a crash path holds the old
//     content or the new, never a mix or nothing.
//
// Errors name path and its directory, never the temporary name.
func Write(path string, perm os.FileMode, fill func(io.Writer) error) (err error) {
	if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return &fs.PathError{Op: "refusing to write", Path: path, Err: ErrSymlink}
	}
	dir := filepath.Dir(path)
	tmp, err := createTemp(dir, filepath.Base(path), perm)
	if err != nil {
		return fmt.Errorf("cannot write %s: cannot create a file in %s: %w", path, dir, reason(err))
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	fail := func(what string, e error) error {
		return fmt.Errorf("cannot write %s: %s: %w", path, what, reason(e))
	}
	// The umask may have narrowed perm at creation; set it exactly.
	if err = tmp.Chmod(perm); err != nil {
		return fail("chmod", err)
	}
	if err = fill(tmp); err != nil {
		return fail("write", err)
	}
	if err = tmp.Sync(); err != nil {
		return fail("fsync", err)
	}
	if err = tmp.Close(); err != nil {
		return fail("close", err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fail("rename", err)
	}
	if err = SyncDir(dir); err != nil {
		return fail("fsync of the directory", err)
	}
	return nil
}

func createTemp(dir, base string, perm os.FileMode) (*os.File, error) {
	for range 10000 {
		var r [8]byte
		_, _ = rand.Read(r[:])
		name := filepath.Join(dir, "."+base+".tmp-"+hex.EncodeToString(r[:]))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fs.ErrExist
}

// reason strips the *PathError around err, whose path would be the
// temporary file's; callers name the real path.
func reason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// SyncDir fsyncs a directory, making a rename or a new file in it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// OpenAppend opens path for appending (a journal, a log), creating it with
// perm; a symlink at path is refused rather than followed.
func OpenAppend(path string, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, perm)
	if err != nil {
		return nil, symlinkErr(path, err)
	}
	return f, nil
}

// symlinkErr turns O_NOFOLLOW's ELOOP into ErrSymlink, whose text says what
// happened.
func symlinkErr(path string, err error) error {
	if errors.Is(err, syscall.ELOOP) {
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return &fs.PathError{Op: "open", Path: path, Err: ErrSymlink}
		}
	}
	return err
}

// CreateOnce creates path with data and mode perm if it does not exist,
// atomically: whoever comes first wins, and nobody ever sees the file
// half-written (the content is written to a temporary file that is then
// hard-linked to path, which fails if path exists). created is false when
// path already existed; its content is left as it was.
func CreateOnce(path string, data []byte, perm os.FileMode) (created bool, err error) {
	dir := filepath.Dir(path)
	tmp, err := createTemp(dir, filepath.Base(path), perm)
	if err != nil {
		return false, fmt.Errorf("cannot create %s: cannot create a file in %s: %w", path, dir, reason(err))
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return false, fmt.Errorf("cannot create %s: %w", path, reason(err))
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return false, fmt.Errorf("cannot create %s: %w", path, reason(err))
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return false, fmt.Errorf("cannot create %s: %w", path, reason(err))
	}
	if err := tmp.Close(); err != nil {
		return false, fmt.Errorf("cannot create %s: %w", path, reason(err))
	}
	if err := link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return false, nil
		}
		if !errors.Is(err, syscall.EPERM) && !errors.Is(err, syscall.ENOTSUP) && !errors.Is(err, syscall.EOPNOTSUPP) {
			return false, fmt.Errorf("cannot create %s: %w", path, reason(err))
		}
		// A filesystem without hard links (vfat, some network and FUSE
		// mounts): O_EXCL still lets only the first one create it; a
		// reader may see it while it is being written.
		return createExcl(path, data, perm)
	}
	return true, SyncDir(dir)
}

// link is os.Link; tests stand in a filesystem without hard links.
var link = os.Link

func createExcl(path string, data []byte, perm os.FileMode) (bool, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, perm)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("cannot create %s: %w", path, reason(err))
	}
	err = f.Chmod(perm) // exactly perm, whatever the umask, as the linked file
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return false, fmt.Errorf("cannot create %s: %w", path, reason(err))
	}
	return true, SyncDir(filepath.Dir(path))
}
