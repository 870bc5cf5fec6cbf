package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/roofline/roofline/internal/apply"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine/kinds"
	"github.com/roofline/roofline/internal/gate"
	"github.com/roofline/roofline/internal/suggest"
	"github.com/roofline/roofline/internal/views"
)

func init() {
	register(&Command{
		Name:     "health",
		Synopsis: "Check a server beyond /health",
		Usage:    views.UsageHealth,
		Run:      runHealth,
	})
}

// gateFlags are the flags that name a target, shared by health, smoke
// and bench.
type gateFlags struct {
	url, model, engine, apiKeyFile *string
}

func addGateFlags(fs interface {
	String(name, value, usage string) *string
}) gateFlags {
	return gateFlags{url: fs.String("url", "", ""), model: fs.String("model", "", ""), engine: fs.String("engine", "", ""), apiKeyFile: fs.String("api-key-file", "", "")}
}

// resolvedServer is a configured server and its blocks.
type resolvedServer struct {
	cfg    *config.Config
	server *config.Server
	engine *config.Engine
	model  *config.Model
}

// resolveTarget turns SERVER or -url into a gate target. It prints the
// error itself; ok is false after one.
func resolveTarget(m *Meta, cmd string, args []string, gf gateFlags) (t gate.Target, rs *resolvedServer, ok bool) {
	bad := func(msg string) (gate.Target, *resolvedServer, bool) {
		usageError(m, cmd, msg)
		return gate.Target{}, nil, false
	}
	switch {
	case len(args) > 1:
		return bad("unexpected argument " + args[1])
	case len(args) == 1 && *gf.url != "":
		return bad("give a SERVER or -url, not both")
	case len(args) == 0 && *gf.url == "":
		return bad("name a SERVER of the configuration, or give -url URL")
	}
	if e := *gf.engine; e != "" && !kinds.Known(e) {
		return bad(fmt.Sprintf("-engine %q is not %s", e, kinds.Or(false)))
	}
	key := ""
	if gf.apiKeyFile != nil && *gf.apiKeyFile != "" {
		k, err := apply.ReadKeyFile(*gf.apiKeyFile)
		if err != nil {
			fmt.Fprintf(m.Err, "Error: -api-key-file: %v\n", err)
			return t, nil, false
		}
		key = k
		m.secrets.Add(k)
	}
	if *gf.url != "" {
		t = gate.Target{BaseURL: strings.TrimRight(*gf.url, "/"), Model: *gf.model, Engine: *gf.engine, APIKey: key}
		if err := t.Validate(); err != nil {
			fmt.Fprintf(m.Err, "Error: %v\n", err)
			return t, nil, false
		}
		return t, nil, true
	}
	cfg, loaded := loadConfig(m)
	if !loaded {
		return t, nil, false
	}
	name := strings.TrimPrefix(args[0], "server.")
	srv := cfg.Servers[name]
	if srv == nil {
		fmt.Fprintf(m.Err, "Error: no server %q in the configuration.%s\n", name, suggest.DidYouMean(name, cfg.ServerNames()))
		return t, nil, false
	}
	rs = &resolvedServer{cfg: cfg, server: srv, engine: cfg.Engines[srv.Engine], model: cfg.Models[srv.Model]}
	t = gate.ServerTarget(srv, rs.engine, rs.model)
	switch {
	case key != "":
		t.APIKey = key
	case srv.APIKey != "":
		t.APIKey = srv.APIKey
	case srv.APIKeyFile != "":
		k, err := apply.ReadKeyFile(srv.APIKeyFile)
		if err != nil {
			fmt.Fprintf(m.Err, "Error: %s: api_key_file: %v\n", srv.Addr(), err)
			return t, nil, false
		}
		m.secrets.Add(k)
		t.APIKey = k
	}
	if *gf.model != "" {
		t.Model = *gf.model
	}
	if *gf.engine != "" {
		t.Engine = *gf.engine
	}
	return t, rs, true
}

// targetName names a target in output: server.NAME or its URL.
func targetName(t gate.Target, rs *resolvedServer) string {
	if rs != nil {
		return rs.server.Addr()
	}
	return t.BaseURL
}

// interruptible returns a context that Ctrl-C cancels.
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt)
}

func runHealth(m *Meta, args []string) int {
	fs := newFlags("health")
	gf := addGateFlags(fs)
	jsonOut := fs.Bool("json", false, "")
	if !parseConfigFlags(m, fs, args) {
		return ExitError
	}
	t, rs, ok := resolveTarget(m, "health", fs.Args(), gf)
	if !ok {
		return ExitError
	}
	ctx, cancel := interruptible()
	defer cancel()
	client := gate.NewClient(4)
	defer client.CloseIdleConnections()
	res, err := gate.Health(ctx, client, t)
	views.NewChecks(views.TypeOf(*jsonOut), m.view()).Health(targetName(t, rs), t, res, err)
	if err != nil {
		return ExitError
	}
	return ExitOK
}
