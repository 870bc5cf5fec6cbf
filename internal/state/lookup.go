package state

import (
	"fmt"
	"strings"

	"github.com/roofline/roofline/internal/suggest"
)

// ParseServerAddr accepts "server.NAME", "NAME" or a module's address
// ("module.m.server.NAME") and returns the name the state records.
func ParseServerAddr(arg string) (string, error) {
	if strings.HasPrefix(arg, "module.") {
		return arg, nil
	}
	kind, name, dotted := strings.Cut(arg, ".")
	switch {
	case !dotted:
		name = arg
	case kind != "server":
		return "", fmt.Errorf("%q is not a server address: the state records servers only; write server.NAME", arg)
	}
	if name == "" {
		return "", fmt.Errorf("%q has no server name; write server.NAME", arg)
	}
	return name, nil
}

// Lookup resolves addresses (see ParseServerAddr) to the servers f records,
// in order; an unknown one is an error with a suggestion.
func (f *File) Lookup(addrs []string) ([]*Server, error) {
	var out []*Server
	for _, a := range addrs {
		name, err := ParseServerAddr(a)
		if err != nil {
			return nil, err
		}
		s := f.Server(name)
		if s == nil {
			hint := suggest.DidYouMean(name, f.Names())
			if len(f.Servers) == 0 {
				hint = " The state records no servers."
			}
			return nil, fmt.Errorf("server.%s is not in the state.%s Run \"roofline state list\" to see what is", name, hint)
		}
		out = append(out, s)
	}
	return out, nil
}

// RemoveServers forgets servers (as Lookup returned them: an address given
// twice is there twice) and returns each one once, in order.
func (f *File) RemoveServers(servers []*Server) []*Server {
	var out []*Server
	seen := map[string]bool{}
	for _, s := range servers {
		if !seen[s.Name] {
			seen[s.Name] = true
			f.Remove(s.Name)
			out = append(out, s)
		}
	}
	return out
}
