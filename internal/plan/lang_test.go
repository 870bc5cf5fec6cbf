package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func withLifecycle(body string) string {
	return strings.Replace(qwenServer, "  tool_call_parser", "  lifecycle {\n"+body+"\n  }\n  tool_call_parser", 1)
}

func hasDiag(p *Plan, summary string) bool {
	for _, d := range p.Diagnostics {
		if d.Summary == summary {
			return true
		}
	}
	return false
}

func TestPreventDestroy(t *testing.T) {
	cfg := withLifecycle("    prevent_destroy = true")
	st, obs := stateFrom(run(t, tc{hcl: cfg}))
	if p := run(t, tc{hcl: cfg, prior: st, observed: obs}); p.HasErrors() || p.HasChanges() {
		t.Fatalf("unchanged: %v", summaries(p))
	}
	p := run(t, tc{hcl: strings.Replace(cfg, "32768", "16384", 1), prior: st, observed: obs})
	if !hasDiag(p, "Instance cannot be destroyed") || !p.HasErrors() {
		t.Errorf("a replacement of a protected server must be an error: %v", p.Diagnostics)
	}
	if p := run(t, tc{hcl: cfg, prior: st, observed: obs, mode: ModeDestroy}); !hasDiag(p, "Instance cannot be destroyed") {
		t.Errorf("destroy of a protected server must be an error: %v", p.Diagnostics)
	}
}

func TestIgnoreChanges(t *testing.T) {
	cfg := withLifecycle("    ignore_changes = [max_model_len, model_files]")
	st, obs := stateFrom(run(t, tc{hcl: cfg}))
	p := run(t, tc{hcl: strings.Replace(cfg, "32768", "16384", 1), prior: st, observed: obs})
	if p.HasChanges() || p.HasErrors() || !hasDiag(p, "Changes ignored") {
		t.Errorf("an ignored attribute must not replace: %v %v", summaries(p), p.Diagnostics)
	}
	// The model fingerprint: a touched model folder.
	st.Servers["qwen"].Model.Fingerprint = "fp-older"
	if p := run(t, tc{hcl: cfg, prior: st, observed: obs}); p.HasChanges() {
		t.Errorf("ignore_changes = [model_files] must ignore the fingerprint: %v", summaries(p))
	}
	// Something not ignored still replaces.
	p = run(t, tc{hcl: strings.Replace(cfg, "0.9", "0.8", 1), prior: st, observed: obs})
	wantAction(t, p, "qwen", DeleteThenCreate)
}

func TestReplaceTriggeredBy(t *testing.T) {
	dir := t.TempDir()
	tmpl := filepath.Join(dir, "chat.jinja")
	if err := os.WriteFile(tmpl, []byte("{{ messages }}"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := withLifecycle(`    replace_triggered_by = ["`+tmpl+`"]`) + `
server "other" {
  engine = engine.vllm_016
  model  = model.qwen
  gpus   = [1]
  port   = 8001
  max_model_len = 4096
  lifecycle {
    replace_triggered_by = [server.qwen]
  }
}
`
	st, obs := stateFrom(run(t, tc{hcl: cfg}))
	if p := run(t, tc{hcl: cfg, prior: st, observed: obs}); p.HasChanges() {
		t.Fatalf("unchanged: %v", summaries(p))
	}
	if err := os.WriteFile(tmpl, []byte("{{ messages | tojson }}"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := run(t, tc{hcl: cfg, prior: st, observed: obs})
	c := wantAction(t, p, "qwen", DeleteThenCreate)
	if !strings.Contains(c.Reason, "chat.jinja") {
		t.Errorf("reason %q", c.Reason)
	}
	o := wantAction(t, p, "other", DeleteThenCreate)
	if o.Reason != "replace_triggered_by: server.qwen is replaced" {
		t.Errorf("other: %q", o.Reason)
	}
	os.Remove(tmpl)
	if p := run(t, tc{hcl: cfg, prior: st, observed: obs}); !hasDiag(p, "Cannot read a replace_triggered_by file") {
		t.Errorf("missing trigger file: %v", p.Diagnostics)
	}
}
