package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/state"
)

// TestImportThatDiffersHoldsItsPort: a server started by hand, without
// roofline's environment and with another max_model_len, holds the
// configured port itself. Importing it plans its replacement (stop, then
// start); the port it holds is not "in use by a process roofline did not
// start", which made every import of a differing server fail.
func TestImportThatDiffersHoldsItsPort(t *testing.T) {
	want := run(t, tc{hcl: qwenServer}).Change("qwen").After
	cmdline := slices.Clone(want.Argv)
	i := slices.Index(cmdline, "32768")
	if i < 0 {
		t.Fatalf("no max_model_len in %q", cmdline)
	}
	cmdline[i] = "8192"
	read := func(id config.ImportID) *ImportedProcess {
		return &ImportedProcess{ID: id.String(), OwnGroup: true, Env: map[string]string{},
			Instance: state.Instance{Driver: "process", ID: state.ProcessID(4242), PID: 4242, Group: 4242, Cmdline: cmdline}}
	}
	hcl := qwenServer + "\nimport {\n  to = server.qwen\n  id = \"port:8000\"\n}\n"
	p := run(t, tc{hcl: hcl, ports: fakePorts{8000: "pid 4242 (vllm serve ...)"}, readImport: read})
	for _, d := range p.Diagnostics {
		if d.Summary == "Port in use" {
			t.Errorf("the imported process's own port is reported in use: %s", d.Detail)
		}
	}
	c := wantAction(t, p, "qwen", DeleteThenCreate)
	if c.Import == nil || !strings.Contains(c.Reason, "max_model_len") || !strings.Contains(c.Reason, "env ") {
		t.Errorf("import %+v, reason %q", c.Import, c.Reason)
	}
	// A port held by another process is still an error, also when the
	// imported process runs on another port.
	other := slices.Clone(cmdline)
	other[slices.Index(other, "8000")] = "9000"
	p = run(t, tc{hcl: hcl, ports: fakePorts{8000: "pid 77 (nginx)", 9000: "pid 4242 (vllm serve ...)"},
		readImport: func(id config.ImportID) *ImportedProcess {
			ip := read(id)
			ip.Cmdline = other
			return ip
		}})
	if got := summaries(p); !slices.Contains(got, "Error: Port in use") {
		t.Errorf("the configured port held by another process, the imported one on 9000: %v", got)
	}
	p = run(t, tc{hcl: strings.Replace(hcl, "port                   = 8000", "port                   = 8001", 1),
		ports: fakePorts{8000: "pid 4242 (vllm serve ...)", 8001: "pid 77 (nginx)"}, readImport: read})
	if got := summaries(p); !slices.Contains(got, "Error: Port in use") {
		t.Errorf("a port another process holds: %v", got)
	}
}

// TestProcNameIsOneLine: a foreign GPU process's command line is printed in
// a plan diagnostic as one line, without its control characters.
func TestProcNameIsOneLine(t *testing.T) {
	p := gpu.Process{Cmdline: []string{"python3", "-c", "import x\n\x1b[2Jprint(1)"}}
	if got, want := procName(p), "python3 -c import x [2Jprint(1)"; got != want {
		t.Errorf("procName = %q, want %q", got, want)
	}
}

// TestImportWithoutAirGapEnv: a hand-started engine that matches the server
// block but lacks roofline's air-gap variables (HF_HUB_OFFLINE, ...) is
// taken over as it runs, with a warning that they act at its next start;
// it is not restarted for them. A value it sets otherwise still differs.
func TestImportWithoutAirGapEnv(t *testing.T) {
	want := run(t, tc{hcl: qwenServer}).Change("qwen").After
	env := map[string]string{}
	for k, v := range want.Env {
		if _, airGap := engine.AirGapEnv()[k]; !airGap {
			env[k] = v
		}
	}
	if len(env) == len(want.Env) {
		t.Fatalf("the desired environment has no air-gap variable: %v", want.Env)
	}
	read := func(env map[string]string) func(config.ImportID) *ImportedProcess {
		return func(id config.ImportID) *ImportedProcess {
			return &ImportedProcess{ID: id.String(), OwnGroup: true, Env: env,
				Instance: state.Instance{Driver: "process", ID: state.ProcessID(4242), PID: 4242, Group: 4242, Cmdline: slices.Clone(want.Argv)}}
		}
	}
	hcl := qwenServer + "\nimport {\n  to = server.qwen\n  id = \"port:8000\"\n}\n"
	p := run(t, tc{hcl: hcl, ports: fakePorts{8000: "pid 4242 (vllm serve ...)"}, readImport: read(env)})
	c := wantAction(t, p, "qwen", NoOp)
	if c.Import == nil || len(c.Import.Differences) != 0 {
		t.Errorf("import %+v", c.Import)
	}
	var warned string
	for _, d := range p.Diagnostics {
		if d.Summary == "Imported process lacks roofline's start settings" {
			warned = d.Detail
		}
	}
	if !strings.Contains(warned, "HF_HUB_OFFLINE=1") || !strings.Contains(warned, "-replace=server.qwen") {
		t.Errorf("warning: %q (diagnostics %v)", warned, summaries(p))
	}
	if _, ok := c.Before.Env["HF_HUB_OFFLINE"]; ok {
		t.Errorf("the record claims a variable the process does not have: %v", c.Before.Env)
	}

	env["HF_HUB_OFFLINE"] = "0" // set otherwise: the process may download
	p = run(t, tc{hcl: hcl, ports: fakePorts{8000: "pid 4242 (vllm serve ...)"}, readImport: read(env)})
	if c := wantAction(t, p, "qwen", DeleteThenCreate); !strings.Contains(c.Reason, "env HF_HUB_OFFLINE") {
		t.Errorf("reason %q", c.Reason)
	}
}
