package agent

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

// Endpoint is the agent's HTTP endpoint.
type Endpoint struct {
	// Listen is its address; "off" serves none.
	Listen string
	// Token, when set, is the bearer token every path but /healthz needs.
	Token string
	// Snapshot writes the /snapshot document (Handler.Snapshot).
	Snapshot func(ctx context.Context, w io.Writer) error
}

// Unprotected reports whether the endpoint would serve beyond this host
// without a token (a listen address that is not loopback needs one); err
// is an address that names no interface.
func (e Endpoint) Unprotected() (bool, error) {
	if e.Listen == "off" {
		return false, nil
	}
	loop, err := IsLoopback(e.Listen)
	if err != nil {
		return false, err
	}
	return !loop && e.Token == "", nil
}

// Serve runs the agent until ctx ends: the HTTP endpoint, the settings
// re-read from settingsPath over base on every signal from hup, systemd's
// notifications and watchdog, then the endpoint's shutdown. The servers
// keep running. Its error is an endpoint that cannot listen, before the
// first tick.
func (a *Agent) Serve(ctx context.Context, ep Endpoint, hup <-chan os.Signal, settingsPath string, base Settings) error {
	var srv *http.Server
	if ep.Listen != "off" {
		ln, err := net.Listen("tcp", ep.Listen)
		if err != nil {
			return fmt.Errorf("cannot listen on %s: %v (another agent, or pick another -listen)", ep.Listen, err)
		}
		h := &Handler{
			Gatherer: Registry(NewCollector(a.Report, a), true),
			Report:   a.Report, Token: ep.Token, Snapshot: ep.Snapshot,
			Stale: func() time.Duration { return 3*a.Settings().Tick + time.Minute },
		}
		srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		a.logf("roofline agent for %s: serving /metrics, /snapshot and /healthz on http://%s", a.Dir, ln.Addr())
	} else {
		a.logf("roofline agent for %s (no HTTP endpoint)", a.Dir)
	}
	notify := NewNotifier()
	watchdog := WatchdogInterval()
	if tick := a.Settings().Tick; watchdog > 0 && watchdog < tick {
		a.logf("warning: the systemd watchdog (%s) is shorter than two ticks (%s); set WatchdogSec to at least 3 ticks", 2*watchdog, 2*tick)
	}
	// Serve returns only after the SIGHUP watch ended: a re-read racing
	// the return would log after the caller stopped listening.
	reloads := make(chan struct{})
	go func() { defer close(reloads); a.ReloadOn(ctx, hup, notify, settingsPath, base) }()
	_ = a.Run(ctx, a.SystemdTick(notify, watchdog))
	<-reloads
	_ = notify.Send("STOPPING=1")
	a.logf("stopping: the servers keep running")
	if srv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}
	return nil
}
