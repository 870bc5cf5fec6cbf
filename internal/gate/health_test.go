package gate

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/engine/kinds"
	"github.com/roofline/roofline/internal/testnet"

	"github.com/roofline/roofline/internal/gate/gatetest"
	"github.com/roofline/roofline/internal/testload"
)

// serve starts a fake engine and returns its target.
func serve(t *testing.T, o gatetest.Options) (*gatetest.Server, Target) {
	t.Helper()
	fake := gatetest.New(o)
	ts := httptest.NewServer(fake)
	t.Cleanup(ts.Close)
	engine := o.Engine
	if engine == "" {
		engine = kinds.VLLM
	}
	model := o.Model
	if model == "" {
		model = "test-model"
	}
	return fake, Target{BaseURL: ts.URL, Model: model, Engine: engine}
}

func TestHealth(t *testing.T) {
	tests := []struct {
		name    string
		opts    gatetest.Options
		target  func(Target) Target
		health  int
		failing string // the failing check; "" for a pass
		detail  string // in that check's detail
	}{
		{name: "vllm healthy", opts: gatetest.Options{}},
		{name: "vllm legacy metric names", opts: gatetest.Options{LegacyMetricNames: true}},
		{name: "sglang with metrics", opts: gatetest.Options{Engine: "sglang", Metrics: true}},
		{name: "sglang without --enable-metrics", opts: gatetest.Options{Engine: "sglang"},
			failing: "/metrics", detail: "--enable-metrics"},
		{name: "wrong served name", opts: gatetest.Options{Model: "qwen3-8b"},
			target: func(t Target) Target { t.Model = "qwen3"; return t }, failing: "/v1/models", detail: `"qwen3-8b"`},
		{name: "starting (503)", opts: gatetest.Options{Engine: "sglang", Metrics: true}, health: 503,
			failing: "/health", detail: "still starting"},
		{name: "vllm engine metrics off", opts: gatetest.Options{NoMetrics: true}, failing: "/metrics", detail: "really vLLM"},
		{name: "unknown engine, detected from metrics", opts: gatetest.Options{Engine: "sglang", Metrics: true},
			target: func(t Target) Target { t.Engine = ""; return t }},
		{name: "no model given: first served", opts: gatetest.Options{Model: "m1"},
			target: func(t Target) Target { t.Model = ""; return t }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake, target := serve(t, tt.opts)
			if tt.target != nil {
				target = tt.target(target)
			}
			if tt.health != 0 {
				fake.SetHealth(tt.health)
			}
			res, err := Health(context.Background(), nil, target)
			if res == nil {
				t.Fatal("no result")
			}
			if tt.failing == "" {
				if err != nil || !res.OK {
					t.Fatalf("want a pass, got %v: %+v", err, res.Checks)
				}
				if len(res.Checks) != 4 {
					t.Errorf("want 4 checks, got %+v", res.Checks)
				}
				if res.Engine == "" || res.Version == "" || res.Target.Model == "" {
					t.Errorf("engine %q version %q model %q should be known", res.Engine, res.Version, res.Target.Model)
				}
				return
			}
			if err == nil || res.OK {
				t.Fatalf("want a failure of %s, got a pass: %+v", tt.failing, res.Checks)
			}
			f := res.Failed()
			if len(f) != 1 || f[0].Name != tt.failing || !strings.Contains(f[0].Detail, tt.detail) {
				t.Fatalf("want only %s failing with %q, got %+v", tt.failing, tt.detail, f)
			}
			if !strings.Contains(err.Error(), tt.failing) {
				t.Errorf("error %q does not name the check", err)
			}
		})
	}
}

func TestHealthUnreachable(t *testing.T) {
	addr := closedPort(t)
	res, err := Health(context.Background(), nil, Target{BaseURL: "http://" + addr, Model: "m", Engine: kinds.VLLM})
	if err == nil || res.OK {
		t.Fatal("want a failure")
	}
	if !strings.Contains(res.Checks[0].Detail, "connection refused") {
		t.Errorf("first check: %+v", res.Checks[0])
	}
	for _, c := range res.Checks[1:] {
		if !c.Skipped {
			t.Errorf("%s ran against an unreachable server", c.Name)
		}
	}
}

func TestHealthBadTarget(t *testing.T) {
	for _, tg := range []Target{{BaseURL: "localhost:8000"}, {BaseURL: "http://x", Engine: "tgi"}} {
		if _, err := Health(context.Background(), nil, tg); err == nil {
			t.Errorf("%+v accepted", tg)
		}
	}
}

// closedPort returns an address where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestWaitReady(t *testing.T) {
	t.Run("refused, then 503, then ready", func(t *testing.T) {
		// The server moves to its next step when a poll has seen the step
		// before (nothing listens, then 503, then 200): the sequence does
		// not depend on how fast a loaded machine runs the polls.
		addr := testnet.FreeAddr(t)
		fake := gatetest.New(gatetest.Options{Engine: "sglang"})
		fake.SetHealth(503)
		srv := &http.Server{Handler: fake}
		t.Cleanup(func() { srv.Close() })
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var seen []string
		var listenErr error
		err := WaitReady(ctx, Target{BaseURL: "http://" + addr}, 20*time.Second,
			func(_ time.Duration, status string) {
				if len(seen) == 0 || seen[len(seen)-1] != status {
					seen = append(seen, status)
				}
				switch {
				case status == "connection refused (loading)" && len(seen) == 1:
					l, err := net.Listen("tcp", addr)
					if err != nil {
						listenErr = err
						cancel()
						return
					}
					go srv.Serve(l)
				case status == "HTTP 503 (starting)":
					fake.SetHealth(200)
				}
			}, nil)
		if listenErr != nil {
			t.Fatal(listenErr)
		}
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"connection refused (loading)", "HTTP 503 (starting)", "ready"}
		if strings.Join(seen, "|") != strings.Join(want, "|") {
			t.Errorf("statuses %q, want %q", seen, want)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		start := time.Now()
		err := WaitReady(context.Background(), Target{BaseURL: "http://" + closedPort(t)}, 400*time.Millisecond, nil, nil)
		if err == nil || !strings.Contains(err.Error(), "not ready within 400ms") || !strings.Contains(err.Error(), "connection refused") {
			t.Fatalf("got %v", err)
		}
		testload.Within(t, "a wait with a 400ms timeout", time.Since(start), 3*time.Second)
	})
	t.Run("process died", func(t *testing.T) {
		polls := 0
		err := WaitReady(context.Background(), Target{BaseURL: "http://" + closedPort(t)}, time.Minute, nil,
			func() (bool, error) {
				polls++
				if polls < 3 {
					return false, nil
				}
				return true, errors.New("exit status 1")
			})
		if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "exit status 1") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("context cancelled", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		err := WaitReady(ctx, Target{BaseURL: "http://" + closedPort(t)}, time.Minute, nil, nil)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v", err)
		}
	})
}

func TestServes(t *testing.T) {
	_, healthy := serve(t, gatetest.Options{})
	_, noMetrics := serve(t, gatetest.Options{Engine: "sglang"})
	for _, tc := range []struct {
		name string
		t    Target
		want string // in the error; "" for none
	}{
		{"healthy", healthy, ""},
		{"a failed check", noMetrics, "/metrics: "},
		{"unreachable", Target{BaseURL: "http://" + closedPort(t), Model: "m", Engine: kinds.VLLM}, "connection refused"},
	} {
		err := Serves(context.Background(), tc.t)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
