package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/config"
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
