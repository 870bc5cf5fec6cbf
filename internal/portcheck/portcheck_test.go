package portcheck

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/testnet"
)

func TestHolder(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	held, who := Holder("127.0.0.1", port)
	if !held {
		t.Fatal("a listening port must be held")
	}
	// The owner is this test process.
	if want := "pid " + itoa(os.Getpid()); !strings.HasPrefix(who, want) {
		t.Errorf("who = %q, want prefix %q", who, want)
	}
	ln.Close()
	if held, who := Holder("127.0.0.1", port); held {
		t.Errorf("a closed port is reported held by %s", who)
	}
}

func itoa(i int) string {
	b := []byte{}
	for i > 0 {
		b = append([]byte{byte('0' + i%10)}, b...)
		i /= 10
	}
	return string(b)
}

func reusePortListen(t *testing.T, addr string) net.Listener {
	t.Helper()
	lc := net.ListenConfig{Control: func(network, address string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, soReusePort, 1)
		}); err != nil {
			return err
		}
		return serr
	}}
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// TestListenersSeesEverySocket: two SO_REUSEPORT sockets on one port (as
// vLLM binds) are two listeners, each with its inode and owner, and a
// listener on [::1] is seen on its own.
func TestListenersSeesEverySocket(t *testing.T) {
	a := reusePortListen(t, "127.0.0.1:0")
	defer a.Close()
	port := a.Addr().(*net.TCPAddr).Port
	b := reusePortListen(t, "127.0.0.1:"+itoa(port))
	defer b.Close()
	ls := Listeners(port)
	if len(ls) != 2 || ls[0].Inode == ls[1].Inode {
		t.Fatalf("want two listeners with distinct inodes, got %+v", ls)
	}
	for _, l := range ls {
		if l.PID != os.Getpid() || l.Addr != "127.0.0.1:"+itoa(port) {
			t.Errorf("listener %+v: want pid %d on 127.0.0.1:%d", l, os.Getpid(), port)
		}
	}

	v6, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	defer v6.Close()
	p6 := v6.Addr().(*net.TCPAddr).Port
	ls = Listeners(p6)
	if len(ls) != 1 || ls[0].Addr != "[::1]:"+itoa(p6) || ls[0].PID != os.Getpid() {
		t.Fatalf("want the [::1] listener owned by this process, got %+v", ls)
	}
	// Binding 127.0.0.1 on that port succeeds, but the port is not free:
	// "localhost" reaches the IPv6 listener.
	if held, who := Holder("127.0.0.1", p6); !held || !strings.Contains(who, "[::1]") {
		t.Fatalf("a port with a listener on [::1] must be held, got %v %q", held, who)
	}
}

// soReusePort is SO_REUSEPORT on Linux (the syscall package lacks it).
const soReusePort = 0xf

// TestTable: the table read once answers like Holder and Listeners.
func TestTable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	// Below the ephemeral range: no connection of another test takes it
	// as its source port between the check and the read.
	freePort := testnet.FreePort(t)
	tab := ReadTable()
	held, who := tab.Holder("127.0.0.1", port)
	if !held || !strings.Contains(who, fmt.Sprintf("pid %d", os.Getpid())) {
		t.Errorf("held port: %v %q", held, who)
	}
	if ls := tab.Listeners(port); len(ls) != 1 || ls[0].PID != os.Getpid() {
		t.Errorf("listeners %+v", ls)
	}
	if held, who := tab.Holder("127.0.0.1", freePort); held {
		t.Errorf("free port held by %q", who)
	}
}

// TestCmdlineIsOneLine: another process's command line is printed in
// roofline's diagnostics; a newline or a terminal escape in it must not
// break the layout or reach the terminal.
func TestCmdlineIsOneLine(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30", "x\nimport socket\x1b[31m\tred")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var got string
	// The argv shows once exec has run: milliseconds, or seconds on a
	// loaded machine.
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if got = Cmdline(cmd.Process.Pid); strings.Contains(got, "red") {
			break
		}
	}
	if want := "sh -c sleep 30 x import socket [31m red"; got != want {
		t.Errorf("Cmdline = %q, want %q", got, want)
	}
}
