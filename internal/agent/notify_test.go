package agent

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestNotifier talks to a unixgram socket the way systemd listens on
// NOTIFY_SOCKET, by path and as an abstract socket.
func TestNotifier(t *testing.T) {
	for _, abstract := range []bool{false, true} {
		name := filepath.Join(t.TempDir(), "notify")
		addr := name
		if abstract {
			name = "\x00roofline-test-" + strconv.Itoa(os.Getpid())
			addr = "@" + name[1:]
		}
		conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		t.Setenv("NOTIFY_SOCKET", addr)
		n := NewNotifier()
		if !n.Enabled() {
			t.Fatal("NOTIFY_SOCKET set, notifier disabled")
		}
		for _, msg := range []string{"READY=1\nSTATUS=watching 1 server(s)", "WATCHDOG=1"} {
			if err := n.Send(msg); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 256)
			_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			k, err := conn.Read(buf)
			if err != nil || string(buf[:k]) != msg {
				t.Fatalf("abstract=%v: got %q, %v; want %q", abstract, buf[:k], err, msg)
			}
		}
		conn.Close()
	}
	t.Setenv("NOTIFY_SOCKET", "")
	if NewNotifier().Enabled() || NewNotifier().Send("READY=1") != nil {
		t.Error("without NOTIFY_SOCKET the notifier must do nothing")
	}
}

func TestWatchdogInterval(t *testing.T) {
	t.Setenv("WATCHDOG_USEC", "30000000")
	t.Setenv("WATCHDOG_PID", "")
	if got := WatchdogInterval(); got != 15*time.Second {
		t.Errorf("WATCHDOG_USEC=30s: ping every %s, want 15s", got)
	}
	t.Setenv("WATCHDOG_PID", "1")
	if got := WatchdogInterval(); got != 0 {
		t.Errorf("a watchdog meant for pid 1: %s, want 0", got)
	}
	t.Setenv("WATCHDOG_USEC", "")
	if got := WatchdogInterval(); got != 0 {
		t.Errorf("no watchdog: %s", got)
	}
}
