package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/roofline/roofline/internal/fsx"
	"github.com/roofline/roofline/internal/version"
)

// LockInfo says who holds the state lock and why. It is stored as JSON in
// the lock file so that any user can read it (cat .roofline/roofline.lock).
type LockInfo struct {
	ID        string    `json:"id"`
	Operation string    `json:"operation"` // "apply", "state rm", ...
	Who       string    `json:"who"`       // user name
	Host      string    `json:"host"`
	PID       int       `json:"pid"`
	Version   string    `json:"version"` // roofline's
	Created   time.Time `json:"created"`
	Path      string    `json:"path"` // the state file the lock guards
}

// NewLockInfo describes a lock for operation, taken by this process now.
func NewLockInfo(operation string) *LockInfo {
	host, _ := os.Hostname()
	return &LockInfo{
		ID:        newUUID(),
		Operation: operation,
		Who:       currentUser(),
		Host:      host,
		PID:       os.Getpid(),
		Version:   version.Version,
		Created:   time.Now().UTC().Truncate(time.Second),
	}
}

func currentUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "uid " + strconv.Itoa(os.Getuid())
}

// fillDefaults completes a caller's LockInfo.
func (i *LockInfo) fillDefaults(statePath string) {
	d := NewLockInfo(i.Operation)
	if i.ID == "" {
		i.ID = d.ID
	}
	if i.Who == "" {
		i.Who = d.Who
	}
	if i.Host == "" {
		i.Host = d.Host
	}
	if i.PID == 0 {
		i.PID = d.PID
	}
	if i.Version == "" {
		i.Version = d.Version
	}
	if i.Created.IsZero() {
		i.Created = d.Created
	}
	i.Path = statePath
}

// HolderState says whether the holder's process still runs: "running",
// "gone" or "" when it cannot be known (another host).
func (i *LockInfo) HolderState() string {
	if i == nil || i.PID <= 0 {
		return ""
	}
	if host, _ := os.Hostname(); host != i.Host {
		return ""
	}
	if processAlive(i.PID) {
		return "running"
	}
	return "gone"
}

// String is the holder description shown in errors and by force-unlock.
func (i *LockInfo) String() string {
	if i == nil {
		return "  (no lock information recorded)\n"
	}
	var b strings.Builder
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "  %-10s %s\n", k+":", v)
		}
	}
	row("ID", i.ID)
	row("Path", i.Path)
	row("Operation", i.Operation)
	row("Who", i.Who)
	row("Host", i.Host)
	if i.PID > 0 {
		pid := strconv.Itoa(i.PID)
		if st := i.HolderState(); st != "" {
			pid += " (" + st + ")"
		}
		row("PID", pid)
	}
	row("Version", i.Version)
	if !i.Created.IsZero() {
		row("Created", i.Created.Local().Format(time.RFC3339)+" ("+time.Since(i.Created).Round(time.Second).String()+" ago)")
	}
	return b.String()
}

// LockError is returned by Lock when the state stays locked by someone else.
type LockError struct {
	Info   *LockInfo     // the holder; nil when its info cannot be read
	Waited time.Duration // how long Lock tried
	// Stale is true when the holder's process is gone (same host) although
	// the lock is still taken: the lock file descriptor lives on in some
	// other process.
	Stale bool
	Err   error // an underlying error other than "locked", if any
}

func (e *LockError) Unwrap() error { return e.Err }

func (e *LockError) Error() string {
	var b strings.Builder
	b.WriteString("the state is locked by another roofline, so it cannot be changed now.\n\nLock Info:\n")
	b.WriteString(e.Info.String())
	fmt.Fprintf(&b, "\nroofline waited %s. ", e.Waited.Round(time.Millisecond))
	switch {
	case e.Info == nil:
		b.WriteString("Wait for the other command to finish, or pass a longer -lock-timeout.")
	case e.Stale:
		fmt.Fprintf(&b, "The holder (pid %d) has exited, yet the lock is still taken: a process it started keeps the lock file open. "+
			"If no roofline command is running, take the lock away with:\n  roofline force-unlock %s", e.Info.PID, e.Info.ID)
	default:
		where := ""
		if e.Info.Host != "" {
			where = " on " + e.Info.Host
		}
		fmt.Fprintf(&b, "Wait for %q to finish, or pass a longer -lock-timeout (e.g. -lock-timeout=5m). "+
			"If that roofline is stuck, stop it (kill %d%s): the lock is released when it exits, and the engines it started keep running. "+
			"Only if it cannot be stopped, take the lock away with:\n  roofline force-unlock %s",
			e.Info.Operation, e.Info.PID, where, e.Info.ID)
	}
	return b.String()
}

// parseLockInfo decodes lock file content; empty content means no lock info.
func parseLockInfo(data []byte) (*LockInfo, error) {
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil, nil
	}
	var i LockInfo
	if err := json.Unmarshal(data, &i); err != nil {
		return nil, fmt.Errorf("the lock file does not hold valid lock info: %w", err)
	}
	return &i, nil
}

// readLockInfo reads the lock info at path; a holder may be writing it at
// that moment, so a torn read is retried once.
func readLockInfo(path string) (*LockInfo, error) {
	var err error
	for try := 0; try < 2; try++ {
		var data []byte
		data, err = fsx.ReadFileNoFollow(path, 1<<20)
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		if errors.Is(err, fsx.ErrSymlink) {
			return nil, refuseLink(path, "lock file")
		}
		if err != nil {
			return nil, err
		}
		var info *LockInfo
		if info, err = parseLockInfo(data); err == nil {
			return info, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, err
}

// processAlive reports whether pid exists on this host (a process of
// another user counts: kill answers EPERM).
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
