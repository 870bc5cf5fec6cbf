package agent

import (
	"context"
	"fmt"
	"os"
	"time"
)

// ReloadOn re-reads the settings file at path (over base) each time hup
// fires, until ctx ends, telling systemd (RELOADING=1, then READY=1). A
// file that does not load keeps the settings in force. Run it in its own
// goroutine.
func (a *Agent) ReloadOn(ctx context.Context, hup <-chan os.Signal, notify *Notifier, path string, base Settings) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			_ = notify.Send("RELOADING=1")
			if path == "" {
				a.logf("SIGHUP: no -settings file to re-read")
			} else if s, err := LoadSettings(path, base); err != nil {
				a.logf("SIGHUP: keeping the settings in force: %v", err)
			} else {
				a.SetSettings(s)
				a.logf("SIGHUP: settings re-read from %s: tick %s, max_restarts %d", path, s.Tick, s.MaxRestarts)
			}
			_ = notify.Send("READY=1")
		}
	}
}

// SystemdTick is Run's onTick under systemd: READY=1 after the first
// observation, the status line after every tick, and WATCHDOG=1 after
// every tick when the watchdog is on (every watchdog), so that a stuck loop
// (not just a live process) makes systemd restart the agent.
func (a *Agent) SystemdTick(notify *Notifier, watchdog time.Duration) func() {
	ready := false
	return func() {
		status := "STATUS=watching"
		if rep := a.Report(); rep != nil {
			status = fmt.Sprintf("STATUS=watching %d server(s), %d drifted", len(rep.Servers), rep.Drift)
		}
		if !ready {
			ready = true
			_ = notify.Send("READY=1\n" + status)
		} else {
			_ = notify.Send(status)
		}
		if watchdog > 0 {
			_ = notify.Send("WATCHDOG=1")
		}
	}
}
