package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/gate/gatetest"
	"github.com/roofline/roofline/internal/journal"
)

const benchBlock = `  gate {
    bench {
      concurrency                  = 2
      requests                     = 6
      input_tokens                 = 32
      output_tokens                = 4
      min_output_tokens_per_second = %s
      max_ttft_p99                 = "5s"
    }
  }`

func TestBenchCommand(t *testing.T) {
	fake, u := gateServe(t, gatetest.Options{})
	code, out, errOut := runMain(t, "bench", "-url", u, "-concurrency", "2", "-requests", "8", "-input-tokens", "16", "-output-tokens", "4")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, s := range []string{"============ Serving Benchmark Result ============", "Successful requests:                     8",
		"Maximum request concurrency:             2", "Total generated tokens:                  32", "---------------Time to First Token----------------",
		"P99 ITL (ms):", "Token counts agree with the server's vllm:generation_tokens_total (32)."} {
		if !strings.Contains(out, s) {
			t.Errorf("stdout lacks %q:\n%s", s, out)
		}
	}
	if !strings.Contains(errOut, "Benchmarking "+u+"...") { // not "Benchmarking URL at URL"
		t.Errorf("stderr: %q", errOut)
	}
	if body := fake.LastBody(); body["max_tokens"] != float64(4) {
		t.Errorf("flags not applied: %v", body)
	}
}

func TestBenchCommandJSON(t *testing.T) {
	_, u := gateServe(t, gatetest.Options{})
	code, out, _ := runMain(t, "bench", "-url", u, "-requests", "3", "-input-tokens", "16", "-output-tokens", "3", "-json", "-goodput", "ttft:60000,e2el:60000")
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if code != 0 || res["completed"] != float64(3) || res["total_output_tokens"] != float64(9) || res["request_goodput"] == nil {
		t.Fatalf("exit %d: %v", code, res)
	}
}

func TestBenchCommandServer(t *testing.T) {
	_, u := gateServe(t, gatetest.Options{})
	pass := gateConfig(t, u, "vllm", strings.Replace(benchBlock, "%s", "1", 1))
	fail := gateConfig(t, u, "vllm", strings.Replace(benchBlock, "%s", "1000000", 1))

	code, out, errOut := runMain(t, "-chdir="+pass, "bench", "a")
	if code != 0 || !strings.Contains(out, "Thresholds of server.a gate.bench:") || !strings.Contains(out, "pass  output token throughput") ||
		!strings.Contains(out, "Successful requests:                     6") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = runMain(t, "-chdir="+fail, "bench", "a")
	if code != 1 || !strings.Contains(out, "FAIL  output token throughput") {
		t.Fatalf("unmet threshold: exit %d\n%s", code, out)
	}
	// A load other than the block's is not judged by its thresholds.
	code, out, _ = runMain(t, "-chdir="+fail, "bench", "a", "-requests", "2")
	if code != 0 || !strings.Contains(out, "not checked: the load differs") || !strings.Contains(out, "Successful requests:                     2") {
		t.Fatalf("overridden load: exit %d\n%s", code, out)
	}

	entries, err := journal.Read(filepath.Join(fail, ".roofline", journal.FileName))
	if err != nil || len(entries) != 2 {
		t.Fatalf("journal: %d entries, %v", len(entries), err)
	}
	e := entries[0]
	if e.Kind != journal.KindBench || e.Server != "a" || e.Engine.Kind != "vllm" || e.Engine.Version != "0.16.0" ||
		e.Model.Name != "test-model" || e.Bench == nil || e.Bench.Passed == nil || *e.Bench.Passed || len(e.Bench.Violations) != 1 {
		t.Fatalf("entry: %+v bench %+v", e, e.Bench)
	}
	if entries[1].Bench.Passed != nil {
		t.Errorf("an unchecked run carries a verdict: %+v", entries[1].Bench)
	}

	code, out, _ = runMain(t, "-chdir="+fail, "journal", "a")
	if code != 0 || strings.Count(out, "  bench  server.a") != 2 || !strings.Contains(out, "thresholds FAIL: output token throughput") ||
		!strings.Contains(out, "6 requests, concurrency 2, 32 in / 4 out tokens") {
		t.Fatalf("journal: exit %d\n%s", code, out)
	}
}

func TestBenchCommandCompare(t *testing.T) {
	_, a := gateServe(t, gatetest.Options{})
	_, b := gateServe(t, gatetest.Options{Engine: "sglang", Metrics: true})
	code, out, errOut := runMain(t, "bench", "-url", a, "-compare-url", b, "-requests", "4", "-input-tokens", "16", "-output-tokens", "4")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, s := range []string{"Serving Benchmark Comparison", "B/A", "Output token throughput (tok/s):", "Median TTFT (ms):", "A = " + a, "B = " + b} {
		if !strings.Contains(out, s) {
			t.Errorf("stdout lacks %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "did not do the same work") {
		t.Errorf("identical loads reported as different:\n%s", out)
	}
	code, out, _ = runMain(t, "bench", "-url", a, "-compare-url", b, "-requests", "2", "-input-tokens", "16", "-output-tokens", "2", "-json")
	var both map[string]map[string]any
	if err := json.Unmarshal([]byte(out), &both); err != nil || code != 0 || both["a"]["completed"] != float64(2) || both["b"]["completed"] != float64(2) {
		t.Fatalf("compare JSON: exit %d %v\n%s", code, err, out)
	}
}

func TestBenchCommandErrors(t *testing.T) {
	_, u := gateServe(t, gatetest.Options{})
	for _, tt := range []struct {
		args []string
		err  string
	}{
		{[]string{"bench", "-url", u, "-requests", "-1"}, "-requests cannot be negative"},
		{[]string{"bench", "-url", u, "-endpoint", "embeddings"}, `endpoint "embeddings"`},
		{[]string{"bench", "-url", u, "-goodput", "ttft=5"}, "name:milliseconds"},
		{[]string{"bench", "-url", u, "-goodput", "foo:5"}, `unknown SLO "foo"`},
		{[]string{"bench", "-url", u, "-compare", "x", "-compare-url", u}, "not both"},
		{[]string{"bench", "-url", u, "-model", "nope", "-requests", "1"}, "every warm-up request failed"},
	} {
		code, _, errOut := runMain(t, tt.args...)
		if code != 1 || !strings.Contains(errOut, tt.err) {
			t.Errorf("%q: exit %d, stderr %q; want %q", tt.args, code, errOut, tt.err)
		}
	}
}

func TestJournalCommand(t *testing.T) {
	dir := gateConfig(t, "http://127.0.0.1:1", "vllm", "")
	code, out, _ := runMain(t, "-chdir="+dir, "journal")
	if code != 0 || !strings.Contains(out, "The journal is empty") {
		t.Fatalf("empty: exit %d %q", code, out)
	}
	path := filepath.Join(dir, ".roofline", journal.FileName)
	pass := true
	for _, e := range []journal.Entry{
		{Kind: journal.KindRollout, Server: "a", Engine: journal.EngineInfo{Kind: "vllm", Version: "0.16.0", Identity: "vllm/vllm-openai@sha256:abc"},
			Model: journal.ModelInfo{Name: "test-model", Path: "/models/m", Fingerprint: "fp1"}, GPUs: []string{"NVIDIA H200", "NVIDIA H200"},
			DriverVersion: "570.124.06", CUDAVersion: "12.8", Argv: []string{"vllm", "serve", "/models/m"},
			Gate:  &journal.GateSummary{Passed: true, Health: "pass", Smoke: "pass", Bench: "pass"},
			Bench: &journal.BenchSummary{NumPrompts: 6, MaxConcurrency: 2, InputTokens: 32, OutputTokens: 4, OutputThroughput: 123.4, Passed: &pass}},
		{Kind: journal.KindBench, Server: "b", Engine: journal.EngineInfo{Kind: "sglang"}},
	} {
		if err := journal.Append(path, e); err != nil {
			t.Fatal(err)
		}
	}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o644)
	f.WriteString(`{"time":"2026-`) // a write cut short
	f.Close()

	code, out, errOut := runMain(t, "-chdir="+dir, "journal", "a")
	if code != 0 {
		t.Fatalf("exit %d %s", code, errOut)
	}
	for _, s := range []string{"rollout  server.a", "engine  vllm 0.16.0 (vllm/vllm-openai@sha256:abc)", "model   test-model (/models/m, fp1)",
		"gpus    2x NVIDIA H200, driver 570.124.06, CUDA 12.8", "gate    pass (health pass, smoke pass, bench pass)", "123.40 tok/s out", "thresholds pass"} {
		if !strings.Contains(out, s) {
			t.Errorf("stdout lacks %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "server.b") || !strings.Contains(errOut, "line 3 is torn") {
		t.Errorf("filter or torn-line warning wrong:\nstdout %s\nstderr %s", out, errOut)
	}
	code, out, _ = runMain(t, "-chdir="+dir, "journal", "-json")
	var all []journal.Entry
	if err := json.Unmarshal([]byte(out), &all); err != nil || code != 0 || len(all) != 2 {
		t.Fatalf("json: exit %d %v %d entries", code, err, len(all))
	}
	if code, _, errOut := runMain(t, "-chdir="+dir, "journal", "zzz"); code != 1 || !strings.Contains(errOut, `no server "zzz"`) {
		t.Errorf("unknown server: exit %d %q", code, errOut)
	}
}
