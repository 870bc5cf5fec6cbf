package state_test

import (
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/state"
)

func TestParseServerAddr(t *testing.T) {
	for _, c := range []struct{ in, want, wantErr string }{
		{in: "web", want: "web"},
		{in: "server.web", want: "web"},
		{in: `server.web["a"]`, want: `web["a"]`},
		{in: "module.m.server.web", want: "module.m.server.web"},
		{in: "engine.vllm", wantErr: `"engine.vllm" is not a server address`},
		{in: "server.", wantErr: `"server." has no server name`},
		{in: "", wantErr: `"" has no server name`},
	} {
		got, err := state.ParseServerAddr(c.in)
		switch {
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("ParseServerAddr(%q): err = %v, want %q", c.in, err, c.wantErr)
		case c.wantErr == "" && (err != nil || got != c.want):
			t.Errorf("ParseServerAddr(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestFileLookup(t *testing.T) {
	f := &state.File{}
	f.Set(&state.Server{Name: "web"})
	f.Set(&state.Server{Name: "chat"})
	for _, c := range []struct {
		name    string
		file    *state.File
		addrs   []string
		want    []string
		wantErr string
	}{
		{name: "in order", file: f, addrs: []string{"server.web", "chat"}, want: []string{"web", "chat"}},
		{name: "twice kept", file: f, addrs: []string{"web", "web"}, want: []string{"web", "web"}},
		{name: "unknown suggests", file: f, addrs: []string{"wbe"}, wantErr: `server.wbe is not in the state. Did you mean "web"?`},
		{name: "empty state", file: &state.File{}, addrs: []string{"web"}, wantErr: "server.web is not in the state. The state records no servers. Run \"roofline state list\""},
		{name: "bad address", file: f, addrs: []string{"web", "proxy.x"}, wantErr: "is not a server address"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.file.Lookup(c.addrs)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, s := range got {
				names = append(names, s.Name)
			}
			if strings.Join(names, ",") != strings.Join(c.want, ",") {
				t.Errorf("Lookup = %v, want %v", names, c.want)
			}
		})
	}
}

func TestFileRemoveServers(t *testing.T) {
	for _, c := range []struct {
		name          string
		addrs         []string
		removed, left string
	}{
		{name: "none", left: "a,b,c"},
		{name: "in order", addrs: []string{"c", "a"}, removed: "c,a", left: "b"},
		{name: "twice is once", addrs: []string{"b", "server.b", "a", "b"}, removed: "b,a", left: "c"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &state.File{}
			for _, n := range []string{"a", "b", "c"} {
				f.Set(&state.Server{Name: n})
			}
			servers, err := f.Lookup(c.addrs)
			if err != nil {
				t.Fatal(err)
			}
			var removed []string
			for _, s := range f.RemoveServers(servers) {
				removed = append(removed, s.Name)
			}
			if got := strings.Join(removed, ","); got != c.removed {
				t.Errorf("removed %q, want %q", got, c.removed)
			}
			if got := strings.Join(f.Names(), ","); got != c.left {
				t.Errorf("left %q, want %q", got, c.left)
			}
		})
	}
}
