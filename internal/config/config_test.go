package config

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/engine/kinds"

	"github.com/hashicorp/hcl/v2"
)

var update = flag.Bool("update", false, "rewrite golden files")

// markerRE finds "# ERROR: summary" / "# WARNING: summary" on a fixture
// line, or in JSON fixtures a comment property "//": "ERROR: summary".
var (
	markerRE     = regexp.MustCompile(`#\s*(ERROR|WARNING):\s*(.+?)\s*$`)
	jsonMarkerRE = regexp.MustCompile(`"//":\s*"(ERROR|WARNING):\s*(.+?)\s*",?\s*$`)
)

type want struct {
	line     int
	severity string
	summary  string
}

func (w want) String() string { return fmt.Sprintf("line %d %s: %s", w.line, w.severity, w.summary) }

func loadFixture(t *testing.T, path string) (*Config, hcl.Diagnostics, []byte) {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(path)
	cfg, diags := Load("/cfg", []string{name}, map[string][]byte{name: src})
	return cfg, diags, src
}

func markers(src []byte) []want {
	var out []want
	for i, line := range strings.Split(string(src), "\n") {
		m := markerRE.FindStringSubmatch(line)
		if m == nil {
			m = jsonMarkerRE.FindStringSubmatch(line)
		}
		if m != nil {
			out = append(out, want{i + 1, m[1], m[2]})
		}
	}
	return out
}

func gotDiags(diags hcl.Diagnostics) []want {
	var out []want
	for _, d := range diags {
		sev := "ERROR"
		if d.Severity == hcl.DiagWarning {
			sev = "WARNING"
		}
		line := 0
		if d.Subject != nil {
			line = d.Subject.Start.Line
		}
		out = append(out, want{line, sev, d.Summary})
	}
	return out
}

func sortWants(w []want) {
	sort.Slice(w, func(i, j int) bool { return w[i].String() < w[j].String() })
}

// TestFixtures loads every fixture and compares its diagnostics with the
// markers written on the offending lines, then the rendered text with a golden
// file.
func TestFixtures(t *testing.T) {
	for _, dir := range []string{"valid", "invalid", "warning"} {
		files, _ := filepath.Glob(filepath.Join("testdata", dir, "*.hcl"))
		jsonFiles, _ := filepath.Glob(filepath.Join("testdata", dir, "*.hcl.json"))
		files = append(files, jsonFiles...)
		if len(files) == 0 {
			t.Fatalf("no fixtures in %s", dir)
		}
		for _, path := range files {
			t.Run(dir+"/"+filepath.Base(path), func(t *testing.T) {
				cfg, diags, src := loadFixture(t, path)
				want, got := markers(src), gotDiags(diags)
				sortWants(want)
				sortWants(got)
				if fmt.Sprint(want) != fmt.Sprint(got) {
					t.Errorf("diagnostics differ from the fixture's markers\nwant:\n  %s\ngot:\n  %s", join(want), join(got))
				}
				switch dir {
				case "valid":
					if len(diags) > 0 {
						t.Errorf("valid fixture has diagnostics")
					}
				case "invalid":
					if !diags.HasErrors() {
						t.Errorf("invalid fixture has no errors")
					}
				case "warning":
					if diags.HasErrors() || len(diags) == 0 {
						t.Errorf("warning fixture must have warnings only")
					}
				}
				if len(diags) == 0 {
					return
				}
				var buf bytes.Buffer
				w := hcl.NewDiagnosticTextWriter(&buf, cfg.Files, 100, false)
				_ = w.WriteDiagnostics(diags)
				golden := strings.TrimSuffix(path, ".hcl") + ".golden"
				if strings.HasSuffix(path, ".json") {
					golden = strings.TrimSuffix(path, ".hcl.json") + ".json.golden"
				}
				if *update {
					if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				exp, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run go test -update)", err)
				}
				if !bytes.Equal(exp, buf.Bytes()) {
					t.Errorf("rendered diagnostics differ from %s (go test -update rewrites it):\n%s", golden, buf.String())
				}
			})
		}
	}
}

func join(w []want) string {
	var s []string
	for _, x := range w {
		s = append(s, x.String())
	}
	return strings.Join(s, "\n  ")
}

func TestFullDecode(t *testing.T) {
	cfg, diags, _ := loadFixture(t, "testdata/valid/full.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if cfg.Roofline.StateDir != ".state" || cfg.Roofline.Inventory != "/cfg/gpus.json" {
		t.Errorf("roofline block: %+v", cfg.Roofline)
	}
	e := cfg.Engines["vllm_016"]
	if e.Kind != kinds.VLLM || e.Version != "0.16.0" || e.Command[0] != "/opt/vllm/bin/vllm" || e.Env["VLLM_ATTENTION_BACKEND"] != "FLASHINFER" {
		t.Errorf("engine: %+v", e)
	}
	s := cfg.Servers["a"]
	checks := []struct {
		name      string
		got, want any
	}{
		{"engine", s.Engine, "vllm_016"},
		{"model", s.Model, "qwen"},
		{"gpus", fmt.Sprint(s.GPUs), "[0 1 2 3]"},
		{"tp", s.TensorParallel, 2},
		{"pp", s.PipelineParallel, 2},
		{"max_model_len 32K", s.MaxModelLen, 32768},
		{"util", s.GPUMemoryUtilization, 0.9},
		{"prefix", *s.EnablePrefixCaching, true},
		{"spec", s.SpeculativeConfig, `{"method":"ngram","num_speculative_tokens":3}`},
		{"extra", fmt.Sprint(s.ExtraArgs), "[--max-num-seqs 256 --seed=1]"},
		{"env fn", s.Env["VLLM_LOGGING_LEVEL"], "DEBUG"},
		{"health", s.Gate.HealthTimeout, 20 * time.Minute},
		{"smoke", s.Gate.SmokeToolcall, true},
		{"ttft", s.Gate.Bench.MaxTTFTP99, 2 * time.Second},
		{"tpot", s.Gate.Bench.MaxTPOTP99, 50 * time.Millisecond},
		{"cbd", s.Lifecycle.CreateBeforeDestroy, true},
		{"served", cfg.Models["qwen"].ServedName, "qwen3-8b"},
	}
	for _, c := range checks {
		if fmt.Sprint(c.got) != fmt.Sprint(c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	b := cfg.Servers["b"]
	if b.TensorParallel != 1 || b.Gate.HealthTimeout != DefaultHealthTimeout || b.Gate.Bench.Concurrency != 0 || b.Gate.Bench.RequestRate != 4.5 ||
		b.Gate.Bench.InputTokens != DefaultBenchInputTokens {
		t.Errorf("defaults: %+v %+v", b, b.Gate.Bench)
	}
	// Ranges point at the attribute values.
	if r := s.Range("max_model_len"); r.Start.Line != 33 {
		t.Errorf("max_model_len range %v, want line 33", r)
	}
	if r := s.Range("not_set"); r != s.DeclRange {
		t.Errorf("unset attribute range should fall back to the block")
	}
}

func TestLoadDirMultipleFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("engines.hcl", "engine \"e\" {\n  kind = \"vllm\"\n  version = \"0.16.0\"\n  rehearsal = true\n}\n")
	write("models.hcl", "model \"m\" {\n  path = \"m\"\n}\n")
	write("servers.hcl", "server \"s\" {\n  engine = engine.e\n  model = model.m\n  gpus = [0]\n  port = 8000\n}\n")
	write("notes.txt", "not hcl")
	cfg, diags := LoadDir(dir)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if len(cfg.Files) != 3 || cfg.Models["m"].Path != filepath.Join(dir, "m") {
		t.Errorf("files %d, model path %q", len(cfg.Files), cfg.Models["m"].Path)
	}
	// A duplicate across files names the first declaration.
	write("dup.hcl", "model \"m\" {\n  path = \"other\"\n}\n")
	_, diags = LoadDir(dir)
	if len(diags) != 1 || diags[0].Summary != "Duplicate model block" || !strings.Contains(diags[0].Detail, "dup.hcl") && !strings.Contains(diags[0].Detail, "models.hcl") {
		t.Errorf("duplicate across files: %v", diags)
	}
}

func TestLoadDirErrors(t *testing.T) {
	_, diags := LoadDir(t.TempDir())
	if len(diags) != 1 || diags[0].Summary != "No configuration files" {
		t.Errorf("empty dir: %v", diags)
	}
	_, diags = LoadDir(filepath.Join(t.TempDir(), "nope"))
	if len(diags) != 1 || diags[0].Summary != "Cannot read the configuration directory" {
		t.Errorf("missing dir: %v", diags)
	}
}

func TestParseTokens(t *testing.T) {
	tests := []struct {
		in   string
		want int
		err  bool
	}{
		{"32768", 32768, false}, {"32k", 32000, false}, {"32K", 32768, false}, {"1M", 1048576, false},
		{"1.5k", 1500, false}, {"x", 0, true}, {"", 0, true}, {"NaN", 0, true}, {"1e30", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseTokens(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseTokens(%q) = %d, %v; want %d, err %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

// FuzzLoad: no input may panic the loader.
func FuzzLoad(f *testing.F) {
	files, _ := filepath.Glob("testdata/*/*.hcl")
	for _, p := range files {
		src, _ := os.ReadFile(p)
		f.Add(src)
	}
	f.Add([]byte(`server "x" { gpus = [1e400] port = -0 max_model_len = "9999999999999K" }`))
	f.Fuzz(func(t *testing.T, src []byte) {
		cfg, _ := Load("/cfg", []string{"f.hcl"}, map[string][]byte{"f.hcl": src})
		if cfg == nil {
			t.Fatal("nil config")
		}
	})
}

func TestVariablesAndLocals(t *testing.T) {
	src, err := os.ReadFile("testdata/valid/vars.hcl")
	if err != nil {
		t.Fatal(err)
	}
	load := func(vars map[string]string) (*Config, hcl.Diagnostics) {
		return LoadVars("/cfg", []string{"vars.hcl"}, map[string][]byte{"vars.hcl": src}, vars)
	}
	cfg, diags := load(nil)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	s, e, m := cfg.Servers["s"], cfg.Engines["vllm"], cfg.Models["m"]
	if e.Version != "0.16.0" || m.ServedName != "qwen3-0.16.0" || s.TensorParallel != 2 || s.MaxModelLen != 32768 ||
		fmt.Sprint(s.GPUs) != "[0 1]" || e.Env["VLLM_LOGGING_LEVEL"] != "INFO" {
		t.Fatalf("defaults and locals: engine %+v model %+v server %+v", e, m, s)
	}
	cfg, diags = load(map[string]string{"vllm_version": "0.8.5", "gpus": "[2, 3]"})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if cfg.Engines["vllm"].Version != "0.8.5" || fmt.Sprint(cfg.Servers["s"].GPUs) != "[2 3]" || cfg.Models["m"].ServedName != "qwen3-0.8.5" {
		t.Fatalf("-var values not used: %+v %v", cfg.Engines["vllm"], cfg.Servers["s"].GPUs)
	}
	for _, tc := range []struct {
		vars    map[string]string
		summary string
	}{
		{map[string]string{"vllm_verison": "1"}, "Value for undeclared variable"},
		{map[string]string{"gpus": "two"}, "Invalid value for variable"},
	} {
		_, diags := load(tc.vars)
		if len(diags) != 1 || diags[0].Summary != tc.summary {
			t.Errorf("%v: want %q, got %v", tc.vars, tc.summary, diags)
		}
	}
	if _, diags := load(map[string]string{"vllm_verison": "1"}); !strings.Contains(diags[0].Detail, `Did you mean "vllm_version"?`) {
		t.Errorf("no suggestion: %v", diags[0].Detail)
	}
}

func TestClusterDecode(t *testing.T) {
	cfg, diags, _ := loadFixture(t, "testdata/valid/cluster.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	c := cfg.Clusters["lab"]
	if c.Kubeconfig != "~/.kube/config" || c.Context != "gpu-lab" || c.Namespace != "inference" || c.GPUResource != DefaultGPUResource ||
		c.NodeSelector["nvidia.com/gpu.product"] != "NVIDIA-H100-80GB-HBM3" || len(c.Tolerations) != 1 || c.Tolerations[0].Operator != "Exists" ||
		c.ModelVolume.Kind() != "hostPath" || c.ModelVolume.MountPath != "/srv/models" || c.ShmSize != "16Gi" {
		t.Errorf("cluster: %+v", c)
	}
	big, small := cfg.Servers["llama_70b"], cfg.Servers["small"]
	if big.Cluster != "lab" || big.Nodes != 2 || big.Replicas != 1 || big.GPUsPerPod() != 8 || big.ObjectName() != "llama-70b" {
		t.Errorf("llama_70b: cluster %q nodes %d replicas %d gpus/pod %d", big.Cluster, big.Nodes, big.Replicas, big.GPUsPerPod())
	}
	if small.Replicas != 2 || small.Nodes != 1 || small.GPUsPerPod() != 1 {
		t.Errorf("small: nodes %d replicas %d", small.Nodes, small.Replicas)
	}
	if h := cfg.HostOnly(); len(h.Servers) != 0 || len(h.Engines) != 0 || len(h.Models) != 0 || len(cfg.Servers) != 2 {
		t.Errorf("HostOnly kept %d servers, %d engines, %d models", len(h.Servers), len(h.Engines), len(h.Models))
	}
	if got := fmt.Sprint(cfg.ClusterServers()); got != "[llama_70b small]" {
		t.Errorf("ClusterServers = %s", got)
	}
}
