package gate

import (
	"strings"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/config"
)

func TestHealthGateComparesTheServedVersion(t *testing.T) {
	for _, tc := range []struct {
		pinned, served string
		fails          bool
	}{
		{"0.16.0", "0.16.0", false},
		{"0.16.0", "", false}, // an engine that does not say
		{"0.16.0", "0.8.5", true},
	} {
		err := ServesVersion(tc.pinned)(&HealthResult{Version: tc.served})
		if (err != nil) != tc.fails {
			t.Errorf("pinned %s served %q: %v", tc.pinned, tc.served, err)
		}
		if err != nil && (!strings.Contains(err.Error(), "reports version 0.8.5") || !strings.Contains(err.Error(), "pins 0.16.0")) {
			t.Errorf("the error must give both versions: %v", err)
		}
	}
}

func TestServerTarget(t *testing.T) {
	for _, tc := range []struct {
		name string
		srv  config.Server
		eng  *config.Engine
		mod  *config.Model
		want Target
	}{
		{"wildcard host", config.Server{Port: 8000}, &config.Engine{Kind: "vllm"}, &config.Model{Name: "m", ServedName: "served"},
			Target{BaseURL: "http://127.0.0.1:8000", Model: "served", Engine: "vllm"}},
		{"ipv6 wildcard", config.Server{Host: "[::]", Port: 1}, nil, &config.Model{Name: "m"}, Target{BaseURL: "http://127.0.0.1:1", Model: "m"}},
		{"one address", config.Server{Host: "10.0.0.2", Port: 30000}, &config.Engine{Kind: "sglang"}, nil,
			Target{BaseURL: "http://10.0.0.2:30000", Engine: "sglang"}},
		{"ipv6 address", config.Server{Host: "::1", Port: 8000}, nil, nil, Target{BaseURL: "http://[::1]:8000"}},
	} {
		if got := ServerTarget(&tc.srv, tc.eng, tc.mod); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestPlanBench(t *testing.T) {
	block := &config.Bench{Concurrency: 8, Requests: 200, InputTokens: 512, OutputTokens: 64}
	for _, tc := range []struct {
		name    string
		block   *config.Bench
		load    Load
		warmup  int
		goodput string
		want    BenchSpec
		checked bool
		err     string
	}{
		{name: "the block's load", block: block, warmup: 1, checked: true,
			want: BenchSpec{Endpoint: EndpointCompletions, Concurrency: 8, Requests: 200, InputTokens: 512, OutputTokens: 64, Warmup: 1}},
		{name: "no block", warmup: 1, want: BenchSpec{Endpoint: EndpointCompletions, Warmup: 1}},
		{name: "concurrency given", block: block, warmup: 1, load: Load{Concurrency: 2, Set: map[string]bool{"concurrency": true}},
			want: BenchSpec{Endpoint: EndpointCompletions, Concurrency: 2, Requests: 200, InputTokens: 512, OutputTokens: 64, Warmup: 1}},
		{name: "a rate opens the loop", block: block, warmup: 1, load: Load{RequestRate: 5, Set: map[string]bool{"request-rate": true}},
			want: BenchSpec{Endpoint: EndpointCompletions, RequestRate: 5, Requests: 200, InputTokens: 512, OutputTokens: 64, Warmup: 1}},
		{name: "a duration replaces the count", block: block, warmup: 1, load: Load{Duration: time.Minute, Set: map[string]bool{"duration": true}},
			want: BenchSpec{Endpoint: EndpointCompletions, Concurrency: 8, Duration: time.Minute, InputTokens: 512, OutputTokens: 64, Warmup: 1}},
		{name: "no warm-up", warmup: 0, load: Load{Set: map[string]bool{"requests": false}},
			want: BenchSpec{Endpoint: EndpointCompletions, Warmup: -1}},
		{name: "goodput", warmup: 1, goodput: "ttft:500, e2el:1.5",
			want: BenchSpec{Endpoint: EndpointCompletions, Warmup: 1, GoodputTTFT: 500 * time.Millisecond, GoodputE2EL: 1500 * time.Microsecond}},
		{name: "bad goodput", goodput: "ttft=500", err: "name:milliseconds"},
		{name: "unknown SLO", goodput: "itl:5", err: `unknown SLO "itl"`},
	} {
		got, err := PlanBench(tc.block, tc.load, EndpointCompletions, tc.warmup, 0, tc.goodput)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || got.Spec != tc.want || got.Checked != tc.checked {
			t.Errorf("%s: %+v checked=%v (%v)\nwant %+v checked=%v", tc.name, got.Spec, got.Checked, err, tc.want, tc.checked)
		}
	}
}

func TestLoadValidate(t *testing.T) {
	if err := (Load{Requests: -1}).Validate(); err == nil || err.Error() != "-requests cannot be negative" {
		t.Errorf("Validate = %v", err)
	}
	if err := (Load{Concurrency: 4}).Validate(); err != nil {
		t.Error(err)
	}
}

func TestThresholdsApplyToTheBlocksLoadOnly(t *testing.T) {
	res := &BenchResult{}
	if c := (BenchPlan{Block: &config.Bench{}}).Thresholds(res); c != nil {
		t.Errorf("unchecked plan: %v", c)
	}
	checks := (BenchPlan{Block: &config.Bench{}, Checked: true}).Thresholds(nil)
	if len(checks) == 0 || Passed(checks) || len(Violations(checks)) != len(checks) {
		t.Errorf("a run that did not happen must fail its thresholds: %+v", checks)
	}
	if !Passed(nil) {
		t.Error("no checks: passed")
	}
}

func TestLocalURL(t *testing.T) {
	for _, tc := range []struct {
		host string
		want string
	}{
		{"", "http://127.0.0.1:8000"}, {"0.0.0.0", "http://127.0.0.1:8000"}, {"::", "http://127.0.0.1:8000"}, {"[::]", "http://127.0.0.1:8000"},
		{"10.0.0.2", "http://10.0.0.2:8000"}, {"::1", "http://[::1]:8000"}, {"[::1]", "http://[::1]:8000"},
	} {
		if got := LocalURL(tc.host, 8000); got != tc.want {
			t.Errorf("%q: %s, want %s", tc.host, got, tc.want)
		}
	}
}
