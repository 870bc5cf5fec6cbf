package views

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/gpu/gputest"
	"github.com/roofline/roofline/internal/model"
	"github.com/roofline/roofline/internal/model/modeltest"
	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/rehearsal"
	"github.com/roofline/roofline/internal/state"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
)

var update = flag.Bool("update", false, "rewrite golden files")

const engines = `
engine "vllm" {
  kind      = "vllm"
  version   = "0.16.0"
  rehearsal = true
}

model "qwen" {
  path        = "qwen3-8b"
  served_name = "qwen3-8b"
}
`

const webServer = `
server "web" {
  engine           = engine.vllm
  model            = model.qwen
  gpus             = [0]
  port             = 8000
  host             = "127.0.0.1"
  max_model_len    = 32768
  gpu_memory_utilization = 0.45
  tool_call_parser = "hermes"
  env              = { VLLM_LOGGING_LEVEL = "INFO", HF_TOKEN = "hf_secret" }
  gate {
    health_timeout = "5m"
    smoke_toolcall = true
    bench {
      concurrency                  = 8
      requests                     = 40
      min_output_tokens_per_second = 500
      max_ttft_p99                 = "2s"
    }
  }
  lifecycle {
    create_before_destroy = true
  }
}
`

const batchServer = `
server "batch" {
  engine        = engine.vllm
  model         = model.qwen
  gpus          = [1]
  port          = 8001
  host          = "127.0.0.1"
  max_model_len = 16384
}
`

const oldServer = `
server "old" {
  engine        = engine.vllm
  model         = model.qwen
  gpus          = [2]
  port          = 8002
  host          = "127.0.0.1"
  max_model_len = 8192
}
`

// makePlan plans src against prior with the reference engine and a real
// (sparse) model folder under dir.
func makePlan(t *testing.T, dir, src string, prior *state.File, targets []string) *plan.Plan {
	t.Helper()
	cfg, diags := config.Load(dir, []string{"main.hcl"}, map[string][]byte{"main.hcl": []byte(src)})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	rehearsal.ResolveAll(cfg, "/usr/bin/roofline") // as the CLI does
	in := &plan.Inputs{Config: cfg, Drivers: testDrivers, Prior: prior, Snapshot: gputest.H100s(4), Engines: map[string]plan.EngineResult{}, Models: map[string]plan.ModelResult{},
		Observed: map[string]*plan.Observation{}, Targets: targets, Now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	inst, _ := engine.Reference("vllm", "0.16.0")
	in.Engines["vllm"] = plan.EngineResult{Installed: inst}
	info, err := model.Inspect(filepath.Join(dir, "qwen3-8b"))
	in.Models["qwen"] = plan.ModelResult{Info: info, Err: err, Fingerprint: "fp"}
	if prior != nil {
		for name, s := range prior.Servers {
			in.Observed[name] = &plan.Observation{Alive: true, GPUPids: []int{s.PID}}
		}
	}
	return plan.Make(in)
}

// applied is the state an apply of p would write; each instance took 2m41s
// to start.
func applied(p *plan.Plan) *state.File {
	st := state.NewFile()
	st.Lineage, st.Serial = "lin", 1
	created := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	for i, c := range p.Changes {
		d := c.After
		if d == nil {
			continue
		}
		pid := 1000 + i
		st.Set(&state.Server{Name: d.Name, Engine: d.Engine, Model: d.Model, Argv: d.Argv, Env: state.RedactEnv(d.Env, nil), CommandLen: d.CommandLen,
			GPUs: d.GPUs, Host: d.Host, Port: d.Port, Instance: state.Instance{Driver: d.Driver, ID: state.ProcessID(pid), PID: pid}, Status: state.StatusReady,
			ConfigHash: d.ConfigHash, GateHash: d.GateHash, Predicted: d.Predicted, CreatedAt: created, ReadyAt: created.Add(2*time.Minute + 41*time.Second),
			Footprint: d.Predicted})
		if d.Proxy {
			s := st.Servers[d.Name]
			s.Proxy = &state.Instance{Driver: d.Driver, ID: state.ProcessID(pid + 100), PID: pid + 100}
			s.BackendPort = 9000 + i
		}
	}
	return st
}

// TestPlanMarkdown renders three representative plans (a rollout without
// downtime, a replacement with downtime beside a destroy, a targeted
// create), compares them with golden files and checks, through a
// Markdown renderer, that they have the expected sections.
func TestPlanMarkdown(t *testing.T) {
	dir := t.TempDir()
	if err := modeltest.Write(filepath.Join(dir, "qwen3-8b"), modeltest.Qwen3_8B); err != nil {
		t.Fatal(err)
	}
	all := engines + webServer + batchServer + oldServer
	prior := applied(makePlan(t, dir, all, nil, nil))
	tests := []struct {
		name     string
		src      string
		prior    *state.File
		targets  []string
		sections int      // <details> per changed server
		risk     string   // the risk line holds it
		tables   int      // argument tables
		inHTML   []string // the rendered HTML holds each
	}{
		{name: "rollout", prior: prior,
			src:      strings.NewReplacer("max_model_len    = 32768", "max_model_len    = 16384", `VLLM_LOGGING_LEVEL = "INFO", HF_TOKEN = "hf_secret"`, `VLLM_LOGGING_LEVEL = "DEBUG", HF_TOKEN = "hf_rotated"`).Replace(all),
			sections: 1, tables: 1, risk: "🟢 no downtime · 0 destroys · 0 warnings",
			inHTML: []string{"<code>+/-</code> <b>server.web</b>", "<code>main.hcl:19</code> <code>max_model_len</code>", "(sensitive value)", "→", "tool-call smoke test"}},
		{name: "downtime-and-destroy", prior: prior,
			src:      strings.Replace(engines+webServer+batchServer, "max_model_len = 16384", "max_model_len = 12288", 1),
			sections: 2, tables: 1, risk: "🔴 1 replacement with downtime: <code>server.batch</code> (its last start took 2m41s) · 1 destroy: <code>server.old</code>",
			inHTML: []string{"Expected downtime: about 2m41s", "<b>server.old</b>: destroyed"}},
		{name: "targeted-create", src: all, targets: []string{"web", "batch"},
			sections: 2, tables: 2, risk: "🟡 no downtime · 0 destroys · 1 warning",
			inHTML: []string{"Resource targeting is in effect", "<code>+</code> <b>server.batch</b>: created"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := makePlan(t, dir, tt.src, tt.prior, tt.targets)
			var buf bytes.Buffer
			PlanMarkdown(&buf, p.ToJSON())
			got := strings.ReplaceAll(buf.String(), dir, "$MODELS")
			if strings.Contains(got, "hf_secret") || strings.Contains(got, "hf_rotated") {
				t.Fatalf("a secret in the markdown:\n%s", got)
			}
			golden(t, filepath.Join("testdata", tt.name+".md"), got)
			checkSections(t, got, tt.sections, tt.tables, tt.risk, tt.inHTML)
		})
	}
}

// checkSections parses md with goldmark (GitHub's dialect) and checks the
// structure a pull request shows: the risk paragraph first, one
// <details> section per server plus the diagnostics, argument tables.
func checkSections(t *testing.T, md string, sections, tables int, risk string, inHTML []string) {
	t.Helper()
	g := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(html.WithUnsafe()))
	src := []byte(md)
	doc := g.Parser().Parse(text.NewReader(src))
	var blocks []ast.Node
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		blocks = append(blocks, n)
	}
	if len(blocks) < 2 || blocks[0].Kind() != ast.KindHeading || blocks[1].Kind() != ast.KindParagraph ||
		!strings.HasPrefix(string(blocks[1].(*ast.Paragraph).Lines().Value(src)), "**Risk:**") {
		t.Fatalf("the risk line is not the first paragraph after the heading:\n%s", md)
	}
	opened, closed, tbls := 0, 0, 0
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n.Kind() {
		case ast.KindHTMLBlock:
			var b strings.Builder
			lines := n.Lines()
			for i := 0; i < lines.Len(); i++ {
				seg := lines.At(i)
				b.Write(seg.Value(src))
			}
			if strings.HasPrefix(b.String(), "<details><summary>") {
				opened++
			}
			if strings.HasPrefix(strings.TrimSpace(b.String()), "</details>") {
				closed++
			}
		case east.KindTable:
			tbls++
		}
		return ast.WalkContinue, nil
	})
	wantSections := sections
	if strings.Contains(md, "diagnostic") {
		wantSections++
	}
	if opened != wantSections || closed != wantSections || tbls != tables {
		t.Errorf("sections opened %d, closed %d (want %d), tables %d (want %d)\n%s", opened, closed, wantSections, tbls, tables, md)
	}
	var rendered bytes.Buffer
	if err := g.Convert(src, &rendered); err != nil {
		t.Fatal(err)
	}
	out := rendered.String()
	for _, s := range append([]string{risk}, inHTML...) {
		if !strings.Contains(out, s) {
			t.Errorf("the rendered HTML lacks %q:\n%s", s, out)
		}
	}
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./internal/views -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test ./internal/views -update rewrites it):\n%s", path, got)
	}
}

// TestPlanStream compares the plan -json stream of the rollout plan with a
// golden file and checks the order of its messages.
func TestPlanStream(t *testing.T) {
	dir := t.TempDir()
	if err := modeltest.Write(filepath.Join(dir, "qwen3-8b"), modeltest.Qwen3_8B); err != nil {
		t.Fatal(err)
	}
	all := engines + webServer + batchServer + oldServer
	prior := applied(makePlan(t, dir, all, nil, nil))
	src := strings.Replace(engines+webServer+batchServer, "max_model_len    = 32768", "max_model_len    = 16384", 1)
	p := makePlan(t, dir, src, prior, nil)
	var buf bytes.Buffer
	s := NewStream(&buf)
	s.Now = func() time.Time { return time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) }
	PlanStream(s, p.ToJSON())
	got := strings.ReplaceAll(buf.String(), dir, "$MODELS")
	// The config hash covers the model path, a temp dir.
	got = regexp.MustCompile(`"config_hash":"[0-9a-f]+"`).ReplaceAllString(got, `"config_hash":"HASH"`)
	// Sensitive values are salted hashes, salted at random.
	got = regexp.MustCompile(`sha256:[0-9a-f]{16}:[0-9a-f]{64}`).ReplaceAllString(got, "sha256:SALT:HASH")
	golden(t, filepath.Join("testdata", "rollout-stream.jsonl"), got)
	var types []string
	for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
		var m Message
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %v: %s", err, line)
		}
		types = append(types, m.Type)
		if m.Type == "planned_change" && m.Change.Resource.Addr == "server.web" && (m.Change.Action != "replace" || m.Change.Order != "create_before_destroy" || len(m.Change.Argv) != 2) {
			t.Errorf("web: %+v", m.Change)
		}
	}
	want := "version planned_change planned_change change_summary plan"
	if strings.Join(types, " ") != want {
		t.Errorf("messages %v, want %s", types, want)
	}
}
