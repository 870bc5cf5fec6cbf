// Package portcheck tells whether a TCP port is taken on this machine and,
// on Linux, by which process: plan reports a port held by a process roofline
// did not start before apply tries to start an engine on it.
package portcheck

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Holder reports whether host:port cannot be bound, and who holds it
// ("pid 123 (python3 -m vllm...)" when it can be found, else a plain text).
// An empty host means all interfaces, as the engines bind by default.
func Holder(host string, port int) (held bool, who string) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err == nil {
		ln.Close()
		return false, ""
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		// Cannot bind for another reason (no such address, permission):
		// say so rather than call it held.
		return true, "nobody (cannot bind: " + err.Error() + ")"
	}
	if pid, cmd, ok := Owner(port); ok {
		return true, fmt.Sprintf("pid %d (%s)", pid, cmd)
	}
	return true, "another process (its owner is not visible to this user)"
}

// Owner finds the process listening on port through /proc.
func Owner(port int) (pid int, cmdline string, ok bool) {
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		for _, ino := range listeningInodes(f, port) {
			inodes[ino] = true
		}
	}
	if len(inodes) == 0 {
		return 0, "", false
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		fds, err := os.ReadDir(filepath.Join(p, "fd"))
		if err != nil {
			continue
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(p, "fd", fd.Name()))
			if err != nil || !strings.HasPrefix(link, "socket:[") {
				continue
			}
			if inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
				pid, _ := strconv.Atoi(filepath.Base(p))
				return pid, Cmdline(pid), true
			}
		}
	}
	return 0, "", false
}

// listeningInodes parses /proc/net/tcp{,6} for sockets in LISTEN (0A) on port.
func listeningInodes(path string, port int) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[3] != "0A" {
			continue
		}
		_, hexPort, ok := strings.Cut(fields[1], ":")
		if !ok {
			continue
		}
		p, err := strconv.ParseUint(hexPort, 16, 16)
		if err == nil && int(p) == port {
			out = append(out, fields[9])
		}
	}
	return out
}

// Cmdline reads a process's command line, shortened for messages.
func Cmdline(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return "unknown command"
	}
	s := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}
