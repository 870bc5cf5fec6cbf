package plan

import (
	"reflect"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/state"
)

func TestServerNames(t *testing.T) {
	cfg := &config.Config{Servers: map[string]*config.Server{
		"chat":       {Block: "chat"},
		`web["a"]`:   {Block: "web", Key: `["a"]`},
		`web["b"]`:   {Block: "web", Key: `["b"]`},
		"module.m.x": {Block: "x"},
	}}
	st := &state.File{}
	st.Set(&state.Server{Name: "old"})
	st.Set(&state.Server{Name: "web[0]"})
	for _, c := range []struct {
		name    string
		st      *state.File
		addrs   []string
		want    []string
		wantErr string
	}{
		{name: "none", st: st},
		{name: "config and state, in order", st: st, addrs: []string{"server.old", "chat"}, want: []string{"old", "chat"}},
		{name: "module address", st: st, addrs: []string{"module.m.x"}, want: []string{"module.m.x"}},
		{name: "a block names its instances, sorted", st: st, addrs: []string{"server.web"}, want: []string{`web["a"]`, `web["b"]`, "web[0]"}},
		{name: "no state", addrs: []string{"web"}, want: []string{`web["a"]`, `web["b"]`}},
		{name: "one instance", st: st, addrs: []string{`web["b"]`}, want: []string{`web["b"]`}},
		{name: "unknown suggests", st: st, addrs: []string{"chat", "server.caht"},
			wantErr: `server.caht: no such server in the configuration or the state. Did you mean "server.chat"?`},
		{name: "unknown, nothing close", st: st, addrs: []string{"zzzzzzzz"},
			wantErr: "zzzzzzzz: no such server in the configuration or the state."},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ServerNames(cfg, c.st, c.addrs)
			if c.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("ServerNames = %q, want %q", got, c.want)
			}
		})
	}
}
