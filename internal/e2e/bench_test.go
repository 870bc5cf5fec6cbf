package e2e

import (
	"fmt"
	"github.com/roofline/roofline/internal/testnet"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// benchBase is base with a 2 s engine load time, long enough that polling
// granularity shows.
func benchBase() string { return strings.ReplaceAll(base, `"300ms"`, `"2s"`) }

func servers(n int) string {
	var sb strings.Builder
	sb.WriteString(benchBase())
	for i := 0; i < n; i++ {
		fmt.Fprintf(&sb, `
server "s%d" {
  engine                 = engine.vllm
  model                  = model.qwen
  gpus                   = [%d]
  port                   = @PORT_%d@
  max_model_len          = 8192
  gpu_memory_utilization = 0.45
}
`, i, i%4, i)
	}
	return sb.String()
}

// engineAlone starts one rehearsal engine by hand, as apply would, and
// returns how long it takes until /health answers 200.
func engineAlone(b *testing.B, dir string) time.Duration {
	port := freePortB(b)
	cmd := exec.Command(bin, "rehearsal", "vllm@0.16.0", "serve", filepath.Join(models, "qwen3-8b"),
		"--port", fmt.Sprint(port), "--max-model-len", "8192", "--gpu-memory-utilization", "0.45")
	cmd.Env = append(os.Environ(), "ROOFLINE_REHEARSAL_LOAD_TIME=2s", "CUDA_VISIBLE_DEVICES=0",
		"ROOFLINE_REHEARSAL_INVENTORY="+filepath.Join(dir, "gpus.json"))
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	url := fmt.Sprintf("http://127.0.0.1:%d/health", port)
	for time.Since(start) < time.Minute {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return time.Since(start)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.Fatal("engine did not become ready")
	return 0
}

func freePortB(b *testing.B) int { return testnet.FreePort(b) }

// BenchmarkApplyOverhead measures what apply adds to the engine's own start
// time (plan, state writes, process start, health polling, gates off), for
// one server and for 8 independent servers started in parallel.
func BenchmarkApplyOverhead(b *testing.B) {
	for _, n := range []int{1, 8} {
		b.Run(fmt.Sprintf("servers=%d", n), func(b *testing.B) {
			t := &testing.T{}
			var engine, apply time.Duration
			for i := 0; i < b.N; i++ {
				e := newEnv(t, servers(n))
				engine += engineAlone(b, e.dir)
				start := time.Now()
				if r := e.run("apply", "-auto-approve"); r.code != 0 {
					b.Fatalf("apply: %s", r)
				}
				apply += time.Since(start)
				e.run("destroy", "-auto-approve")
			}
			b.ReportMetric(float64(engine.Milliseconds())/float64(b.N), "engine-ms")
			b.ReportMetric(float64(apply.Milliseconds())/float64(b.N), "apply-ms")
			b.ReportMetric(float64((apply-engine).Milliseconds())/float64(b.N), "overhead-ms")
		})
	}
}

// BenchmarkPlan16Servers times `roofline plan` (the whole binary: config,
// state, GPU snapshot, cached engine probes, model headers, VRAM for each
// server, port checks) for 16 servers on 8 GPUs from a snapshot.
func BenchmarkPlan16Servers(b *testing.B) {
	e := sixteenServers(b)
	if r := e.run("plan"); r.code != 0 { // fills the probe cache
		b.Fatalf("plan: %s", r)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r := e.run("plan"); r.code != 0 {
			b.Fatalf("plan: %s", r)
		}
	}
}

// sixteenServers is an environment of 16 servers on 8 GPUs (two per GPU at
// utilization 0.45) from the recorded 8× H100 inventory, in which GPU 3 runs
// a foreign process; the benchmarks of plan and of the agent share it.
func sixteenServers(b *testing.B) *env {
	t := &testing.T{}
	var sb strings.Builder
	sb.WriteString(base)
	for i := 0; i < 16; i++ {
		fmt.Fprintf(&sb, `
server "s%d" {
  engine                 = engine.vllm
  model                  = model.qwen
  gpus                   = [%d]
  port                   = @PORT_%d@
  max_model_len          = 8192
  gpu_memory_utilization = 0.45
}
`, i, i%8, i)
	}
	e := newEnv(t, sb.String())
	inv, err := os.ReadFile("../gpu/testdata/h100x8.json")
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.dir, "gpus.json"), inv, 0o644); err != nil {
		b.Fatal(err)
	}
	return e
}
