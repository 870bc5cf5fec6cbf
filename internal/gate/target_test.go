package gate

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine/kinds"
	"github.com/roofline/roofline/internal/gate/gatetest"
	"github.com/roofline/roofline/internal/journal"
)

func TestNamedCheck(t *testing.T) {
	for _, tc := range []struct {
		n    Named
		want string // in the error; "" for none
	}{
		{Named{Args: []string{"a"}}, ""},
		{Named{URL: "http://127.0.0.1:8000", Engine: kinds.SGLang}, ""},
		{Named{Args: []string{"a", "b"}}, "unexpected argument b"},
		{Named{Args: []string{"a"}, URL: "http://x"}, "not both"},
		{Named{}, "name a SERVER"},
		{Named{Args: []string{"a"}, Engine: "tgi"}, `-engine "tgi" is not`},
	} {
		err := tc.n.Check()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: Check = %v, want %q", tc.n, err, tc.want)
		}
	}
}

func TestNamedResolve(t *testing.T) {
	cfg := &config.Config{
		Engines: map[string]*config.Engine{"e": {Name: "e", Kind: kinds.SGLang}},
		Models:  map[string]*config.Model{"m": {Name: "m", ServedName: "served-m"}},
		Servers: map[string]*config.Server{
			"chat":  {Name: "chat", Engine: "e", Model: "m", Host: "0.0.0.0", Port: 8001, APIKey: "inline-key"},
			"filed": {Name: "filed", Engine: "e", Model: "m", Port: 8002, APIKeyFile: "/keys/filed"},
			"bare":  {Name: "bare", Engine: "e", Model: "m", Port: 8003},
		},
	}
	load := func() (*config.Config, error) { return cfg, nil }
	keys := map[string]string{"/keys/flag": "flag-key", "/keys/filed": "filed-key"}
	readKey := func(path string) (string, error) {
		if k, ok := keys[path]; ok {
			return k, nil
		}
		return "", errors.New(path + " is missing")
	}
	for _, tc := range []struct {
		name string
		n    Named
		want Target
		from string // the configured server; "" for a URL
		err  string
	}{
		{name: "url", n: Named{URL: "http://10.0.0.1:9000/", Model: "x", APIKeyFile: "/keys/flag"},
			want: Target{BaseURL: "http://10.0.0.1:9000", Model: "x", APIKey: "flag-key"}},
		{name: "bad url", n: Named{URL: "ftp://x"}, err: "not an http(s) URL"},
		{name: "server's inline key", n: Named{Args: []string{"server.chat"}},
			want: Target{BaseURL: "http://127.0.0.1:8001", Model: "served-m", Engine: kinds.SGLang, APIKey: "inline-key"}, from: "chat"},
		{name: "the flag's key wins, overrides", n: Named{Args: []string{"chat"}, APIKeyFile: "/keys/flag", Model: "other", Engine: kinds.VLLM},
			want: Target{BaseURL: "http://127.0.0.1:8001", Model: "other", Engine: kinds.VLLM, APIKey: "flag-key"}, from: "chat"},
		{name: "server's key file", n: Named{Args: []string{"filed"}},
			want: Target{BaseURL: "http://127.0.0.1:8002", Model: "served-m", Engine: kinds.SGLang, APIKey: "filed-key"}, from: "filed"},
		{name: "no key", n: Named{Args: []string{"bare"}},
			want: Target{BaseURL: "http://127.0.0.1:8003", Model: "served-m", Engine: kinds.SGLang}, from: "bare"},
		{name: "unknown server", n: Named{Args: []string{"chta"}}, err: `no server "chta" in the configuration. Did you mean "chat"?`},
		{name: "flag's key file missing", n: Named{Args: []string{"chat"}, APIKeyFile: "/keys/none"}, err: "-api-key-file: /keys/none is missing"},
	} {
		side, err := tc.n.Resolve(load, readKey)
		got := side.Target
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: Resolve = %+v, %v\nwant %+v", tc.name, got, err, tc.want)
		}
		if name := side.Name(); (tc.from == "" && name != got.BaseURL) || (tc.from != "" && name != "server."+tc.from) {
			t.Errorf("%s: named %q", tc.name, name)
		}
	}
	// A server's unreadable api_key_file is named with the server.
	delete(keys, "/keys/filed")
	if _, err := (Named{Args: []string{"filed"}}).Resolve(load, readKey); err == nil || !strings.Contains(err.Error(), "server.filed: api_key_file:") {
		t.Errorf("unreadable api_key_file: %v", err)
	}
	// A URL never loads the configuration; a load's error comes back as it is.
	failed := errors.New("diagnostics shown")
	noLoad := func() (*config.Config, error) { return nil, failed }
	if _, err := (Named{URL: "http://127.0.0.1:1"}).Resolve(noLoad, readKey); err != nil {
		t.Errorf("a URL loaded the configuration: %v", err)
	}
	if _, err := (Named{Args: []string{"chat"}}).Resolve(noLoad, readKey); err != failed {
		t.Errorf("load error = %v", err)
	}
}

// TestBenchCompare runs a bench plan on two real servers: the first side's
// thresholds go into its record, the second's are not checked, and a side
// that does not run is named.
func TestBenchCompare(t *testing.T) {
	_, ta := serve(t, gatetest.Options{})
	_, tb := serve(t, gatetest.Options{})
	block := &config.Bench{Requests: 4, Concurrency: 2, InputTokens: 16, OutputTokens: 8}
	bp, err := PlanBench(block, Load{}, EndpointCompletions, 0, 1, "")
	if err != nil || !bp.Checked {
		t.Fatalf("PlanBench = %+v, %v", bp, err)
	}
	a := Side{Target: ta, Server: &Configured{Server: &config.Server{Name: "a"}}}
	b := Side{Target: tb}
	var started []string
	recorded := map[string]*journal.BenchSummary{}
	h := BenchHooks{
		Started: func(name, url string) (func(int, int), func()) {
			started = append(started, name+" "+url)
			return nil, func() {}
		},
		Record: func(s Side, sum *journal.BenchSummary) { recorded[s.Name()] = sum },
	}
	resA, resB, failed, err := bp.Compare(context.Background(), a, b, h)
	if err != nil || failed != "" || resA.Completed != 4 || resB.Completed != 4 {
		t.Fatalf("Compare = %+v, %+v, %q, %v", resA, resB, failed, err)
	}
	if len(started) != 2 || started[0] != "server.a "+ta.BaseURL || started[1] != tb.BaseURL+" "+tb.BaseURL {
		t.Errorf("started %q", started)
	}
	if sa, sb := recorded["server.a"], recorded[tb.BaseURL]; sa == nil || sa.Passed == nil || !*sa.Passed || sb == nil || sb.Passed != nil {
		t.Errorf("records: a %+v, b %+v; want a checked and passed, b unchecked", sa, sb)
	}

	bad := Side{Target: Target{BaseURL: "ftp://x", Model: "test-model"}}
	clear(recorded)
	if _, _, failed, err := bp.Compare(context.Background(), a, bad, h); err == nil || failed != "ftp://x" || len(recorded) != 1 {
		t.Errorf("b does not run: failed %q, %v, %d records", failed, err, len(recorded))
	}
	clear(recorded)
	if _, _, failed, err := bp.Compare(context.Background(), bad, a, h); err == nil || failed != "ftp://x" || len(recorded) != 0 {
		t.Errorf("a does not run: failed %q, %v, %d records; want b never run", failed, err, len(recorded))
	}
}
