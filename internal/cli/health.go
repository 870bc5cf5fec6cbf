package cli

import (
	"context"
	"errors"
	"os"
	"os/signal"

	"github.com/roofline/roofline/internal/apply"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/gate"
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

// addGateFlags adds the flags that name a target, shared by health, smoke
// and bench; the target's SERVER argument goes into Args after parsing.
func addGateFlags(fs interface {
	StringVar(p *string, name, value, usage string)
}) *gate.Named {
	n := &gate.Named{}
	fs.StringVar(&n.URL, "url", "", "")
	fs.StringVar(&n.Model, "model", "", "")
	fs.StringVar(&n.Engine, "engine", "", "")
	fs.StringVar(&n.APIKeyFile, "api-key-file", "", "")
	return n
}

// errShown: the error was printed where it happened (the configuration's
// diagnostics).
var errShown = errors.New("shown")

// resolveTarget turns SERVER or -url into a gate target (gate.Named). It
// prints the error itself; ok is false after one.
func resolveTarget(m *Meta, cmd string, n gate.Named) (s gate.Side, ok bool) {
	if err := n.Check(); err != nil {
		usageError(m, cmd, err.Error())
		return s, false
	}
	load := func() (*config.Config, error) {
		if cfg, ok := loadConfig(m); ok {
			return cfg, nil
		}
		return nil, errShown
	}
	readKey := func(path string) (string, error) {
		k, err := apply.ReadKeyFile(path)
		m.secrets.Add(k)
		return k, err
	}
	s, err := n.Resolve(load, readKey)
	if err != nil && !errors.Is(err, errShown) {
		m.view().Errorf("%v", err)
	}
	return s, err == nil
}

// interruptible returns a context that Ctrl-C cancels.
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt)
}

func runHealth(m *Meta, args []string) int {
	fs := newFlags("health")
	named := addGateFlags(fs)
	jsonOut := fs.Bool("json", false, "")
	if !parseConfigFlags(m, fs, args) {
		return ExitError
	}
	named.Args = fs.Args()
	side, ok := resolveTarget(m, "health", *named)
	if !ok {
		return ExitError
	}
	ctx, cancel := interruptible()
	defer cancel()
	client := gate.NewClient(4)
	defer client.CloseIdleConnections()
	res, err := gate.Health(ctx, client, side.Target)
	views.NewChecks(views.TypeOf(*jsonOut), m.view()).Health(side.Name(), side.Target, res, err)
	if err != nil {
		return ExitError
	}
	return ExitOK
}
