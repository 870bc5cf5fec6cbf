package gate

import (
	"fmt"
	"strings"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine/kinds"
	"github.com/roofline/roofline/internal/suggest"
)

// Named is how health, smoke and bench name their target: a SERVER of the
// configuration (Args) or URL, with Model, Engine and an API key file
// (-model, -engine, -api-key-file) over it.
type Named struct {
	Args                           []string
	URL, Model, Engine, APIKeyFile string
}

// Check returns what is wrong with the command line, nil when nothing is.
func (n Named) Check() error {
	switch {
	case len(n.Args) > 1:
		return fmt.Errorf("unexpected argument %s", n.Args[1])
	case len(n.Args) == 1 && n.URL != "":
		return fmt.Errorf("give a SERVER or -url, not both")
	case len(n.Args) == 0 && n.URL == "":
		return fmt.Errorf("name a SERVER of the configuration, or give -url URL")
	}
	if n.Engine != "" && !kinds.Known(n.Engine) {
		return fmt.Errorf("-engine %q is not %s", n.Engine, kinds.Or(false))
	}
	return nil
}

// Configured is the configured server a target was resolved from, with
// its blocks.
type Configured struct {
	Config *config.Config
	Server *config.Server
	Engine *config.Engine
	Model  *config.Model
}

// Side is the server a gate command runs on: its target and, for a
// configured server, where it came from (nil for a URL).
type Side struct {
	Target Target
	Server *Configured
}

// Name names the side in output: server.NAME or its URL.
func (s Side) Name() string {
	if s.Server != nil {
		return s.Server.Server.Addr()
	}
	return s.Target.BaseURL
}

// Resolve turns a checked Named into its side: the target and, for a
// SERVER, the configured server. An API key comes from the key file given,
// else the server's api_key, else its api_key_file; readKey reads a key
// file. load reads the configuration, for a SERVER only; its
// error is returned as it is.
func (n Named) Resolve(load func() (*config.Config, error), readKey func(path string) (string, error)) (Side, error) {
	key := ""
	if n.APIKeyFile != "" {
		k, err := readKey(n.APIKeyFile)
		if err != nil {
			return Side{}, fmt.Errorf("-api-key-file: %w", err)
		}
		key = k
	}
	if n.URL != "" {
		t := Target{BaseURL: strings.TrimRight(n.URL, "/"), Model: n.Model, Engine: n.Engine, APIKey: key}
		return Side{Target: t}, t.Validate()
	}
	cfg, err := load()
	if err != nil {
		return Side{}, err
	}
	name := strings.TrimPrefix(n.Args[0], "server.")
	srv := cfg.Servers[name]
	if srv == nil {
		return Side{}, fmt.Errorf("no server %q in the configuration.%s", name, suggest.DidYouMean(name, cfg.ServerNames()))
	}
	c := &Configured{Config: cfg, Server: srv, Engine: cfg.Engines[srv.Engine], Model: cfg.Models[srv.Model]}
	t := ServerTarget(srv, c.Engine, c.Model)
	switch {
	case key != "":
		t.APIKey = key
	case srv.APIKey != "":
		t.APIKey = srv.APIKey
	case srv.APIKeyFile != "":
		k, err := readKey(srv.APIKeyFile)
		if err != nil {
			return Side{}, fmt.Errorf("%s: api_key_file: %w", srv.Addr(), err)
		}
		t.APIKey = k
	}
	if n.Model != "" {
		t.Model = n.Model
	}
	if n.Engine != "" {
		t.Engine = n.Engine
	}
	return Side{Target: t, Server: c}, nil
}

// BenchBlock is the server's gate.bench block; nil for none or for a URL.
func (c *Configured) BenchBlock() *config.Bench {
	if c == nil || c.Server.Gate == nil {
		return nil
	}
	return c.Server.Gate.Bench
}
