package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/kube/kubetest"
	"github.com/roofline/roofline/internal/model/modeltest"
)

// TestPlanClusterWiring: a configuration whose servers all run on a
// cluster needs no GPU on this host, and plan reaches for the cluster's
// kubeconfig (here missing: an environment error that says what to set).
// The cluster path itself is tested against a real API server in
// internal/kube/live.
func TestPlanClusterWiring(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), `
cluster "lab" {
  kubeconfig = "./missing.kubeconfig"
  model_volume {
    host_path = "/srv/models"
  }
}
engine "vllm" {
  kind    = "vllm"
  version = "0.16.0"
  image   = "vllm/vllm-openai@sha256:1111111111111111111111111111111111111111111111111111111111111111"
}
model "qwen" {
  path = "/srv/models/qwen"
}
server "chat" {
  cluster = cluster.lab
  engine  = engine.vllm
  model   = model.qwen
  port    = 8000
}
`)
	code, out, errOut := runMain(t, "-chdir="+dir, "plan")
	if code != ExitError {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{`cluster "lab": reading the kubeconfig`, "missing.kubeconfig", "set kubeconfig and context in the cluster block", "The cluster plan has errors"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, "No GPU inventory") {
		t.Errorf("a configuration with no server on this host asked for its GPUs:\n%s", errOut)
	}
}

// TestPlanOnCluster: roofline plan on a configuration with a cluster
// server plans it against a real API server (envtest, docs/kubernetes.md):
// the objects to create, the GPU preflight against fake H100 nodes, exit
// code 2 under -detailed-exitcode.
func TestPlanOnCluster(t *testing.T) {
	tc := kubetest.Get(t)
	tc.AddNodes(t, kubetest.GPUNode{Name: "cli-a", GPUs: 8, Pool: "cli"})
	ns := tc.Namespace(t, "cli")
	root := filepath.Dir(synthModel(t, modeltest.Qwen3_8B))
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), fmt.Sprintf(`
cluster "lab" {
  kubeconfig    = %q
  namespace     = %q
  node_selector = { "roofline.test/pool" = "cli" }
  model_volume {
    host_path = %q
  }
}
engine "vllm" {
  kind    = "vllm"
  version = "0.16.0"
  image   = "vllm/vllm-openai@sha256:1111111111111111111111111111111111111111111111111111111111111111"
}
model "qwen" {
  path = "%s/Qwen3_8B"
}
server "chat" {
  cluster         = cluster.lab
  engine          = engine.vllm
  model           = model.qwen
  port            = 8000
  tensor_parallel = 4
  replicas        = %d
}
`, tc.Kubeconfig, ns, root, root, 1))
	code, out, errOut := runMain(t, "-chdir="+dir, "plan", "-detailed-exitcode")
	if code != ExitChanges {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"# server.chat will be created on cluster.lab (namespace cli)", "1 replica(s) × 1 pod(s) × 4 nvidia.com/gpu (Deployment)",
		"+ Deployment chat-", "+ Service chat", `nvidia.com/gpu: "4"`, "Plan: 1 to add, 0 to change, 0 to destroy."} {
		if !strings.Contains(out, want) {
			t.Errorf("plan output lacks %q:\n%s", want, out)
		}
	}
	// Three replicas of 4 GPUs do not fit one node of 8.
	src, _ := os.ReadFile(filepath.Join(dir, "main.hcl"))
	writeFile(t, filepath.Join(dir, "main.hcl"), strings.Replace(string(src), "replicas        = 1", "replicas        = 3", 1))
	code, out, errOut = runMain(t, "-chdir="+dir, "plan")
	if code != ExitError || !strings.Contains(errOut, "Not enough free GPUs") || !strings.Contains(errOut, "main.hcl") {
		t.Errorf("3 × 4 GPUs on 8: exit %d\n%s\n%s", code, out, errOut)
	}
}
