package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runEnv runs roofline in the env's directory with extra environment
// variables and stdin (not a terminal), without the harness's -no-color.
func (e *env) runEnv(vars []string, stdin string, args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), vars...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("roofline %v: %v", args, err)
	}
	return result{code, out.String(), errb.String()}
}

// warnServers has two servers that each draw the same load-time warning
// (gpu_memory_utilization above 0.95).
const warnServers = base + `
server "a" {
  engine                 = engine.vllm
  model                  = model.qwen
  gpus                   = [0]
  port                   = @PORT_A@
  host                   = "127.0.0.1"
  max_model_len          = 32768
  gpu_memory_utilization = 0.97
}

server "b" {
  engine                 = engine.vllm
  model                  = model.qwen
  gpus                   = [1]
  port                   = @PORT_B@
  host                   = "127.0.0.1"
  max_model_len          = 32768
  gpu_memory_utilization = 0.97
}
`

// TestAutomationContract runs Terraform's automation flags and variables
// the way CI does. Nothing here starts an engine.
func TestAutomationContract(t *testing.T) {
	e := newEnv(t, warnServers)
	logPath := filepath.Join(t.TempDir(), "roofline.log")
	tests := []struct {
		name    string
		vars    []string
		stdin   string
		args    []string
		code    int
		out     []string // stdout holds each
		notOut  []string // stdout holds none
		err     string   // stderr holds it
		notErr  string   // stderr lacks it
		outJSON bool     // stdout is one JSON document
	}{
		{name: "per-command flags", args: []string{"plan", "-no-color", "-input=false", "-lock=false", "-compact-warnings", "-parallelism=4", "-detailed-exitcode"},
			code: 2, out: []string{"Plan: 2 to add, 0 to change, 0 to destroy. 2 warnings, shown below.", "Warnings:", "- gpu_memory_utilization above 0.95 (and 1 more similar warning elsewhere)", "To see the full warning notes"},
			notOut: []string{"\x1b["}, notErr: "Warning"},
		{name: "warnings after the plan, on stdout, merged", args: []string{"plan", "-no-color"},
			code: 0, out: []string{"Plan: 2 to add", "Warning: gpu_memory_utilization above 0.95", "(and 1 more similar warning elsewhere)"}, notErr: "Warning"},
		{name: "target warning", args: []string{"plan", "-no-color", "-target=server.a"},
			code: 0, out: []string{"Plan: 1 to add", "Warning: Resource targeting is in effect"}},
		{name: "ROOFLINE_CLI_ARGS_plan", vars: []string{"ROOFLINE_CLI_ARGS_plan=-detailed-exitcode -no-color"}, args: []string{"plan"},
			code: 2, out: []string{"Plan: 2 to add"}},
		{name: "ROOFLINE_CLI_ARGS for every command, quoted", vars: []string{`ROOFLINE_CLI_ARGS=-no-color -var 'unused=a b'`}, args: []string{"plan"},
			code: 1, err: "unused"},
		{name: "ROOFLINE_CLI_ARGS unterminated", vars: []string{`ROOFLINE_CLI_ARGS=-no-color 'x`}, args: []string{"plan"},
			code: 1, err: "ROOFLINE_CLI_ARGS: unterminated ' quote"},
		{name: "advice without automation", args: []string{"plan", "-no-color"},
			code: 0, out: []string{"Note: you didn't use the -out option"}},
		{name: "ROOFLINE_IN_AUTOMATION drops advice", vars: []string{"ROOFLINE_IN_AUTOMATION=1"}, args: []string{"plan", "-no-color"},
			code: 0, out: []string{"Plan: 2 to add"}, notOut: []string{"Note: you didn't use the -out option", "roofline apply"}},
		{name: "apply needs a terminal or -auto-approve", args: []string{"apply"}, stdin: "yes\n",
			code: 1, err: "No way to ask for approval", notOut: []string{"Plan:"}},
		{name: "apply -input=false", args: []string{"apply", "-input=false"},
			code: 1, err: "-input=false", notOut: []string{"Plan:"}},
		{name: "destroy with ROOFLINE_INPUT=0", vars: []string{"ROOFLINE_INPUT=0"}, args: []string{"destroy"},
			code: 1, err: "No way to ask for approval"},
		{name: "debug log to a file", vars: []string{"ROOFLINE_LOG=debug", "ROOFLINE_LOG_PATH=" + logPath}, args: []string{"plan", "-no-color", "-refresh-probes"},
			code: 0, out: []string{"Plan: 2 to add"}, notErr: "level="},
		{name: "plan -json keeps load warnings", args: []string{"plan", "-json"}, code: 0, outJSON: true,
			out: []string{`"type":"diagnostic"`, `"summary":"gpu_memory_utilization above 0.95"`, `"type":"change_summary"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.runEnv(tt.vars, tt.stdin, tt.args...)
			if r.code != tt.code {
				t.Fatalf("want exit %d, got %s", tt.code, r)
			}
			for _, s := range tt.out {
				if !strings.Contains(r.stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, r)
				}
			}
			for _, s := range tt.notOut {
				if strings.Contains(r.stdout, s) {
					t.Errorf("stdout has %q:\n%s", s, r)
				}
			}
			if !strings.Contains(r.stderr, tt.err) {
				t.Errorf("stderr lacks %q:\n%s", tt.err, r)
			}
			if tt.notErr != "" && strings.Contains(r.stderr, tt.notErr) {
				t.Errorf("stderr has %q:\n%s", tt.notErr, r)
			}
			if tt.outJSON {
				for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
					if !json.Valid([]byte(line)) {
						t.Errorf("a line of the stream is not JSON: %q", line)
					}
				}
			}
		})
	}
	log, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"roofline started", "engine probe: running", "rehearsal"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("debug log lacks %q:\n%s", want, log)
		}
	}
}

// TestPlanJSONOnSyntaxError: a configuration that does not parse still
// gives a JSON answer: the version message, then the diagnostic with its
// file and line.
func TestPlanJSONOnSyntaxError(t *testing.T) {
	e := newEnv(t, base+"\nserver \"x\" {\n  port = \n}\n")
	for _, args := range [][]string{{"plan", "-json"}, {"apply", "-json", "-auto-approve"}} {
		r := e.runEnv(nil, "", args...)
		if r.code != 1 {
			t.Fatalf("%v: want exit 1, got %s", args, r)
		}
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		type msg struct {
			Type       string `json:"type"`
			Level      string `json:"@level"`
			UI         string `json:"ui"`
			Diagnostic *struct {
				Severity string `json:"severity"`
				Range    *struct {
					Filename string `json:"filename"`
				} `json:"range"`
			} `json:"diagnostic"`
		}
		var first, second msg
		if len(lines) < 2 || json.Unmarshal([]byte(lines[0]), &first) != nil || json.Unmarshal([]byte(lines[1]), &second) != nil {
			t.Fatalf("%v: not a JSON stream:\n%s", args, r)
		}
		if first.Type != "version" || first.UI != "1.0" || second.Type != "diagnostic" || second.Level != "error" ||
			second.Diagnostic == nil || second.Diagnostic.Range == nil || second.Diagnostic.Range.Filename != "main.hcl" {
			t.Fatalf("%v: stream %+v %+v\n%s", args, first, second, r)
		}
		if strings.TrimSpace(r.stderr) != "" {
			t.Errorf("%v: stderr should be empty under -json:\n%s", args, r.stderr)
		}
	}
	r := e.runEnv(nil, "", "apply", "-json")
	if r.code != 1 || !strings.Contains(r.stdout, "Plan file or auto-approve required") {
		t.Fatalf("apply -json without -auto-approve: %s", r)
	}
}

// TestApplyJSONStream applies two servers with -json: a stream a deploy
// tool reads, with the gates' results, and nothing else on stdout.
func TestApplyJSONStream(t *testing.T) {
	e := newEnv(t, twoServers)
	r := e.mustRun(0, "apply", "-json", "-auto-approve")
	var types []string
	gates := 0
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var m struct {
			Type string `json:"type"`
			Hook *struct {
				Resource struct {
					Addr string `json:"addr"`
				} `json:"resource"`
				Action  string `json:"action"`
				IDKey   string `json:"id_key"`
				IDValue string `json:"id_value"`
			} `json:"hook"`
			Gate *struct {
				Passed  bool     `json:"passed"`
				Summary []string `json:"summary"`
			} `json:"gate"`
			Changes *struct {
				Add       int    `json:"add"`
				Operation string `json:"operation"`
			} `json:"changes"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		if len(types) == 0 || types[len(types)-1] != m.Type {
			types = append(types, m.Type)
		}
		switch m.Type {
		case "apply_complete":
			if m.Hook.Action != "create" || m.Hook.IDKey != "pid" || m.Hook.IDValue == "" {
				t.Errorf("apply_complete: %+v", m.Hook)
			}
		case "gate_result":
			gates++
			if !m.Gate.Passed || len(m.Gate.Summary) == 0 {
				t.Errorf("gate_result: %+v", m.Gate)
			}
		case "change_summary":
			if m.Changes.Add != 2 {
				t.Errorf("change_summary: %+v", m.Changes)
			}
		}
	}
	joined := strings.Join(types, " ")
	for _, want := range []string{"planned_change change_summary apply_start", "gate_result", "apply_complete"} {
		if !strings.Contains(joined, want) {
			t.Errorf("stream lacks %q: %s", want, joined)
		}
	}
	if !strings.HasPrefix(joined, "version ") || !strings.HasSuffix(joined, "change_summary") || gates != 2 {
		t.Errorf("stream %s, %d gate results\n%s", joined, gates, r)
	}
}
