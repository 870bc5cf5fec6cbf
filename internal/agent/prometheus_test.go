package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/testnet"
)

// reportWorld has servers in every condition the metrics show.
func reportWorld(t *testing.T) *Agent {
	w := newWorld("up", "gone", "failed")
	w.set(func() {
		w.alive["gone"] = false
		w.st.Servers["failed"].Status = state.StatusFailed
		w.alive["failed"] = false
		w.fail = fmt.Errorf("start failed")
		up := w.st.Servers["up"]
		up.Footprint = &state.Footprint{KVTokens: 365824}
		up.Predicted = &state.Footprint{KVTokens: 365000}
		up.Gate = &state.GateResult{Passed: true, CheckedAt: time.Unix(1_700_000_000, 0),
			Bench: json.RawMessage(`{"num_prompts": 8, "input_tokens": 64, "output_tokens": 32, "duration": 1, "completed": 8, "failed": 0, "request_throughput": 8, "output_throughput": 256, "total_token_throughput": 768, "median_ttft_ms": 12, "p99_ttft_ms": 20, "median_tpot_ms": 2, "p99_tpot_ms": 3, "median_itl_ms": 2, "p99_itl_ms": 3, "median_e2el_ms": 80, "p99_e2el_ms": 90}`)}
	})
	a := testAgent(t, w)
	tick(a)
	tick(a)
	return a
}

// TestMetricsLint: client_golang's own linter (promlint) finds nothing.
func TestMetricsLint(t *testing.T) {
	a := reportWorld(t)
	problems, err := testutil.CollectAndLint(NewCollector(a.Report, a))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
	out := scrape(t, a)
	for _, want := range []string{
		`roofline_server_up{server="up"} 1`,
		`roofline_server_up{server="gone"} 0`,
		`roofline_server_drift{server="failed"} 1`,
		`roofline_server_kv_cache_tokens{server="up",source="measured"} 365824`,
		`roofline_server_kv_cache_tokens{server="up",source="predicted"} 365000`,
		`roofline_server_bench_output_tokens_per_second{server="up"} 256`,
		`roofline_server_bench_ttft_median_seconds{server="up"} 0.012`,
		`roofline_server_last_failure_info{class="oom_weights",server="gone"} 1`,
		`roofline_servers_drifted 2`,
		`roofline_agent_ticks_total 2`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func scrape(t *testing.T, a *Agent) string {
	t.Helper()
	srv := httptest.NewServer(&Handler{Gatherer: Registry(NewCollector(a.Report, a), true), Report: a.Report})
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// needTool finds a Prometheus binary, or skips (fails when
// ROOFLINE_PROMETHEUS_REQUIRED=1, as .ci/run sets it).
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("ROOFLINE_PROMETHEUS_REQUIRED") == "1" {
			t.Fatalf("%s is not installed and ROOFLINE_PROMETHEUS_REQUIRED=1", name)
		}
		t.Skipf("%s is not installed (Debian: apt-get install prometheus); .ci/run installs it", name)
	}
	return p
}

// TestPromtoolCheckMetrics: Prometheus' own checker accepts /metrics.
func TestPromtoolCheckMetrics(t *testing.T) {
	promtool := needTool(t, "promtool")
	out := scrape(t, reportWorld(t))
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(out)
	res, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, res)
	}
	// The textfile of roofline check too.
	path := filepath.Join(t.TempDir(), "roofline.prom")
	if err := WriteTextfile(path, reportWorld(t).Report()); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	cmd = exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(b)
	if res, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(b), "roofline_server_up") {
		t.Fatalf("promtool check metrics on the textfile: %v\n%s\n%s", err, res, b)
	}
}

// TestPrometheusScrapes starts a real Prometheus (its own temp dir, a free
// loopback port) that scrapes the agent's endpoint with the bearer token,
// and queries what it stored.
func TestPrometheusScrapes(t *testing.T) {
	prom := needTool(t, "prometheus")
	a := reportWorld(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: &Handler{Gatherer: Registry(NewCollector(a.Report, a), true), Report: a.Report, Token: "tok-123"}}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("tok-123"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
scrape_configs:
  - job_name: roofline
    authorization:
      credentials_file: %s
    static_configs:
      - targets: ["%s"]
`, tokenFile, ln.Addr())
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	promAddr := testnet.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, prom, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+promAddr)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		_ = cmd.Wait()
	}()
	// Seconds on a quiet machine: start-up, a 1 s scrape, the query; CI
	// starts it beside every other package on two cores.
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		var res struct {
			Data struct {
				Result []struct {
					Metric map[string]string `json:"metric"`
					Value  []any             `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		resp, err := http.Get("http://" + promAddr + "/api/v1/query?query=roofline_server_up")
		if err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&res)
			resp.Body.Close()
			got := map[string]string{}
			for _, r := range res.Data.Result {
				if len(r.Value) == 2 {
					got[r.Metric["server"]] = fmt.Sprint(r.Value[1])
				}
			}
			if got["up"] == "1" && got["gone"] == "0" && got["failed"] == "0" {
				return
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("Prometheus did not store roofline_server_up within 2 minutes; its log:\n%s", logs.String())
}
