package cli

import (
	"context"
	"fmt"
	"os/signal"
	"syscall"

	"github.com/roofline/roofline/internal/proxy"
)

func init() {
	register(&Command{
		Name:     "proxy",
		Synopsis: "Front proxy for create-before-destroy servers (started by apply)",
		Hidden:   true,
		Usage: `Usage: roofline proxy -listen HOST:PORT -target-file FILE [-status-file FILE] [-api-key-file FILE]
          [-limits-file FILE] [-max-body BYTES] [-max-buffered BYTES] [-max-conns N]

  Forwards HTTP (streaming included) from the server's public port to the
  engine instance named in the target file. apply starts one per server with
  lifecycle { create_before_destroy = true } and rewrites the target file to
  switch to a new instance after it passed its gates.

  -api-key-file FILE  When the file exists, requests other than /health and
                      /metrics need "Authorization: Bearer KEY" (401
                      otherwise); re-read when it changes.
  -limits-file FILE   When the file exists, its limits (JSON, written by
                      apply from the server's proxy block) replace the
                      ones below; re-read when it changes, no restart.
  -max-body BYTES     Largest request body (413 above). Default 64 MiB.
  -max-buffered BYTES Request bodies held at once, all clients (503 above).
                      Default 256 MiB.
  -max-conns N        Open client connections at once. Default 4096.
`,
		Run: runProxy,
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
