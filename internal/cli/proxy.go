package cli

import (
	"context"
	"fmt"
	"os/signal"
	"syscall"

	"github.com/roofline/roofline/internal/proxy"
	"github.com/roofline/roofline/internal/views"
)

func init() {
	register(&Command{
		Name:     "proxy",
		Synopsis: "Front proxy for create-before-destroy servers (started by apply)",
		Hidden:   true,
		Usage:    views.UsageProxy,
		Run:      runProxy,
	})
}

func runProxy(m *Meta, args []string) int {
	fs := newFlags("proxy")
	listen := fs.String("listen", "", "")
	target := fs.String("target-file", "", "")
	status := fs.String("status-file", "", "")
	keyFile := fs.String("api-key-file", "", "")
	maxBody := fs.Int64("max-body", 0, "")
	maxBuffered := fs.Int64("max-buffered", 0, "")
	maxConns := fs.Int("max-conns", 0, "")
	limitsFile := fs.String("limits-file", "", "")
	if !parseFlags(m, fs, args) {
		return ExitError
	}
	if *listen == "" || *target == "" {
		return usageError(m, "proxy", "-listen and -target-file are required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	p := proxy.New(*target, *status).WithKeyFile(*keyFile).WithLimits(proxy.Limits{MaxBody: *maxBody, MaxBuffered: *maxBuffered, MaxConns: *maxConns}).WithLimitsFile(*limitsFile)
	if err := p.Run(ctx, *listen); err != nil {
		fmt.Fprintf(m.Err, "Error: roofline proxy: %v\n", err)
		return ExitError
	}
	return ExitOK
}
