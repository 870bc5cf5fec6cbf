package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// comparable returns a JSON rendering of cfg's blocks without source
// positions (which differ between the twins), keeping which attributes were
// set.
func comparableConfig(t *testing.T, cfg *Config) string {
	t.Helper()
	keys := func(r Ranges) []string { return sortedKeys(r) }
	type blk struct {
		V   any
		Set []string
	}
	out := map[string]blk{}
	if cfg.Roofline != nil {
		r := *cfg.Roofline
		set := keys(r.Ranges)
		r.DeclRange, r.Ranges = hcl.Range{}, nil
		out["roofline"] = blk{r, set}
	}
	for n, e := range cfg.Engines {
		c := *e
		set := keys(c.Ranges)
		c.DeclRange, c.Ranges = hcl.Range{}, nil
		out["engine."+n] = blk{c, set}
	}
	for n, m := range cfg.Models {
		c := *m
		set := keys(c.Ranges)
		c.DeclRange, c.Ranges = hcl.Range{}, nil
		out["model."+n] = blk{c, set}
	}
	for n, s := range cfg.Servers {
		c := *s
		set := keys(c.Ranges)
		c.DeclRange, c.Ranges = hcl.Range{}, nil
		g := *c.Gate
		set = append(set, keys(g.Ranges)...)
		g.DeclRange, g.Ranges = hcl.Range{}, nil
		if g.Bench != nil {
			b := *g.Bench
			set = append(set, keys(b.Ranges)...)
			b.DeclRange, b.Ranges = hcl.Range{}, nil
			g.Bench = &b
		}
		c.Gate = &g
		c.Lifecycle.DeclRange = hcl.Range{}
		out["server."+n] = blk{c, set}
	}
	b, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestJSONTwin: a configuration written in HCL's JSON syntax decodes to the
// same configuration as its native twin.
func TestJSONTwin(t *testing.T) {
	native, diags, _ := loadFixture(t, "testdata/valid/full.hcl")
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	twin, diags, _ := loadFixture(t, "testdata/valid/full.hcl.json")
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	a, b := comparableConfig(t, native), comparableConfig(t, twin)
	if a != b {
		t.Errorf("the JSON twin decodes differently:\nnative: %s\njson:   %s", a, b)
	}
	if !strings.Contains(a, "FLASHINFER") || len(native.Servers) != 2 {
		t.Fatalf("comparison saw nothing: %s", a)
	}
}

func TestFileNames(t *testing.T) {
	for _, tt := range []struct {
		name          string
		config, fmtOK bool
		tool          string
	}{
		{"main.hcl", true, true, ""},
		{"gen.hcl.json", true, false, ""},
		{"build.pkr.hcl", false, false, "Packer"},
		{"vars.pkrvars.hcl", false, false, "Packer"},
		{"x.tftest.hcl", false, false, "Terraform"},
		{".terraform.lock.hcl", false, false, "Terraform"},
		{"job.nomad.hcl", false, false, "Nomad"},
		{"roofline.rfvars", false, true, ""},
		{"prod.auto.rfvars", false, true, ""},
		{"prod.auto.rfvars.json", false, false, ""},
		{".#main.hcl", false, false, ""},
		{"notes.txt", false, false, ""},
		{"main.tf", false, false, ""},
	} {
		if got := IsConfigFile(tt.name); got != tt.config {
			t.Errorf("IsConfigFile(%q) = %v", tt.name, got)
		}
		if got := IsFormattable(tt.name); got != tt.fmtOK {
			t.Errorf("IsFormattable(%q) = %v", tt.name, got)
		}
		if got := OtherTool(tt.name); got != tt.tool {
			t.Errorf("OtherTool(%q) = %q", tt.name, got)
		}
	}
}

// TestLoadDirMixed: JSON files load with native ones; another tool's files
// are skipped with one warning that names them.
func TestLoadDirMixed(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("engines.hcl", "engine \"e\" {\n  kind = \"vllm\"\n  version = \"0.16.0\"\n  rehearsal = true\n}\n")
	write("models.hcl.json", `{"model": {"m": {"path": "m"}}}`)
	write("servers.hcl.json", `{"server": {"s": {"engine": "engine.e", "model": "model.m", "gpus": [0], "port": 8000}}}`)
	write("build.pkr.hcl", "source \"docker\" \"ubuntu\" {\n  image = \"ubuntu\"\n}\n")
	write("test.tftest.hcl", "run \"x\" {}\n")
	cfg, diags := LoadDir(dir)
	if diags.HasErrors() || len(diags) != 1 || diags[0].Summary != "Files of other tools skipped" ||
		!strings.Contains(diags[0].Detail, "build.pkr.hcl (Packer)") || !strings.Contains(diags[0].Detail, "test.tftest.hcl (Terraform)") {
		t.Fatalf("diags: %v", diags)
	}
	s := cfg.Servers["s"]
	if s == nil || s.Engine != "e" || s.Model != "m" || cfg.Models["m"].Path != filepath.Join(dir, "m") || !reflect.DeepEqual(s.GPUs, []int{0}) {
		t.Fatalf("JSON server: %+v", s)
	}
	// A syntax error in a JSON file is reported with its line.
	write("bad.hcl.json", "{\n  \"server\": {\n    \"x\": [1,\n}\n")
	_, diags = LoadDir(dir)
	if !diags.HasErrors() || diags[0].Subject == nil || diags[0].Subject.Filename != "bad.hcl.json" {
		t.Fatalf("JSON syntax error: %v", diags)
	}
}

func TestForEach(t *testing.T) {
	cfg, diags, _ := loadFixture(t, "testdata/valid/for-each.hcl")
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	want := []string{`old[0]`, `web["gpu0"]`, `web["gpu1"]`, `web["gpu2"]`, `web["gpu3"]`}
	if got := cfg.ServerNames(); !reflect.DeepEqual(got, want) {
		t.Fatalf("servers %q, want %q", got, want)
	}
	if got := cfg.EngineNames(); !reflect.DeepEqual(got, []string{`vllm["0.16.0"]`, `vllm["0.8.5"]`}) {
		t.Errorf("engines %q", got)
	}
	w := cfg.Servers[`web["gpu3"]`]
	if w.Addr() != `server.web["gpu3"]` || w.Block != "web" || w.Key != `["gpu3"]` || w.Port != 8003 || !reflect.DeepEqual(w.GPUs, []int{3}) ||
		w.Engine != `vllm["0.16.0"]` || w.Model != "qwen[1]" || !w.Gate.SmokeToolcall || w.Gate.Bench != nil {
		t.Errorf("web[gpu3] = %+v", w)
	}
	if b := cfg.Servers[`web["gpu0"]`].Gate.Bench; b == nil || b.Requests != 200 {
		t.Errorf("dynamic bench in web[gpu0]: %+v", b)
	}
	if m := cfg.Models["qwen[1]"]; m.Path != "/models/qwen-1" || m.ServedName != "qwen-1" {
		t.Errorf("model qwen[1] = %+v", m)
	}
	if o := cfg.Servers["old[0]"]; o.Engine != `vllm["0.8.5"]` || o.Model != "qwen[0]" {
		t.Errorf("old[0] = %+v", o)
	}
	// Without the gate: the dynamic block expands to nothing, defaults apply.
	cfg, diags = LoadInputs("/cfg", []string{"f.hcl"}, map[string][]byte{"f.hcl": mustRead(t, "testdata/valid/for-each.hcl")},
		Inputs{Args: []VarArg{{Name: "gated", Value: "false"}, {Name: "gpus", Value: "[0, 1]"}}})
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	if len(cfg.Servers) != 3 || cfg.Servers[`web["gpu0"]`].Gate.SmokeToolcall || cfg.Servers[`web["gpu0"]`].Gate.HealthTimeout != DefaultHealthTimeout {
		t.Errorf("gated = false: %v", cfg.ServerNames())
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestOutputs(t *testing.T) {
	cfg, diags, _ := loadFixture(t, "testdata/valid/outputs.hcl")
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	if got := cfg.OutputNames(); !reflect.DeepEqual(got, []string{"key_env", "qwen3_base_url", "routes", "token"}) {
		t.Fatalf("outputs %v", got)
	}
	o := cfg.Outputs["qwen3_base_url"]
	if o.Value.AsString() != "http://127.0.0.1:8000/v1" || o.Description != "What clients use as base_url." || o.Sensitive {
		t.Errorf("qwen3_base_url = %#v", o)
	}
	routes := cfg.Outputs["routes"].Value.GetAttr("qwen3-8b")
	if routes.LengthInt() != 2 || routes.Index(cty.NumberIntVal(0)).AsString() != "http://10.0.0.5:8001" {
		t.Errorf("routes = %#v", cfg.Outputs["routes"].Value)
	}
	if cfg.Outputs["key_env"].Value.AsString() != "VLLM_API_KEY" || !cfg.Outputs["token"].Sensitive {
		t.Errorf("key_env %#v token %#v", cfg.Outputs["key_env"].Value, cfg.Outputs["token"])
	}
	ep := cfg.Endpoint(cfg.Servers["qwen3"])
	if !ep.APIKeyRequired || ep.ServedModelName != "qwen3-8b" || ep.Port != 8000 {
		t.Errorf("endpoint %+v", ep)
	}
}

func TestMoved(t *testing.T) {
	cfg, diags, _ := loadFixture(t, "testdata/valid/moved.hcl")
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	if len(cfg.Moved) != 2 || cfg.Moved[0].From != "beta" || cfg.Moved[0].To != "gamma" || cfg.Moved[1].From != "web_old[0]" || cfg.Moved[1].To != `web["a"]` {
		t.Fatalf("moved %+v %+v", cfg.Moved[0], cfg.Moved[1])
	}
	for in, want := range map[string]string{"server.a": "a", "a": "a", `server.web["x"]`: `web["x"]`, "web[2]": "web[2]", "server.": "", `server.a.b`: "", "engine.a": ""} {
		got, err := ParseServerAddr(in)
		if got != want || (err != nil) != (want == "") {
			t.Errorf("ParseServerAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, tc := range []struct{ src, dst, from, to, err string }{
		{"server.beta", "gamma", "beta", "gamma", ""},
		{`web["a"]`, "server.web[0]", `web["a"]`, "web[0]", ""},
		{"beta", "server.beta", "", "", "source and destination are both server.beta"},
		{"engine.a", "b", "", "", `"engine.a" is not a server address`},
		{"a", "server.", "", "", `"server." is not a server address`},
	} {
		from, to, err := ParseMove(tc.src, tc.dst)
		if from != tc.from || to != tc.to || (err == nil) != (tc.err == "") || err != nil && !strings.HasPrefix(err.Error(), tc.err) {
			t.Errorf("ParseMove(%q, %q) = %q, %q, %v; want %q, %q, %q", tc.src, tc.dst, from, to, err, tc.from, tc.to, tc.err)
		}
	}
}

func TestVersionMeets(t *testing.T) {
	for _, tt := range []struct {
		v, c string
		ok   bool
		err  bool
	}{
		{"0.1.0-dev", ">= 0.1.0", true, false},
		{"0.1.0", "> 0.1.0", false, false},
		{"0.2.3", "~> 0.2.1", true, false},
		{"0.3.0", "~> 0.2.1", false, false},
		{"0.9.0", "~> 0.2", true, false},
		{"1.0.0", "~> 0.2", false, false},
		{"0.1.0", ">= 0.1, < 0.3", true, false},
		{"0.3.0", ">= 0.1, < 0.3", false, false},
		{"0.1.0", "!= 0.1.0", false, false},
		{"0.1.0", "0.1.0", true, false},
		{"0.1.0", ">= banana", false, true},
	} {
		ok, err := VersionMeets(tt.v, tt.c)
		if ok != tt.ok || (err != nil) != tt.err {
			t.Errorf("VersionMeets(%q, %q) = %v, %v", tt.v, tt.c, ok, err)
		}
	}
}

func TestImportBlock(t *testing.T) {
	cfg, diags, _ := loadFixture(t, "testdata/valid/import.hcl")
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	if len(cfg.Imports) != 1 || cfg.Imports[0].To != "qwen3" || cfg.Imports[0].ID.Port != 8000 {
		t.Fatalf("imports %+v", cfg.Imports)
	}
}

func TestModules(t *testing.T) {
	cfg, diags := LoadDir("testdata/modules/root")
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	want := []string{"module.batch.server.qwen3", "module.chat.server.qwen3"}
	if got := cfg.ServerNames(); !reflect.DeepEqual(got, want) {
		t.Fatalf("servers %q, want %q", got, want)
	}
	s := cfg.Servers["module.batch.server.qwen3"]
	if s.Addr() != "module.batch.server.qwen3" || s.Engine != "module.batch.engine.vllm" || s.Model != "module.batch.model.qwen3" ||
		s.Port != 8100 || s.MaxModelLen != 8192 || s.TensorParallel != 2 || s.Env["VLLM_API_KEY"] != "sk-module" || !s.Sensitive.Key("env", "VLLM_API_KEY") {
		t.Errorf("batch server %+v", s)
	}
	c := cfg.Servers["module.chat.server.qwen3"]
	if c.MaxModelLen != 32768 || len(c.Env) != 0 || !c.Gate.SmokeToolcall {
		t.Errorf("chat server %+v", c)
	}
	if m := cfg.Models["module.chat.model.qwen3"]; m == nil || m.Path != filepath.Join(cfg.Dir, "models/qwen3-8b") {
		t.Errorf("model path is relative to the root configuration: %+v", m)
	}
	if v := cfg.Outputs["chat_url"].Value; v.AsString() != "http://127.0.0.1:8000/v1" {
		t.Errorf("chat_url %#v", v)
	}
	if _, ok := cfg.Engines["vllm"]; !ok || len(cfg.Engines) != 3 {
		t.Errorf("engines %v", cfg.EngineNames())
	}
}

func TestModuleErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("m/main.hcl", "variable \"port\" {\n  type = number\n}\nroofline {\n}\n")
	write("main.hcl", `module "a" {
  source = "./m"
  prot   = 1
}

module "b" {
  source = "registry.example/x"
}

module "c" {
  source = "./nope"
}

module "d" {
  source   = "./m"
  for_each = {}
}

module "e" {
  source = "./loop"
}
`)
	write("loop/main.hcl", "module \"again\" {\n  source = \"../loop\"\n}\n")
	_, diags := LoadDir(dir)
	var got []string
	for _, d := range diags {
		got = append(got, fmt.Sprintf("%s:%d %s", d.Subject.Filename, d.Subject.Start.Line, d.Summary))
	}
	sort.Strings(got)
	want := []string{
		"loop/main.hcl:2 Modules nested too deeply",
		"m/main.hcl:1 No value for required variable",
		"m/main.hcl:4 Settings block in a module",
		"main.hcl:16 Unsupported argument",
		"main.hcl:3 Unsupported argument",
		"main.hcl:7 Invalid module source",
		"main.hcl:11 Cannot load the module",
	}
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("diagnostics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestSmokesReasoning: a server with a reasoning parser has its reasoning
// smoked; one without, not.
func TestSmokesReasoning(t *testing.T) {
	for _, tc := range []struct {
		parser string
		want   bool
	}{{"", false}, {"qwen3", true}, {"deepseek_r1", true}} {
		if got := (&Server{ReasoningParser: tc.parser}).SmokesReasoning(); got != tc.want {
			t.Errorf("reasoning_parser %q: SmokesReasoning = %v, want %v", tc.parser, got, tc.want)
		}
	}
}
