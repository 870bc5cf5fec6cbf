package plan

import (
	"net"
	"os"
	"runtime"
	"testing"
)

// TestLivePorts: a real socket on loopback is seen, with this process as
// its owner; the host's table is read once per LivePorts, so a socket
// closed afterwards is still reported by the same check.
func TestLivePorts(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the port table is read from /proc/net (Linux)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	var c LivePorts
	for _, tc := range []struct {
		name   string
		before func()
		pid    int // owners are looked up when asked: a closed socket has none
	}{
		{name: "listening", before: func() {}, pid: os.Getpid()},
		{name: "closed after the first read", before: func() { ln.Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.before()
			if held, _ := c.Holder("127.0.0.1", port); !held {
				t.Errorf("127.0.0.1:%d not held", port)
			}
			ls := c.Listeners(port)
			if len(ls) != 1 || ls[0].PID != tc.pid {
				t.Errorf("Listeners(%d) = %+v, want one socket of pid %d", port, ls, tc.pid)
			}
		})
	}
	ln.Close()
	var fresh LivePorts
	if held, who := fresh.Holder("127.0.0.1", port); held {
		t.Errorf("a closed port is held by %s", who)
	}
}
