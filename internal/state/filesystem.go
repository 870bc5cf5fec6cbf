package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// File names inside the state directory.
const (
	StateFileName = "state.json"
	LockFileName  = "roofline.lock"
)

// Filesystem keeps the state in <dir>/state.json, its previous version in
// <dir>/state.json.backup, and the lock in <dir>/roofline.lock.
//
// The lock is an flock(2) on roofline.lock held for the whole operation,
// plus the holder's LockInfo written into that file for people to read. The
// kernel drops an flock when its holder exits, however it exits, so a
// killed roofline never leaves the state locked; its info stays behind and
// is reported (OnStaleLock) when the next command takes the lock. The lock
// is a separate file, not the state itself, because the state is replaced
// by rename on every write and a lock on the old inode would be lost.
type Filesystem struct {
	dir string

	// OnStaleLock, when set, is called when Lock takes over a lock whose
	// holder ended without unlocking (killed, crashed). old is its info.
	OnStaleLock func(old *LockInfo)

	mu     sync.Mutex
	held   map[string]*os.File // lock ID → the locked file
	shared map[string]*os.File // lock ID → a shared (read) lock's file, nil when there was no lock file
}

// NewFilesystem returns a Manager for the state directory dir. Nothing is
// created until the first Write or Lock.
func NewFilesystem(dir string) *Filesystem {
	return &Filesystem{dir: dir, held: map[string]*os.File{}, shared: map[string]*os.File{}}
}

// Dir is the state directory.
func (s *Filesystem) Dir() string { return s.dir }

// StatePath is the state file.
func (s *Filesystem) StatePath() string { return filepath.Join(s.dir, StateFileName) }

// BackupPath is the copy of the state before the latest write.
func (s *Filesystem) BackupPath() string { return BackupPath(s.StatePath()) }

// LockPath is the lock file.
func (s *Filesystem) LockPath() string { return filepath.Join(s.dir, LockFileName) }

// Read reads the state file (see Read).
func (s *Filesystem) Read() (*File, error) {
	if err := CheckDir(s.dir); err != nil {
		return nil, err
	}
	return Read(s.StatePath())
}

// Write stores f (see Manager): the current file becomes the backup, then
// the new one replaces it atomically.
func (s *Filesystem) Write(f *File) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, fh := range s.held {
		if !sameFileAsPath(fh, s.LockPath()) {
			return fmt.Errorf("the state lock %s was taken away from this roofline (roofline force-unlock) while it held it; "+
				"the state was not written, so another command's changes are not overwritten", id)
		}
	}
	if err := CheckDir(s.dir); err != nil {
		return err
	}
	path := s.StatePath()
	prev, err := readLimited(path)
	var cur *File
	switch {
	case errors.Is(err, fs.ErrNotExist):
		prev = nil
	case err != nil:
		return fmt.Errorf("cannot read the current state before writing: %w", err)
	default:
		if cur, err = Decode(prev); err != nil {
			var ve *VersionError
			if errors.As(err, &ve) {
				ve.Path = path
				return ve
			}
			return newCorruptError(path, err)
		}
	}
	data, next, changed, err := prepareWrite(cur, f)
	if err != nil {
		return err
	}
	if changed {
		if err := writeWithBackup(path, data, prev); err != nil {
			return err
		}
	}
	afterWrite(f, next)
	return nil
}

// errLocked means the flock is held by someone else.
var errLocked = errors.New("locked")

// Lock takes the state lock (see Manager), polling with a backoff from 50 ms
// to 1 s until ctx ends.
func (s *Filesystem) Lock(ctx context.Context, info *LockInfo) (string, error) {
	if info == nil {
		info = NewLockInfo("")
	}
	info.fillDefaults(s.StatePath())
	start := time.Now()
	backoff := 50 * time.Millisecond
	for {
		holder, err := s.tryLock(info)
		if err == nil {
			return info.ID, nil
		}
		if !errors.Is(err, errLocked) {
			return "", err
		}
		select {
		case <-ctx.Done():
			le := &LockError{Info: holder, Waited: time.Since(start)}
			le.Stale = holder.HolderState() == "gone"
			return "", le
		case <-time.After(backoff):
			backoff = min(2*backoff, time.Second)
		}
	}
}

func (s *Filesystem) tryLock(info *LockInfo) (*LockInfo, error) {
	if err := CheckDir(s.dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("cannot create the state directory: %w", err)
	}
	path := s.LockPath()
	// force-unlock may replace the lock file between our open and our flock;
	// then we hold a lock on a file nobody else sees, so start over.
	for try := 0; try < 10; try++ {
		fh, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			if lerr := refuseLink(path, "lock file"); lerr != nil {
				return nil, lerr
			}
			return nil, fmt.Errorf("cannot open the lock file: %w", err)
		}
		if err := syscall.Flock(int(fh.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			fh.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				holder, _ := readLockInfo(path)
				return holder, errLocked
			}
			return nil, fmt.Errorf("cannot lock %s: %w; keep the state directory on a local file system that supports flock", path, err)
		}
		if !sameFileAsPath(fh, path) {
			fh.Close()
			continue
		}
		old, _ := io.ReadAll(fh)
		data, _ := json.MarshalIndent(info, "", "  ")
		if err := writeLockInfo(fh, append(data, '\n')); err != nil {
			fh.Close() // closing drops the flock
			return nil, fmt.Errorf("cannot write the lock info: %w", err)
		}
		s.mu.Lock()
		s.held[info.ID] = fh
		s.mu.Unlock()
		if prev, _ := parseLockInfo(old); prev != nil && prev.ID != "" && s.OnStaleLock != nil {
			s.OnStaleLock(prev)
		}
		return nil, nil
	}
	return nil, fmt.Errorf("the lock file %s keeps being replaced; is a force-unlock running in a loop?", path)
}

func writeLockInfo(fh *os.File, data []byte) error {
	if err := fh.Truncate(0); err != nil {
		return err
	}
	if _, err := fh.WriteAt(data, 0); err != nil {
		return err
	}
	return fh.Sync()
}

// LockShared takes the state lock for reading (plan): any number of
// readers hold it together, and a writer (Lock) waits for them, as they wait
// for it. It writes nothing: no lock info, and no lock file when there is
// none (then no writer can hold the lock, and the read goes ahead), so it
// works on a state directory that is read-only. Unlock releases it.
func (s *Filesystem) LockShared(ctx context.Context) (string, error) {
	id := newUUID()
	start := time.Now()
	backoff := 50 * time.Millisecond
	for {
		fh, err := os.OpenFile(s.LockPath(), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			s.mu.Lock()
			s.shared[id] = nil
			s.mu.Unlock()
			return id, nil
		case err != nil:
			if lerr := refuseLink(s.LockPath(), "lock file"); lerr != nil {
				return "", lerr
			}
			return "", fmt.Errorf("cannot open the lock file: %w", err)
		}
		err = syscall.Flock(int(fh.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		if err == nil {
			s.mu.Lock()
			s.shared[id] = fh
			s.mu.Unlock()
			return id, nil
		}
		fh.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return "", fmt.Errorf("cannot lock %s: %w; keep the state directory on a local file system that supports flock", s.LockPath(), err)
		}
		select {
		case <-ctx.Done():
			holder, _ := readLockInfo(s.LockPath())
			le := &LockError{Info: holder, Waited: time.Since(start)}
			le.Stale = holder.HolderState() == "gone"
			return "", le
		case <-time.After(backoff):
			backoff = min(2*backoff, time.Second)
		}
	}
}

// Unlock releases a lock this Filesystem took. The lock info is cleared
// before the flock is dropped, so nobody reads a released lock as stale.
func (s *Filesystem) Unlock(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if fh, ok := s.shared[id]; ok {
		delete(s.shared, id)
		if fh != nil {
			_ = syscall.Flock(int(fh.Fd()), syscall.LOCK_UN)
			fh.Close()
		}
		return nil
	}
	fh, ok := s.held[id]
	if !ok {
		return fmt.Errorf("cannot unlock the state: lock ID %q is not held by this roofline", id)
	}
	delete(s.held, id)
	ours := sameFileAsPath(fh, s.LockPath())
	var err error
	if ours {
		err = fh.Truncate(0)
	}
	_ = syscall.Flock(int(fh.Fd()), syscall.LOCK_UN)
	fh.Close()
	if !ours {
		return fmt.Errorf("the state lock %s was force-unlocked while this roofline held it; another command may have changed the state since", id)
	}
	if err != nil {
		return fmt.Errorf("released the state lock, but could not clear its info: %w", err)
	}
	return nil
}

// LockStatus is the state lock as seen from outside.
type LockStatus struct {
	Info *LockInfo // nil when no lock info is recorded
	// Held is true while some process holds the flock. Info without Held is
	// a stale record left by a roofline that was killed; the next Lock
	// takes it over.
	Held bool
}

// LockStatus reads the lock info and tests whether the lock is held.
func (s *Filesystem) LockStatus() (*LockStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lockStatusLocked()
}

func (s *Filesystem) lockStatusLocked() (*LockStatus, error) {
	path := s.LockPath()
	info, err := readLockInfo(path)
	if err != nil {
		return nil, err
	}
	st := &LockStatus{Info: info}
	if info != nil {
		if _, mine := s.held[info.ID]; mine {
			st.Held = true
			return st, nil
		}
	}
	fh, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	switch err := syscall.Flock(int(fh.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); {
	case err == nil:
		_ = syscall.Flock(int(fh.Fd()), syscall.LOCK_UN)
	case errors.Is(err, syscall.EWOULDBLOCK):
		st.Held = true
	default:
		return nil, err
	}
	return st, nil
}

// ForceUnlock removes the lock with ID id (see ForceUnlocker). A stale
// record is simply cleared. A lock held by a live process is taken away by
// replacing the lock file: new commands lock the new file, and the old
// holder finds out at its next Write or Unlock, which then fail instead of
// overwriting what others wrote.
func (s *Filesystem) ForceUnlock(id string) error {
	s.mu.Lock()
	if _, mine := s.held[id]; mine {
		s.mu.Unlock()
		return s.Unlock(id)
	}
	defer s.mu.Unlock()
	st, err := s.lockStatusLocked()
	if err != nil {
		return fmt.Errorf("cannot read the lock: %w", err)
	}
	if st.Info == nil || st.Info.ID == "" {
		return fmt.Errorf("the state is not locked (%s holds no lock info); nothing to unlock", s.LockPath())
	}
	if st.Info.ID != id {
		return fmt.Errorf("lock ID %q does not match the lock on the state, which is:\n%snothing was unlocked", id, st.Info.String())
	}
	path := s.LockPath()
	if !st.Held {
		fh, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
		if err != nil {
			return err
		}
		defer fh.Close()
		if err := syscall.Flock(int(fh.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
			defer syscall.Flock(int(fh.Fd()), syscall.LOCK_UN)
			if info, _ := readLockInfo(path); info != nil && info.ID == id {
				return fh.Truncate(0)
			}
			return nil
		}
		// Taken in the meantime: break it only if it is still the lock named.
		if info, _ := readLockInfo(path); info == nil || info.ID != id {
			return fmt.Errorf("the lock changed while force-unlock ran; nothing was unlocked. Run \"roofline force-unlock\" again with the current ID")
		}
	}
	return atomicWrite(path, nil)
}

// sameFileAsPath reports whether fh is still the file at path.
func sameFileAsPath(fh *os.File, path string) bool {
	a, err1 := fh.Stat()
	b, err2 := os.Stat(path)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}
