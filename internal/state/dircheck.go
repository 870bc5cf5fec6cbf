package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/roofline/roofline/internal/fsx"
)

// CheckDir refuses a state directory that someone else could change under
// roofline: one not owned by the user running it, or writable by its group
// or by everyone. Whoever can write there can swap the state (which names the
// processes roofline signals), the plan-file key, the rehearsal binary that
// is executed, or plant links. A directory that does not exist yet passes:
// roofline creates it 0700. A symlinked directory is checked where it points.
func CheckDir(dir string) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot check the state directory %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("the state directory %s is %s, not a directory", dir, fsx.Kind(fi.Mode()))
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := os.Geteuid(); int(st.Uid) != uid {
		return fmt.Errorf("the state directory %s is owned by uid %d, not by the user running roofline (uid %d); "+
			"roofline keeps only its own user's state. Fix it with:\n  sudo chown -R %d %s\nor pick another directory with -state-dir",
			dir, st.Uid, uid, uid, dir)
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		who := "its group"
		if perm&0o002 != 0 {
			who = "everyone"
		}
		return fmt.Errorf("the state directory %s is writable by %s (mode %04o); anyone who can write there can change what roofline starts and stops. Fix it with:\n  chmod go-w %s",
			dir, who, perm, dir)
	}
	return nil
}

// refuseLink returns a clear error when path is a symbolic link: a state or
// lock file is replaced by rename and locked by inode, so a link would be
// silently replaced (its target left stale) or truncated through.
func refuseLink(path, what string) error {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return nil
	}
	target, _ := os.Readlink(path)
	return &linkError{fmt.Sprintf("the %s %s is a symbolic link (to %s); roofline refuses to follow it: replacing it would leave %s stale, and writing through it would change a file roofline does not own. "+
		"Keep the state directory itself where you want it (-state-dir or state_dir), and replace the link by the file:\n  mv %s %s",
		what, path, target, target, target, path)}
}

// linkError is refuseLink's error; it matches fsx.ErrSymlink.
type linkError struct{ msg string }

func (e *linkError) Error() string { return e.msg }
func (e *linkError) Unwrap() error { return fsx.ErrSymlink }
