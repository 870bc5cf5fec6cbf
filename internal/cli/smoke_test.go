package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/gate/gatetest"
)

func TestSmokeCommand(t *testing.T) {
	_, good := gateServe(t, gatetest.Options{ToolParser: true, ReasoningField: "reasoning"})
	_, noParser := gateServe(t, gatetest.Options{})
	reasoningDir := gateConfig(t, good, "vllm", `  tool_call_parser = "hermes"
  reasoning_parser = "qwen3"`)
	tests := []struct {
		name string
		args []string
		code int
		out  []string
		err  string
	}{
		{"parser set", []string{"smoke", "-url", good, "-model", "test-model"}, 0,
			[]string{"Smoke test of " + good, "ok    tool call ", "ok    tool call, streamed", "ok    tool result round trip", "Tool calls work."}, ""},
		{"SERVER with a reasoning parser checks reasoning", []string{"-chdir=" + reasoningDir, "smoke", "a"}, 0,
			[]string{"Smoke test of server.a", "ok    reasoning", "in reasoning, then the answer"}, ""},
		{"no parser: fails with the explanation", []string{"smoke", "-url", noParser, "-model", "test-model", "-engine", "vllm"}, 1,
			[]string{"FAIL  tool call ", "came back as plain text in content", "--tool-call-parser", "skip  tool result round trip", "Smoke test failed: 2 of 3 steps."}, ""},
		{"url needs a model", []string{"smoke", "-url", good}, 1, nil, "-url needs -model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runGateCLI(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, out, errOut)
			}
			for _, s := range tt.out {
				if !strings.Contains(out, s) {
					t.Errorf("stdout lacks %q:\n%s", s, out)
				}
			}
			if !strings.Contains(errOut, tt.err) {
				t.Errorf("stderr lacks %q:\n%s", tt.err, errOut)
			}
		})
	}
}

func TestSmokeCommandJSON(t *testing.T) {
	_, u := gateServe(t, gatetest.Options{})
	code, out, _ := runGateCLI(t, "smoke", "-url", u, "-model", "test-model", "-reasoning", "-json")
	var res struct {
		OK    bool `json:"ok"`
		Steps []struct {
			Name   string `json:"name"`
			OK     bool   `json:"ok"`
			Detail string `json:"detail"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if code != 1 || res.OK || len(res.Steps) != 4 || !strings.Contains(res.Steps[0].Detail, "<tool_call>") {
		t.Fatalf("exit %d, %+v", code, res)
	}
}
