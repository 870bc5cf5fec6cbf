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
		Usage: `Usage: roofline proxy -listen HOST:PORT -target-file FILE [-status-file FILE]

  Forwards HTTP (streaming included) from the server's public port to the
  engine instance named in the target file. apply starts one per server with
  lifecycle { create_before_destroy = true } and rewrites the target file to
  switch to a new instance after it passed its gates.
`,
		Run: runProxy,
	})
}

func runProxy(m *Meta, args []string) int {
	fs := newFlags("proxy")
	listen := fs.String("listen", "", "")
	target := fs.String("target-file", "", "")
	status := fs.String("status-file", "", "")
	if !parseFlags(m, fs, args) {
		return ExitError
	}
	if *listen == "" || *target == "" {
		return usageError(m, "proxy", "-listen and -target-file are required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := proxy.New(*target, *status).Run(ctx, *listen); err != nil {
		fmt.Fprintf(m.Err, "Error: roofline proxy: %v\n", err)
		return ExitError
	}
	return ExitOK
}
