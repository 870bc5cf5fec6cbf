package fsx

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// OpenRegular opens path for reading and returns it with its FileInfo only
// when it is a regular file. A device, FIFO or socket is refused without
// blocking: the open is non-blocking (a FIFO with no writer would otherwise
// hang the open forever) and the check is fstat on what was opened, so a
// path swapped between a stat and the open cannot slip through. Symlinks
// are followed (model folders are often links into a download cache); what
// they point to is what is checked.
func OpenRegular(path string) (*os.File, fs.FileInfo, error) {
	return openRegular(path, 0)
}

// OpenRegularNoFollow is OpenRegular refusing a symlink at path
// (ErrSymlink): for files roofline owns, where a link is tampering.
func OpenRegularNoFollow(path string) (*os.File, fs.FileInfo, error) {
	return openRegular(path, syscall.O_NOFOLLOW)
}

func openRegular(path string, extra int) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC|extra, 0)
	if err != nil {
		if extra&syscall.O_NOFOLLOW != 0 {
			err = symlinkErr(path, err)
		}
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, &NotRegularError{Path: path, Mode: fi.Mode()}
	}
	return f, fi, nil
}

// ReadFile reads a regular file of at most max bytes (see OpenRegular).
// A larger file is refused with ErrTooLarge before it is read; a file that
// grows while read is cut off at max+1 bytes and refused too.
func ReadFile(path string, max int64) ([]byte, error) {
	f, fi, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(f, fi, path, max)
}

// ReadFileNoFollow is ReadFile refusing a symlink at path.
func ReadFileNoFollow(path string, max int64) ([]byte, error) {
	f, fi, err := OpenRegularNoFollow(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(f, fi, path, max)
}

func readAll(f *os.File, fi fs.FileInfo, path string, max int64) ([]byte, error) {
	if fi.Size() > max {
		return nil, &TooLargeError{Path: path, Size: fi.Size(), Max: max}
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, &TooLargeError{Path: path, Size: -1, Max: max}
	}
	return b, nil
}

// NotRegularError says which file was refused and what it is.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file; roofline reads only regular files here", e.Path, Kind(e.Mode))
}

func (e *NotRegularError) Unwrap() error { return ErrNotRegular }

// TooLargeError says which file was refused and the limit.
type TooLargeError struct {
	Path string
	Size int64 // -1 when it grew while read
	Max  int64
}

func (e *TooLargeError) Error() string {
	if e.Size < 0 {
		return fmt.Sprintf("%s grew past %d bytes while read; roofline reads at most that here", e.Path, e.Max)
	}
	return fmt.Sprintf("%s is %d bytes; roofline reads at most %d bytes here", e.Path, e.Size, e.Max)
}

func (e *TooLargeError) Unwrap() error { return ErrTooLarge }

// Kind names a file mode for an error message ("a FIFO", "a device").
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO (named pipe)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsRegular():
		return "a regular file"
	}
	return "an irregular file"
}

// IsNotRegular reports whether err is a refusal of a non-regular file.
func IsNotRegular(err error) bool { return errors.Is(err, ErrNotRegular) }
