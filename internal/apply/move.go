package apply

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/roofline/roofline/internal/proxy"
	"github.com/roofline/roofline/internal/state"
)

// Move renames server from to to without touching what runs (a moved
// block, or roofline state mv): the state record, the log file (the engine
// keeps writing to it: renaming a file does not affect an open descriptor),
// the proxy's files (the running proxy keeps reading and writing its
// paths, through links) and a journal entry that links the two names. st is
// changed in place; the caller writes it. A step that fails after the state
// record moved is reported, and what moved is said.
func Move(stateDir string, st *state.File, from, to string) error {
	s := st.Server(from)
	if s == nil {
		return fmt.Errorf("server.%s is not in the state", from)
	}
	if err := st.Move(from, to); err != nil {
		return err
	}
	var errs []error
	// The log file, when it has the name apply gives it.
	oldLog, newLog := LogPath(stateDir, from), LogPath(stateDir, to)
	if s.LogPath == oldLog {
		if err := renameNoClobber(oldLog, newLog); err != nil {
			errs = append(errs, fmt.Errorf("log file: %w (the state now records server.%s; its log stays at %s)", err, to, oldLog))
		} else {
			s.LogPath = newLog
		}
	}
	if s.Deposed != nil && s.Deposed.LogPath == oldLog {
		s.Deposed.LogPath = s.LogPath
	}
	if s.Proxy != nil {
		errs = append(errs, moveProxyFiles(stateDir, from, to)...)
	}
	return errors.Join(errs...)
}

// moveProxyFiles gives the proxy's files the new name. The running proxy
// was started with the old paths: it reads its target through a link from
// the old name to the new file (where apply now writes), and apply reads
// its status through a link from the new name to the file the proxy
// writes. A proxy started later under the new name replaces the links.
func moveProxyFiles(stateDir, from, to string) []error {
	var errs []error
	oldTarget, newTarget := proxy.TargetFile(stateDir, from), proxy.TargetFile(stateDir, to)
	if err := renameNoClobber(oldTarget, newTarget); err != nil {
		errs = append(errs, fmt.Errorf("proxy target file: %w", err))
	} else if err := os.Symlink(filepath.Base(newTarget), oldTarget); err != nil {
		errs = append(errs, fmt.Errorf("proxy target link: %w", err))
	}
	oldStatus, newStatus := proxy.StatusFile(stateDir, from), proxy.StatusFile(stateDir, to)
	if _, err := os.Lstat(newStatus); errors.Is(err, fs.ErrNotExist) {
		if err := os.Symlink(filepath.Base(oldStatus), newStatus); err != nil {
			errs = append(errs, fmt.Errorf("proxy status link: %w", err))
		}
	}
	oldLog, newLog := proxy.LogFile(stateDir, from), proxy.LogFile(stateDir, to)
	if err := renameNoClobber(oldLog, newLog); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, fmt.Errorf("proxy log: %w", err))
	}
	return errs
}

// renameNoClobber renames old to new unless new exists.
func renameNoClobber(old, new string) error {
	if _, err := os.Lstat(new); err == nil {
		return fmt.Errorf("%s already exists", new)
	}
	return os.Rename(old, new)
}
