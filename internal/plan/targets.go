package plan

import (
	"fmt"
	"sort"
	"strings"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/suggest"
)

// ServerNames turns -target/-replace values (server.NAME or NAME) into the
// server names a plan takes. A block's address names every instance of it
// (for_each or count), as in Terraform. An address known to neither the
// configuration nor the state is an error that starts with the address.
func ServerNames(cfg *config.Config, st *state.File, addrs []string) ([]string, error) {
	var out []string
	for _, a := range addrs {
		name := state.ServerName(a)
		_, inCfg := cfg.Servers[name]
		inState := st != nil && st.Server(name) != nil
		if !inCfg && !inState {
			if insts := instancesOf(cfg, st, name); len(insts) > 0 {
				out = append(out, insts...)
				continue
			}
			var known []string
			for n := range cfg.Servers {
				known = append(known, state.ServerAddr(n))
			}
			return nil, fmt.Errorf("%s: no such server in the configuration or the state.%s", a, suggest.DidYouMean(a, known))
		}
		out = append(out, name)
	}
	return out, nil
}

// instancesOf returns the instance names (web["a"], web[0]) of block name
// in the configuration and the state, sorted.
func instancesOf(cfg *config.Config, st *state.File, block string) []string {
	seen := map[string]bool{}
	for n, s := range cfg.Servers {
		if s.Block == block && s.Key != "" {
			seen[n] = true
		}
	}
	if st != nil {
		for n := range st.Servers {
			if strings.HasPrefix(n, block+"[") {
				seen[n] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
