package process

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/roofline/roofline/internal/fsx"
)

// MaxLogBytes is the size RotateLog keeps a running engine's log under.
const MaxLogBytes = 64 << 20

// PreviousLog is the path of the log kept from the run before.
func PreviousLog(logPath string) string { return logPath + ".1" }

// keepPrevious moves a non-empty log aside as PreviousLog before a start.
// A process still writing it (the old server during a create-before-destroy
// rollout) keeps writing to the moved file.
func keepPrevious(logPath string) error {
	st, err := os.Stat(logPath)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && st.Size() == 0) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("log file: %w", err)
	}
	if err := keepLive(logPath); err != nil {
		return err
	}
	if err := os.Rename(logPath, PreviousLog(logPath)); err != nil {
		return fmt.Errorf("cannot keep the previous log: %w", err)
	}
	return nil
}

// keepLive moves PreviousLog aside to the first free "LOG.N" (N ≥ 2) when a
// live process still writes it, so that nothing replaces a log an engine
// writes: after a failed create-before-destroy rollout the old instance,
// which still serves, writes the previous log, and the next start would
// otherwise rename over it (the file deleted while the engine writes it).
func keepLive(logPath string) error {
	prev := PreviousLog(logPath)
	if !heldOpen(prev) {
		return nil
	}
	for i := 2; i < 1000; i++ {
		next := fmt.Sprintf("%s.%d", logPath, i)
		if _, err := os.Lstat(next); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := os.Rename(prev, next); err != nil {
			return fmt.Errorf("cannot keep the log a running engine writes (%s): %w", prev, err)
		}
		return nil
	}
	return fmt.Errorf("cannot keep the log a running engine writes (%s): %s.2 to .999 all exist", prev, logPath)
}

// pruneOld removes the logs keepLive set aside as LOG.N (N ≥ 2) for
// engines that have since stopped, which nothing else ever removes: after
// many failed-then-successful rollouts they pile up. A log a process holds
// open (an engine still writing it) or that keep (the state) names stays,
// and so do LOG and LOG.1, the run before's, which logs and diagnose read.
// When roofline cannot see its own open files in /proc it cannot tell what
// is held, and removes nothing. Removal is best effort: a log left behind
// is only disk.
func pruneOld(logPath string, keep []string) {
	dir, base := filepath.Split(logPath)
	entries, err := os.ReadDir(filepath.Clean(dir))
	if err != nil {
		return
	}
	type stale struct {
		path string
		fi   os.FileInfo
		held bool
	}
	var cands []*stale
	for _, e := range entries {
		suffix, ok := strings.CutPrefix(e.Name(), base+".")
		n, err := strconv.Atoi(suffix)
		if !ok || err != nil || n < 2 || strconv.Itoa(n) != suffix {
			continue
		}
		path := filepath.Join(dir, e.Name())
		fi, err := os.Lstat(path)
		if err != nil || !fi.Mode().IsRegular() || named(path, fi, keep) {
			continue
		}
		cands = append(cands, &stale{path: path, fi: fi})
	}
	if len(cands) == 0 {
		return
	}
	self := os.Getpid()
	sawSelf := false
	fsx.EachOpenFD(func(pid int, fd string) bool {
		sawSelf = sawSelf || pid == self
		fi, err := os.Stat(fd)
		if err != nil {
			return true
		}
		for _, c := range cands {
			c.held = c.held || os.SameFile(fi, c.fi)
		}
		return true
	})
	if !sawSelf {
		return
	}
	for _, c := range cands {
		if !c.held {
			_ = os.Remove(c.path)
		}
	}
}

// named reports whether one of paths is the file at path (fi).
func named(path string, fi os.FileInfo, paths []string) bool {
	for _, p := range paths {
		if p == "" {
			continue
		}
		if filepath.Clean(p) == filepath.Clean(path) {
			return true
		}
		if pfi, err := os.Stat(p); err == nil && os.SameFile(pfi, fi) {
			return true
		}
	}
	return false
}

// heldOpen reports whether a process this user can see has path open
// (Linux /proc: every open descriptor is a link to its file). false when
// path does not exist or /proc cannot be read.
func heldOpen(path string) bool {
	want, err := os.Stat(path)
	if err != nil {
		return false
	}
	held := false
	fsx.EachOpenFD(func(_ int, fd string) bool {
		fi, err := os.Stat(fd)
		held = err == nil && os.SameFile(fi, want)
		return !held
	})
	return held
}

// RotateLog keeps a running engine's log under max bytes. The engine holds
// the file open in append mode and roofline cannot make it reopen, so when
// the log is over max its content is copied to PreviousLog and the file is
// truncated in place (logrotate's copytruncate): the engine's next write
// lands at the new end. Lines written between the copy and the truncation
// are lost; that window is a few milliseconds. Roofline calls it whenever it
// looks at a server (plan's refresh, status, logs), which bounds the log by
// max plus what the engine writes between two looks.
func RotateLog(logPath string, max int64) (rotated bool, err error) {
	st, err := os.Stat(logPath)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if st.Size() <= max {
		return false, nil
	}
	src, err := os.Open(logPath)
	if err != nil {
		return false, err
	}
	defer src.Close()
	if err := keepLive(logPath); err != nil {
		return false, err
	}
	dst, err := os.OpenFile(PreviousLog(logPath), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return false, err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return false, fmt.Errorf("copying %s aside: %w", logPath, err)
	}
	if err := dst.Close(); err != nil {
		return false, err
	}
	if err := os.Truncate(logPath, 0); err != nil {
		return false, fmt.Errorf("truncating %s: %w", logPath, err)
	}
	return true, nil
}
