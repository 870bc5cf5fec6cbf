package proxy

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The files of server name's proxy live in <stateDir>/proxy: apply writes
// the target file to switch, the proxy writes the status file.

// Dir is the folder of the proxies' files in a state directory.
func Dir(stateDir string) string { return filepath.Join(stateDir, "proxy") }

// TargetFile names the backend server name's proxy forwards to; apply
// rewrites it to switch, the proxy follows it.
func TargetFile(stateDir, name string) string {
	return filepath.Join(Dir(stateDir), name+".target")
}

// StatusFile is the default status file of server name's proxy.
func StatusFile(stateDir, name string) string {
	return filepath.Join(Dir(stateDir), name+".status.json")
}

// MoveStatusFile is the status file of a proxy started for a port move:
// the old endpoint's proxy runs on and keeps the default one.
func MoveStatusFile(stateDir, name string, port int) string {
	return filepath.Join(Dir(stateDir), fmt.Sprintf("%s.%d.status.json", name, port))
}

// KeyFile holds the API key the proxy of server name enforces.
func KeyFile(stateDir, name string) string { return filepath.Join(Dir(stateDir), name+".key") }

// LogFile is the proxy's log.
func LogFile(stateDir, name string) string { return filepath.Join(Dir(stateDir), name+".log") }

// LimitsFile holds the limits of a server's proxy (WriteLimits), re-read
// by the running proxy when it changes.
func LimitsFile(stateDir, name string) string {
	return filepath.Join(Dir(stateDir), name+".limits.json")
}

// StatusFileOf is the status file a proxy started with cmdline writes: its
// -status-file (a proxy started for a port move has its own), else the
// server's default.
func StatusFileOf(cmdline []string, stateDir, name string) string {
	for i, a := range cmdline {
		if a == "-status-file" && i+1 < len(cmdline) {
			return cmdline[i+1]
		}
	}
	return StatusFile(stateDir, name)
}

// BackendPort is the backend port the proxy of server name forwards to,
// read from its target file; 0 when there is none.
func BackendPort(stateDir, name string) int {
	t, err := ReadTarget(TargetFile(stateDir, name))
	if err != nil {
		return 0
	}
	_, port, err := net.SplitHostPort(t)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(port)
	return n
}

// BackendAddr is the loopback address of a backend port: engines behind the
// proxy bind loopback only.
func BackendAddr(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// TargetLine is what the target file says: the backend and the engine
// behind it (whose error shape the proxy's own errors take).
func TargetLine(port int, kind, version string) string {
	line := BackendAddr(port)
	if kind != "" {
		line += " " + kind
		if version != "" {
			line += " " + version
		}
	}
	return line
}

// FreePort picks a free TCP port in [lo, hi] for an engine behind the
// proxy (the roofline block's backend_ports). The range lies below the
// kernel's ephemeral range: a port from bind(":0") is free now, but before
// the engine binds it an outgoing connection (a health poll) can take it as
// its source port, and the engine then fails with "address already in use".
func FreePort(lo, hi int) (int, error) {
	if lo <= 0 || hi < lo {
		return 0, fmt.Errorf("backend_ports %d-%d is not a range of ports", lo, hi)
	}
	span := hi - lo + 1
	off := int(time.Now().UnixNano() % int64(span))
	for i := 0; i < span; i++ {
		port := lo + (off+i)%span
		if portFree(port) {
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free port in backend_ports %d-%d; widen the range in the roofline block", lo, hi)
}

// portFree: nothing listens on port, on any address family the engine
// might bind.
func portFree(port int) bool {
	for _, host := range []string{"0.0.0.0", "127.0.0.1", "[::]"} {
		ln, err := net.Listen("tcp", net.JoinHostPort(strings.Trim(host, "[]"), strconv.Itoa(port)))
		if err != nil {
			return false
		}
		ln.Close()
	}
	return true
}
