package process

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// procStat is what roofline needs from /proc/<pid>/stat.
type procStat struct {
	PID       int
	Comm      string
	State     byte // R, S, D, Z, T, ...
	PPID      int
	PGRP      int
	Session   int
	StartTime uint64 // field 22: clock ticks after boot
	RSSPages  int64  // field 24
}

// parseStat parses /proc/<pid>/stat. The command name (field 2) is in
// parentheses and may itself hold spaces and parentheses ("(sd-pam)",
// "(a) b)"), so it runs from the first '(' to the last ')'; the numbered
// fields follow.
func parseStat(b []byte) (procStat, error) {
	var st procStat
	open := bytes.IndexByte(b, '(')
	closing := bytes.LastIndexByte(b, ')')
	if open < 0 || closing < open {
		return st, errors.New("no command name in parentheses")
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil {
		return st, fmt.Errorf("bad pid: %w", err)
	}
	st.PID = pid
	st.Comm = string(b[open+1 : closing])
	f := strings.Fields(string(b[closing+1:]))
	// f[0] is field 3 (state); field n is f[n-3]. Field 24 (rss) is the last needed.
	if len(f) < 24-2 {
		return st, fmt.Errorf("only %d fields after the command name", len(f))
	}
	// One letter (R, S, D, Z, T, t, X, I, ...): anything else is not a
	// stat line, whatever its field count.
	if len(f[0]) != 1 || !('A' <= f[0][0] && f[0][0] <= 'Z' || 'a' <= f[0][0] && f[0][0] <= 'z') {
		return st, fmt.Errorf("bad state %q", f[0])
	}
	st.State = f[0][0]
	ints := []*int{&st.PPID, &st.PGRP, &st.Session}
	for i, p := range ints {
		if *p, err = strconv.Atoi(f[1+i]); err != nil {
			return st, fmt.Errorf("field %d: %w", 4+i, err)
		}
	}
	if st.StartTime, err = strconv.ParseUint(f[22-3], 10, 64); err != nil {
		return st, fmt.Errorf("field 22 (start time): %w", err)
	}
	if st.RSSPages, err = strconv.ParseInt(f[24-3], 10, 64); err != nil {
		return st, fmt.Errorf("field 24 (rss): %w", err)
	}
	return st, nil
}

// parseCmdline splits /proc/<pid>/cmdline (NUL-separated, NUL-terminated).
func parseCmdline(b []byte) []string {
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return nil
	}
	return strings.Split(string(b), "\x00")
}

// procFS reads a /proc tree; tests of the parsers need no real one, but the
// driver always uses the live /proc.
type procFS string

const liveProc procFS = "/proc"

func (p procFS) stat(pid int) (procStat, error) {
	b, err := os.ReadFile(filepath.Join(string(p), strconv.Itoa(pid), "stat"))
	if err != nil {
		return procStat{}, notExist(err)
	}
	st, err := parseStat(b)
	if err != nil {
		return st, fmt.Errorf("%s/%d/stat: %w", p, pid, err)
	}
	return st, nil
}

func (p procFS) cmdline(pid int) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(string(p), strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return nil, notExist(err)
	}
	return parseCmdline(b), nil
}

// notExist makes ESRCH, which a read of /proc/<pid>/... returns while the
// process is being reaped, mean what ENOENT means: the process is gone.
func notExist(err error) error {
	if errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("%w: %w", fs.ErrNotExist, err)
	}
	return err
}

func (p procFS) bootID() (string, error) {
	b, err := os.ReadFile(filepath.Join(string(p), "sys/kernel/random/boot_id"))
	if err != nil {
		return "", fmt.Errorf("cannot read the boot id: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// sessions maps each session id to its live (not zombie) processes, the
// leader first when it is one of them. A pid number is not reused while any
// process still has it as its session or group id, so every process listed
// under a session roofline created belongs to it.
func (p procFS) sessions() (map[int][]int, error) {
	entries, err := os.ReadDir(string(p))
	if err != nil {
		return nil, err
	}
	bySession := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := p.stat(pid)
		if err != nil || st.State == 'Z' {
			continue // exited meanwhile
		}
		if pid == st.Session {
			bySession[st.Session] = append([]int{pid}, bySession[st.Session]...)
		} else {
			bySession[st.Session] = append(bySession[st.Session], pid)
		}
	}
	return bySession, nil
}
