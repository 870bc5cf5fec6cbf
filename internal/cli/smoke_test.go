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
	runCLICases(t, []cliCase{
		{"parser set", []string{"smoke", "-url", good, "-model", "test-model"}, 0,
			[]string{"Smoke test of " + good, "ok    tool call ", "ok    tool call, streamed", "ok    tool result round trip", "Tool calls work."}, ""},
		{"SERVER with a reasoning parser checks reasoning", []string{"-chdir=" + reasoningDir, "smoke", "a"}, 0,
			[]string{"Smoke test of server.a", "ok    reasoning", "in reasoning, then the answer"}, ""},
		{"no parser: fails with the explanation", []string{"smoke", "-url", noParser, "-model", "test-model", "-engine", "vllm"}, 1,
			[]string{"FAIL  tool call ", "came back as plain text in content", "--tool-call-parser", "skip  tool result round trip", "Smoke test failed: 2 of 3 steps."}, ""},
		{"url needs a model", []string{"smoke", "-url", good}, 1, nil, "-url needs -model"},
	})
}

func TestSmokeCommandJSON(t *testing.T) {
	_, u := gateServe(t, gatetest.Options{})
	code, out, _ := runMain(t, "smoke", "-url", u, "-model", "test-model", "-reasoning", "-json")
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
