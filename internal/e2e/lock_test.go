package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeEngine writes an engine install: a script that answers --version
// with 0.16.0 and everything else with the rehearsal engine of flagsOf
// (its real flag list and argparse behaviour).
func writeEngine(t *testing.T, path, flagsOf string) {
	t.Helper()
	script := fmt.Sprintf("#!/bin/sh\ncase \"$1\" in --version) echo 0.16.0 ;; *) exec %q rehearsal vllm@%s \"$@\" ;; esac\n", bin, flagsOf)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestEngineLockFile: init locks the install; an in-place upgrade behind
// the lock fails plan on the host and makes a saved plan stale; init
// -upgrade records it and prints the flag diff.
func TestEngineLockFile(t *testing.T) {
	install := filepath.Join(t.TempDir(), "vllm")
	writeEngine(t, install, "0.16.0")
	e := newEnv(t, fmt.Sprintf(`
roofline {
  inventory = "gpus.json"
}

engine "vllm" {
  kind    = "vllm"
  version = "0.16.0"
  command = [%q]
}

model "qwen" {
  path        = "@MODELS@/qwen3-8b"
  served_name = "qwen3-8b"
}

server "a" {
  engine        = engine.vllm
  model         = model.qwen
  gpus          = [0]
  port          = @PORT_A@
  max_model_len = 16384
}
`, install))
	r := e.mustRun(0, "init")
	if !strings.Contains(r.stdout, "engine.vllm: locked (vllm 0.16.0,") {
		t.Fatalf("init:\n%s", r)
	}
	lock, err := os.ReadFile(filepath.Join(e.dir, "roofline.lock.hcl"))
	if err != nil || !strings.Contains(string(lock), `"--max-model-len",`) || !strings.Contains(string(lock), `identity   = "sha256:`) {
		t.Fatalf("lock file: %v\n%s", err, lock)
	}
	e.mustRun(0, "validate") // the lock file is not configuration
	e.mustRun(2, "plan", "-detailed-exitcode", "-out=saved.plan")
	e.mustRun(0, "init") // unchanged: nothing to do

	// pip install -U behind roofline's back: same version, other flags.
	writeEngine(t, install, "0.8.5")
	r = e.mustRun(1, "plan")
	if !strings.Contains(r.stderr, "Engine changed behind the lock file") || !strings.Contains(r.stderr, "flags removed") || !strings.Contains(r.stderr, "roofline init -upgrade") {
		t.Fatalf("plan after the upgrade:\n%s", r)
	}
	r = e.mustRun(1, "apply", "saved.plan")
	if !strings.Contains(r.stderr, "Saved plan is stale") || !strings.Contains(r.stderr, `engine "vllm" changed since the plan was made`) {
		t.Fatalf("saved plan after the upgrade:\n%s", r)
	}
	r = e.mustRun(1, "init")
	if !strings.Contains(r.stderr, "engine.vllm changed since roofline.lock.hcl was written") {
		t.Fatalf("init without -upgrade:\n%s", r)
	}
	r = e.mustRun(0, "init", "-upgrade")
	if !strings.Contains(r.stdout, "engine.vllm: upgraded:") || !strings.Contains(r.stdout, "      - --") || !strings.Contains(r.stdout, "      + --") {
		t.Fatalf("init -upgrade:\n%s", r)
	}
	e.mustRun(2, "plan", "-detailed-exitcode")
}

// TestInitAcceptsLocalVersion: an install that reports a local version
// (0.16.0+cu129, as CUDA builds of vLLM do) matches a pin of 0.16.0 in init
// as it does in plan: one version rule.
func TestInitAcceptsLocalVersion(t *testing.T) {
	install := filepath.Join(t.TempDir(), "vllm")
	script := fmt.Sprintf("#!/bin/sh\ncase \"$1\" in --version) echo 0.16.0+cu129 ;; *) exec %q rehearsal vllm@0.16.0 \"$@\" ;; esac\n", bin)
	if err := os.WriteFile(install, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, fmt.Sprintf(`
roofline {
  inventory = "gpus.json"
}

engine "vllm" {
  kind    = "vllm"
  version = "0.16.0"
  command = [%q]
}

model "qwen" {
  path        = "@MODELS@/qwen3-8b"
  served_name = "qwen3-8b"
}

server "a" {
  engine        = engine.vllm
  model         = model.qwen
  gpus          = [0]
  port          = @PORT_A@
  max_model_len = 16384
}
`, install))
	if r := e.run("init"); r.code != 0 || strings.Contains(r.stdout, "plan will refuse it") {
		t.Fatalf("init refused an install of 0.16.0+cu129 for a pin of 0.16.0:\n%s", r)
	}
	if r := e.run("plan"); r.code != 0 || strings.Contains(r.stderr, "pins vLLM") {
		t.Fatalf("plan:\n%s", r)
	}
}
