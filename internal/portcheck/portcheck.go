// Package portcheck tells whether a TCP port is taken on this machine and,
// on Linux, by which process: plan reports a port held by a process roofline
// did not start before apply tries to start an engine on it, and a foreign
// socket listening beside a running server (IPv4 or IPv6, or a second socket
// on the same port through SO_REUSEPORT, which takes a share of its
// connections).
package portcheck

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unicode"

	"github.com/roofline/roofline/internal/fsx"
)

// Listener is one socket listening on a TCP port.
type Listener struct {
	// Addr is the bound address: "127.0.0.1:8000", "[::1]:8000",
	// "0.0.0.0:8000", "[::]:8000".
	Addr string
	// Inode identifies the socket (/proc/net/tcp{,6}); two SO_REUSEPORT
	// sockets on one address are two inodes.
	Inode string
	// PID owns the socket; 0 when its owner is not visible to this user.
	PID     int
	Cmdline string
}

// Who names the owner for messages.
func (l Listener) Who() string {
	if l.PID == 0 {
		return "a process not visible to this user"
	}
	return fmt.Sprintf("pid %d (%s)", l.PID, l.Cmdline)
}

// Holder reports whether host:port cannot be bound, and who holds it
// ("pid 123 (python3 -m vllm...)" when it can be found, else a plain text).
// An empty host means all interfaces, as the engines bind by default. A
// socket listening on the port on any address counts, IPv6 included: a
// process on [::1]:PORT answers clients of "localhost:PORT" just as well.
func Holder(host string, port int) (held bool, who string) {
	return holder(Listeners(port), host, port)
}

func holder(ls []Listener, host string, port int) (held bool, who string) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err == nil {
		ln.Close()
		if len(ls) == 0 {
			return false, ""
		}
		return true, ls[0].Who() + " on " + ls[0].Addr
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		// Cannot bind for another reason (no such address, permission):
		// say so rather than call it held.
		return true, "nobody (cannot bind: " + err.Error() + ")"
	}
	for _, l := range ls {
		if l.PID != 0 {
			return true, l.Who()
		}
	}
	return true, "another process (its owner is not visible to this user)"
}

// Owner finds a process listening on port through /proc.
func Owner(port int) (pid int, cmdline string, ok bool) {
	for _, l := range Listeners(port) {
		if l.PID != 0 {
			return l.PID, l.Cmdline, true
		}
	}
	return 0, "", false
}

// Listeners lists every socket listening on port, IPv4 and IPv6, each with
// its owning process where /proc shows it.
func Listeners(port int) []Listener {
	var out []Listener
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		out = append(out, listening(f, port)...)
	}
	return withOwners(out)
}

// Table is the listening sockets of the host read once, for a plan that
// checks many ports: reading /proc/net/tcp per port made a plan of
// hundreds of servers quadratic on a host with thousands of sockets.
type Table struct {
	byPort map[int][]Listener
}

// ReadTable reads every listening socket (IPv4 and IPv6).
func ReadTable() *Table {
	t := &Table{byPort: map[int][]Listener{}}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		for _, l := range listening(f, -1) {
			_, ps, _ := net.SplitHostPort(l.Addr)
			p, _ := strconv.Atoi(ps)
			t.byPort[p] = append(t.byPort[p], l)
		}
	}
	return t
}

// Listeners is Listeners(port) from the table; owners are looked up for
// the ports asked about only.
func (t *Table) Listeners(port int) []Listener {
	return withOwners(append([]Listener(nil), t.byPort[port]...))
}

// Holder is Holder(host, port) with the table's listeners.
func (t *Table) Holder(host string, port int) (bool, string) {
	return holder(t.Listeners(port), host, port)
}

func withOwners(out []Listener) []Listener {
	if len(out) == 0 {
		return nil
	}
	want := map[string]int{}
	for i, l := range out {
		want[l.Inode] = i
	}
	owners := socketOwners(want)
	for i := range out {
		if pid, ok := owners[out[i].Inode]; ok {
			out[i].PID, out[i].Cmdline = pid, Cmdline(pid)
		}
	}
	return out
}

// socketOwners maps the inodes in want to the pid that holds them open.
func socketOwners(want map[string]int) map[string]int {
	found := map[string]int{}
	fsx.EachOpenFD(func(pid int, fd string) bool {
		link, err := os.Readlink(fd)
		if err != nil || !strings.HasPrefix(link, "socket:[") {
			return true
		}
		ino := strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")
		if _, ok := want[ino]; ok {
			if _, seen := found[ino]; !seen {
				found[ino] = pid
			}
		}
		return len(found) < len(want)
	})
	return found
}

// listening parses /proc/net/tcp{,6} for sockets in LISTEN (0A) on port
// (every port when port is -1).
func listening(path string, port int) []Listener {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []Listener
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[3] != "0A" {
			continue
		}
		hexIP, hexPort, ok := strings.Cut(fields[1], ":")
		if !ok {
			continue
		}
		p, err := strconv.ParseUint(hexPort, 16, 16)
		if err != nil || (port >= 0 && int(p) != port) {
			continue
		}
		ip := parseProcIP(hexIP)
		if ip == nil {
			continue
		}
		out = append(out, Listener{Addr: net.JoinHostPort(ip.String(), strconv.Itoa(int(p))), Inode: fields[9]})
	}
	return out
}

// parseProcIP decodes /proc/net/tcp's address: 32-bit words in host
// (little-endian) order.
func parseProcIP(h string) net.IP {
	b, err := hex.DecodeString(h)
	if err != nil || (len(b) != 4 && len(b) != 16) {
		return nil
	}
	ip := make(net.IP, len(b))
	for w := 0; w < len(b); w += 4 {
		ip[w], ip[w+1], ip[w+2], ip[w+3] = b[w+3], b[w+2], b[w+1], b[w]
	}
	return ip
}

// Cmdline reads a process's command line, shortened for messages.
func Cmdline(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return "unknown command"
	}
	return OneLine(string(b), 80)
}

// OneLine is another process's command line (or name) as roofline prints
// it: one line of at most max characters, whatever the process put in its
// argv; a newline or a terminal escape must not reach roofline's output.
func OneLine(s string, max int) string {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	if r := []rune(s); len(r) > max {
		s = string(r[:max-3]) + "..."
	}
	return s
}
