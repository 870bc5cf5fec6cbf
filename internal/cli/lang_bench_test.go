package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/testnet"

	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/gpu/gputest"
	"github.com/roofline/roofline/internal/model/modeltest"
)

// fleetCfg declares 256 servers with for_each, four per GPU on 64 GPUs.
const fleetCfg = `variable "ports" {
  type = list(number)
}

roofline {
  inventory = "gpus.json"
}

engine "vllm" {
  kind    = "vllm"
  version = "0.16.0"
  command = ["/opt/vllm-0.16.0/bin/vllm"]
}

model "qwen" {
  path = "models/qwen3-0.6b"
}

server "s" {
  for_each               = { for i in range(256) : "s${i}" => i }
  engine                 = engine.vllm
  model                  = model.qwen
  gpus                   = [floor(each.value / 4)]
  host                   = "127.0.0.1"
  port                   = var.ports[each.value]
  max_model_len          = 4096
  gpu_memory_utilization = 0.2
}
`

func fleetDir(tb testing.TB) string {
	tb.Helper()
	dir := tb.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(fleetCfg), 0o644); err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	if err := gpu.WriteSnapshot(&buf, gputest.H100s(64)); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "gpus.json"), buf.Bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := modeltest.Write(filepath.Join(dir, "models", "qwen3-0.6b"), modeltest.Qwen3_0_6B); err != nil {
		tb.Fatal(err)
	}
	// 256 distinct ports free now (below the ephemeral range, where no
	// client connection takes them meanwhile), in an auto-loaded variable file.
	var ports []int
	seen := map[int]bool{}
	for len(ports) < 256 {
		if p := testnet.FreePort(tb); !seen[p] {
			seen[p] = true
			ports = append(ports, p)
		}
	}
	b, _ := json.Marshal(map[string]any{"ports": ports})
	if err := os.WriteFile(filepath.Join(dir, "ports.auto.rfvars.json"), b, 0o644); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// BenchmarkPlanFleet256: roofline plan (-review, with a 64-GPU snapshot)
// of 256 servers declared with one for_each: load, expand, refresh, plan,
// render. The target is at most 250 ms.
func BenchmarkPlanFleet256(b *testing.B) {
	dir := fleetDir(b)
	code, stdout, stderr := benchPlan(dir)
	if code != ExitOK || !strings.Contains(stdout, "Plan: 256 to add") {
		b.Fatalf("plan: exit %d\n%s\n%s", code, tail(stdout), stderr)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if code, _, stderr := benchPlan(dir); code != ExitOK {
			b.Fatalf("exit %d: %s", code, stderr)
		}
	}
}

// TestPlanFleet256 checks what the benchmark measures: 256 servers, each on
// its GPU.
func TestPlanFleet256(t *testing.T) {
	if testing.Short() {
		t.Skip("plans 256 servers")
	}
	dir := fleetDir(t)
	code, stdout, stderr := benchPlan(dir)
	if code != ExitOK || !strings.Contains(stdout, "Plan: 256 to add, 0 to change, 0 to destroy.") ||
		!strings.Contains(stdout, `# server.s["s255"] will be created`) {
		t.Fatalf("plan: exit %d\n%s\n%s", code, tail(stdout), stderr)
	}
}

func benchPlan(dir string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main([]string{"-chdir=" + dir, "plan", "-review"}, Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

func tail(s string) string {
	if len(s) > 3000 {
		return s[len(s)-3000:]
	}
	return s
}
