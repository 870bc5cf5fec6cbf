package agent

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// listenNotify is a systemd notify socket; read returns the next message.
func listenNotify(t *testing.T) (read func() string) {
	name := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", name)
	return func() string {
		buf := make([]byte, 4096)
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("no notification: %v", err)
		}
		return string(buf[:n])
	}
}

func TestSystemdTick(t *testing.T) {
	read := listenNotify(t)
	a := New(DefaultSettings())
	tick := a.SystemdTick(NewNotifier(), time.Second)
	tick()
	if got := read(); got != "READY=1\nSTATUS=watching" {
		t.Errorf("first tick: %q", got)
	}
	if got := read(); got != "WATCHDOG=1" {
		t.Errorf("first tick's watchdog: %q", got)
	}
	tick()
	if got := read(); got != "STATUS=watching" {
		t.Errorf("second tick: %q", got)
	}
}

func TestReloadOn(t *testing.T) {
	read := listenNotify(t)
	path := filepath.Join(t.TempDir(), "agent.json")
	var logs []string
	a := New(DefaultSettings())
	a.Logf = func(format string, args ...any) { logs = append(logs, format) }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hup := make(chan os.Signal)
	done := make(chan struct{})
	go func() { a.ReloadOn(ctx, hup, NewNotifier(), path, DefaultSettings()); close(done) }()

	hup <- os.Interrupt // the file does not exist: the settings stay
	if r, ready := read(), read(); r != "RELOADING=1" || ready != "READY=1" {
		t.Errorf("notifications %q %q", r, ready)
	}
	if err := os.WriteFile(path, []byte(`{"tick": "7s"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	hup <- os.Interrupt
	read()
	read()
	if got := a.Settings().Tick; got != 7*time.Second {
		t.Errorf("tick after the reload = %s", got)
	}
	cancel()
	<-done
	if len(logs) != 2 || !strings.Contains(logs[0], "keeping the settings") || !strings.Contains(logs[1], "re-read") {
		t.Errorf("logs %q", logs)
	}
}
