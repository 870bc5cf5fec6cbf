package agent

import (
	"net"
	"os"
	"strconv"
	"time"
)

// Notifier speaks systemd's sd_notify protocol: datagrams like "READY=1"
// on the unix socket named by $NOTIFY_SOCKET (a leading '@' names an
// abstract socket). Without the variable it does nothing, so the agent
// runs the same in the foreground, in a container and under systemd.
type Notifier struct {
	addr string
}

// NewNotifier reads $NOTIFY_SOCKET.
func NewNotifier() *Notifier {
	return &Notifier{addr: os.Getenv("NOTIFY_SOCKET")}
}

// Enabled reports whether a service manager listens.
func (n *Notifier) Enabled() bool { return n != nil && n.addr != "" }

// Send sends one state ("READY=1", "WATCHDOG=1", "STATUS=...").
func (n *Notifier) Send(state string) error {
	if !n.Enabled() {
		return nil
	}
	addr := n.addr
	if addr[0] == '@' {
		addr = "\x00" + addr[1:]
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = conn.Write([]byte(state))
	return err
}

// WatchdogInterval is how often to send WATCHDOG=1: half of
// $WATCHDOG_USEC (systemd's advice), 0 when the watchdog is off or meant
// for another process ($WATCHDOG_PID).
func WatchdogInterval() time.Duration {
	usec, err := strconv.ParseInt(os.Getenv("WATCHDOG_USEC"), 10, 64)
	if err != nil || usec <= 0 {
		return 0
	}
	if p := os.Getenv("WATCHDOG_PID"); p != "" && p != strconv.Itoa(os.Getpid()) {
		return 0
	}
	return time.Duration(usec) * time.Microsecond / 2
}
