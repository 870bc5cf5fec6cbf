package cli

import (
	"path/filepath"
	"strings"
	"testing"
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
