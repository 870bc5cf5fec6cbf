package kube

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/config"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite golden files")

// loadSpecs loads one HCL fixture and returns the spec of every cluster
// server, sorted by name.
func loadSpecs(t testing.TB, path string) []Spec {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(path)
	cfg, diags := config.Load("/cfg", []string{name}, map[string][]byte{name: src})
	if diags.HasErrors() {
		t.Fatalf("%s: %v", path, diags)
	}
	var specs []Spec
	for _, n := range cfg.ServerNames() {
		s := cfg.Servers[n]
		if !s.OnCluster() {
			continue
		}
		specs = append(specs, Spec{Server: s, Model: cfg.Models[s.Model], Engine: cfg.Engines[s.Engine], Cluster: cfg.Clusters[s.Cluster]})
	}
	return specs
}

// TestRenderGolden renders every fixture's cluster servers (HCL in) and
// compares the objects with the checked-in YAML (out). go test -update
// rewrites the YAML.
func TestRenderGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/render/*.hcl")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			var buf bytes.Buffer
			for _, spec := range loadSpecs(t, path) {
				r, diags := Render(spec)
				if diags.HasErrors() {
					t.Fatalf("render %s: %v", spec.Server.Name, diags)
				}
				for _, obj := range r.Objects() {
					b, err := yaml.Marshal(obj.Object)
					if err != nil {
						t.Fatal(err)
					}
					buf.WriteString("---\n")
					buf.Write(b)
				}
			}
			golden := strings.TrimSuffix(path, ".hcl") + ".yaml"
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -update writes it)", err)
			}
			if !bytes.Equal(want, buf.Bytes()) {
				t.Errorf("objects differ from %s (go test -update rewrites it):\n%s", golden, buf.String())
			}
		})
	}
}

func argvOf(u map[string]any, path ...string) []string {
	var cur any = u
	for _, p := range path {
		cur = cur.(map[string]any)[p]
	}
	ctr := cur.(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	var out []string
	for _, a := range ctr["command"].([]any) {
		out = append(out, a.(string))
	}
	return out
}

// TestMultiNodeFlags: a TP 8 × PP 2 server over two nodes renders an LWS
// whose leader and workers carry each engine's multi-node flags.
func TestMultiNodeFlags(t *testing.T) {
	specs := loadSpecs(t, "testdata/render/multinode.hcl")
	want := map[string]struct{ leader, worker string }{
		"big_vllm": {
			"--tensor-parallel-size 8 --pipeline-parallel-size 2 --max-model-len 16384 --nnodes 2 --master-addr $(LWS_LEADER_ADDRESS) --node-rank 0",
			"--tensor-parallel-size 8 --pipeline-parallel-size 2 --max-model-len 16384 --nnodes 2 --master-addr $(LWS_LEADER_ADDRESS) --node-rank $(LWS_WORKER_INDEX) --headless",
		},
		"big_sglang": {
			"--tp-size 8 --pp-size 2 --enable-metrics --nnodes 2 --dist-init-addr $(LWS_LEADER_ADDRESS):20000 --node-rank 0",
			"--tp-size 8 --pp-size 2 --enable-metrics --nnodes 2 --dist-init-addr $(LWS_LEADER_ADDRESS):20000 --node-rank $(LWS_WORKER_INDEX)",
		},
	}
	for _, spec := range specs {
		r, diags := Render(spec)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		w := want[spec.Server.Name]
		if r.Workload.GetKind() != "LeaderWorkerSet" || r.GPUsPerPod != 8 || r.Nodes != 2 {
			t.Errorf("%s: kind %s, %d GPUs per pod, %d nodes", spec.Server.Name, r.Workload.GetKind(), r.GPUsPerPod, r.Nodes)
		}
		leader := strings.Join(argvOf(r.Workload.Object, "spec", "leaderWorkerTemplate", "leaderTemplate"), " ")
		worker := strings.Join(argvOf(r.Workload.Object, "spec", "leaderWorkerTemplate", "workerTemplate"), " ")
		if !strings.HasSuffix(leader, w.leader) {
			t.Errorf("%s leader argv:\n got %s\nwant ...%s", spec.Server.Name, leader, w.leader)
		}
		if !strings.HasSuffix(worker, w.worker) {
			t.Errorf("%s worker argv:\n got %s\nwant ...%s", spec.Server.Name, worker, w.worker)
		}
		policy, _, _ := unstructured.NestedString(r.Workload.Object, "spec", "leaderWorkerTemplate", "restartPolicy")
		if policy != "RecreateGroupOnPodRestart" {
			t.Errorf("%s: restartPolicy %q", spec.Server.Name, policy)
		}
	}
}

// TestHashAndRollout: what needs new pods changes the hash (and so the
// workload's name); replicas and gate settings do not. The rollout is
// always explicit.
func TestHashAndRollout(t *testing.T) {
	base := loadSpecs(t, "testdata/render/single.hcl")[0]
	render := func(edit func(s *config.Server)) *Rendered {
		s := *base.Server
		edit(&s)
		spec := base
		spec.Server = &s
		r, diags := Render(spec)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		return r
	}
	r0 := render(func(*config.Server) {})
	for _, c := range []struct {
		name string
		edit func(s *config.Server)
		same bool
	}{
		{"replicas", func(s *config.Server) { s.Replicas = 5 }, true},
		{"max_model_len", func(s *config.Server) { s.MaxModelLen = 16384 }, false},
		{"env", func(s *config.Server) { s.Env = map[string]string{"X": "1"} }, false},
		{"tensor_parallel", func(s *config.Server) { s.TensorParallel = 4 }, false},
	} {
		r := render(c.edit)
		if (r.Hash == r0.Hash) != c.same {
			t.Errorf("%s: hash %s vs %s, want same=%v", c.name, r.Hash, r0.Hash, c.same)
		}
		if r.Workload.GetName() != WorkloadName("qwen-chat", r.Hash) {
			t.Errorf("%s: workload name %s", c.name, r.Workload.GetName())
		}
	}
	for _, c := range []struct {
		cbd                bool
		surge, unavailable int64
	}{{true, 1, 0}, {false, 0, 1}} {
		r := render(func(s *config.Server) { s.Lifecycle.CreateBeforeDestroy = c.cbd })
		ru := r.Workload.Object["spec"].(map[string]any)["strategy"].(map[string]any)["rollingUpdate"].(map[string]any)
		if ru["maxSurge"] != c.surge || ru["maxUnavailable"] != c.unavailable {
			t.Errorf("create_before_destroy=%v: rollingUpdate %v, want surge %d unavailable %d", c.cbd, ru, c.surge, c.unavailable)
		}
	}
}
