package config

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

const inputsCfg = `
variable "a" { default = "default" }
variable "b" { default = "default" }
variable "c" { default = "default" }
variable "d" { default = "default" }
variable "e" { default = "default" }
variable "f" { default = "default" }
variable "n" {
  type    = number
  default = 0
}
engine "e" {
  kind      = "vllm"
  version   = "0.16.0"
  rehearsal = true
  env       = { A = var.a, B = var.b, C = var.c, D = var.d, E = var.e, F = var.f, N = tostring(var.n) }
}
`

// TestInputPrecedence: environment < roofline.rfvars < roofline.rfvars.json
// < *.auto.rfvars(.json) by name < -var and -var-file in command-line order.
func TestInputPrecedence(t *testing.T) {
	srcs := map[string][]byte{
		"main.hcl":             []byte(inputsCfg),
		"roofline.rfvars":      []byte("b = \"rfvars\"\nc = \"rfvars\"\nd = \"rfvars\"\ne = \"rfvars\"\nf = \"rfvars\"\n"),
		"roofline.rfvars.json": []byte(`{"c": "json", "d": "json", "e": "json", "f": "json"}`),
		"a.auto.rfvars":        []byte("d = \"a.auto\"\ne = \"a.auto\"\nf = \"a.auto\"\nn = 7\n"),
		"b.auto.rfvars.json":   []byte(`{"e": "b.auto", "f": "b.auto"}`),
	}
	names := []string{"a.auto.rfvars", "b.auto.rfvars.json", "main.hcl", "roofline.rfvars", "roofline.rfvars.json"}
	in := Inputs{
		Env: []string{"ROOFLINE_VAR_a=env", "ROOFLINE_VAR_b=env", "ROOFLINE_VAR_unknown=x", "PATH=/bin"},
		Args: []VarArg{
			{Name: "f", Value: "var-first"},
			{File: "cli.rfvars", Src: []byte(`f = "file"` + "\n" + `n = 9`)},
			{Name: "n", Value: "11"},
		},
	}
	cfg, diags := LoadInputs("/cfg", names, srcs, in)
	if diags.HasErrors() || len(diags) > 0 {
		t.Fatal(diags)
	}
	env := cfg.Engines["e"].Env
	want := map[string]string{"A": "env", "B": "rfvars", "C": "json", "D": "a.auto", "E": "b.auto", "F": "file", "N": "11"}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q (all: %v)", k, env[k], v, env)
		}
	}
	if got := cfg.Variables["f"].ValueFrom; got != "cli.rfvars" {
		t.Errorf("f from %q", got)
	}
	if len(cfg.Files) != 6 {
		t.Errorf("variable files are kept for snippets: %d files", len(cfg.Files))
	}
}

func TestInputErrors(t *testing.T) {
	load := func(in Inputs, extra map[string]string) hcl.Diagnostics {
		srcs := map[string][]byte{"main.hcl": []byte(inputsCfg)}
		names := []string{"main.hcl"}
		for n, s := range extra {
			srcs[n] = []byte(s)
			names = append(names, n)
		}
		_, diags := LoadInputs("/cfg", names, srcs, in)
		return diags
	}
	tests := []struct {
		name    string
		in      Inputs
		files   map[string]string
		summary string
		line    int
		sev     hcl.DiagnosticSeverity
	}{
		{"undeclared in file is a warning", Inputs{}, map[string]string{"roofline.rfvars": "a = \"x\"\nzz = 1\n"}, "Value for undeclared variable", 2, hcl.DiagWarning},
		{"undeclared -var is an error", Inputs{Args: []VarArg{{Name: "zz", Value: "1"}}}, nil, "Value for undeclared variable", 0, hcl.DiagError},
		{"wrong type in file", Inputs{}, map[string]string{"x.auto.rfvars": "n = \"many\"\n"}, "Invalid value for variable", 1, hcl.DiagError},
		{"wrong type in env", Inputs{Env: []string{"ROOFLINE_VAR_n=many"}}, nil, "Invalid value for variable", 8, hcl.DiagError},
		{"function in a var file", Inputs{}, map[string]string{"roofline.rfvars": "a = upper(\"x\")\n"}, "Function calls not allowed", 1, hcl.DiagError},
		{"syntax error in json", Inputs{}, map[string]string{"roofline.rfvars.json": "{\"a\": }"}, "Missing JSON value", 1, hcl.DiagError},
		{"missing -var-file", Inputs{Args: []VarArg{{File: filepath.Join(t.TempDir(), "nope.rfvars")}}}, nil, "Cannot read a variable file", 0, hcl.DiagError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			diags := load(tt.in, tt.files)
			if len(diags) != 1 || diags[0].Summary != tt.summary || diags[0].Severity != tt.sev {
				t.Fatalf("want one %q, got %v", tt.summary, diags)
			}
			line := 0
			if diags[0].Subject != nil {
				line = diags[0].Subject.Start.Line
			}
			if line != tt.line {
				t.Errorf("line %d, want %d", line, tt.line)
			}
		})
	}
}

// TestLoadDirAutoFiles: the directory's variable files are read with it, and
// a directory with only variable files has no configuration.
func TestLoadDirAutoFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("roofline.rfvars", "a = \"from-file\"\n")
	if _, diags := LoadDir(dir); len(diags) != 1 || diags[0].Summary != "No configuration files" {
		t.Fatalf("only a variable file: %v", diags)
	}
	write("main.hcl", inputsCfg)
	write("prod.auto.rfvars.json", `{"b": "from-json"}`)
	write("other.tfvars", "a = \"terraform's\"\n")
	cfg, diags := LoadDirInputs(dir, Inputs{Env: []string{"ROOFLINE_VAR_c=from-env"}})
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	env := cfg.Engines["e"].Env
	if env["A"] != "from-file" || env["B"] != "from-json" || env["C"] != "from-env" {
		t.Errorf("env %v", env)
	}
}

func TestSensitive(t *testing.T) {
	cfg, diags, _ := loadFixture(t, "testdata/valid/variables.hcl")
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	e, s := cfg.Engines["e"], cfg.Servers["s"]
	if e.Env["HF_TOKEN"] != "hf_defaultsecret" {
		t.Fatalf("the configuration keeps values in clear: %v", e.Env)
	}
	if !e.Sensitive.Key("env", "HF_TOKEN") || e.Sensitive.Key("env", "PLAIN") {
		t.Errorf("engine sensitive paths %v", e.Sensitive.Paths())
	}
	// upper(var.hf_token) is sensitive too: marks flow through functions.
	if !s.Sensitive.Key("env", "TOKEN") || !s.Sensitive.Attr("env") {
		t.Errorf("server env paths %v", s.Sensitive.Paths())
	}
	if !s.Sensitive.Index("extra_args", 1) || s.Sensitive.Index("extra_args", 0) || s.Sensitive.Attr("port") {
		t.Errorf("server extra_args paths %v", s.Sensitive.Paths())
	}
	got := strings.Join(cfg.SensitiveValues(), ",")
	if got != "hf_defaultsecret,sk-one,sk-two" {
		t.Errorf("SensitiveValues = %s", got)
	}
	if s.Port != 8000 || s.TensorParallel != 1 || cfg.Variables["note"].Value.IsNull() != true {
		t.Errorf("values: port %d tp %d", s.Port, s.TensorParallel)
	}
}

// TestSensitiveNotInErrors: a sensitive value that fails its type is not
// repeated in the error.
func TestSensitiveNotInErrors(t *testing.T) {
	src := `variable "k" {
  type      = number
  sensitive = true
}
`
	_, diags := LoadInputs("/cfg", []string{"main.hcl", "roofline.rfvars"},
		map[string][]byte{"main.hcl": []byte(src), "roofline.rfvars": []byte(`k = "sk-live-123"`)}, Inputs{Args: []VarArg{{Name: "k", Value: "sk-cli-456"}}})
	if len(diags) != 2 {
		t.Fatalf("want two errors, got %v", diags)
	}
	for _, d := range diags {
		if strings.Contains(d.Detail, "sk-") {
			t.Errorf("secret in %q", d.Detail)
		}
	}
}

// TestPartial: validate without inputs checks what it can, and reports
// nothing about values it does not have.
func TestPartial(t *testing.T) {
	src, err := os.ReadFile("testdata/invalid/one-missing.hcl")
	if err != nil {
		t.Fatal(err)
	}
	srcs := map[string][]byte{"m.hcl": src}
	_, diags := LoadInputs("/cfg", []string{"m.hcl"}, srcs, Inputs{Partial: true})
	if len(diags) > 0 {
		t.Errorf("partial: %v", diags)
	}
	// One given, one missing: the missing one is unknown, the given one checked.
	_, diags = LoadInputs("/cfg", []string{"m.hcl"}, srcs, Inputs{Partial: true, Args: []VarArg{{Name: "gpus", Value: "[0]"}}})
	if len(diags) != 1 || diags[0].Summary != "Parallelism does not match the GPUs" {
		t.Errorf("partial with gpus: %v", diags)
	}
	// An engine whose install is unknown is not "without install".
	src2 := `variable "cmd" { type = list(string) }
engine "e" {
  kind    = "vllm"
  version = "0.16.0"
  command = var.cmd
}
`
	_, diags = LoadInputs("/cfg", []string{"e.hcl"}, map[string][]byte{"e.hcl": []byte(src2)}, Inputs{Partial: true})
	if len(diags) > 0 {
		t.Errorf("unknown command: %v", diags)
	}
}

// TestDocsListEveryFunction: docs/language.md names every function.
func TestDocsListEveryFunction(t *testing.T) {
	doc, err := os.ReadFile("../../docs/language.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range FunctionNames() {
		if !strings.Contains(string(doc), "`"+n+"`") {
			t.Errorf("docs/language.md does not list the function %s", n)
		}
	}
}

// TestFunctions: a few of Terraform's functions as users write them.
func TestFunctions(t *testing.T) {
	src := `locals {
  a = length("abc") + length([1, 2]) + length({ x = 1 })
  b = lookup({ a = "x" }, "b", "fallback")
  c = try(tonumber("x"), 7)
  d = coalesce("", "second")
  e = join(",", sort(distinct(flatten([["b", "a"], ["a"]]))))
  f = startswith("qwen3-8b", "qwen") && endswith("qwen3-8b", "8b") && strcontains("qwen3", "en3")
  g = zipmap(["a", "b"], [1, 2])["b"]
  h = join(" ", formatlist("--%s", slice(["x", "y", "z"], 1, 3)))
  i = element(keys({ k = 1, j = 2 }), 0)
  j = length(toset(["a", "a"]))
  k = regex("^([a-z]+)", "qwen3")[0]
}
engine "e" {
  kind      = "vllm"
  version   = "0.16.0"
  rehearsal = true
  env = {
    A = tostring(local.a), B = local.b, C = tostring(local.c), D = local.d, E = local.e, F = tostring(local.f),
    G = tostring(local.g), H = local.h, I = local.i, J = tostring(local.j), K = local.k
  }
}
`
	cfg, diags := Load("/cfg", []string{"f.hcl"}, map[string][]byte{"f.hcl": []byte(src)})
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	want := map[string]string{"A": "6", "B": "fallback", "C": "7", "D": "second", "E": "a,b", "F": "true", "G": "2", "H": "--y --z", "I": "j", "J": "1", "K": "qwen"}
	for k, v := range want {
		if got := cfg.Engines["e"].Env[k]; got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}

// TestDocsListEveryAttribute: docs/language.md names every block and
// attribute the loader accepts.
func TestDocsListEveryAttribute(t *testing.T) {
	doc, err := os.ReadFile("../../docs/language.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range []*hcl.BodySchema{fileSchema, rooflineSchema, engineSchema, modelSchema, serverSchema, gateSchema, benchSchema,
		lifecycleSchema, proxySchema, variableSchema, validationSchema, outputSchema, movedSchema, importSchema, preconditionSchema} {
		for _, a := range sc.Attributes {
			if !strings.Contains(string(doc), "`"+a.Name+"`") {
				t.Errorf("docs/language.md does not list the attribute %s", a.Name)
			}
		}
		for _, b := range sc.Blocks {
			if !strings.Contains(string(doc), "`"+b.Type) {
				t.Errorf("docs/language.md does not list the block %s", b.Type)
			}
		}
	}
}

// TestDocsListEveryClusterAttribute: docs/kubernetes.md (which
// docs/language.md points to for cluster blocks) shows every attribute of a
// cluster block and its toleration and model_volume blocks being set.
func TestDocsListEveryClusterAttribute(t *testing.T) {
	doc, err := os.ReadFile("../../docs/kubernetes.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range []*hcl.BodySchema{clusterSchema, tolerationSchema, modelVolumeSchema} {
		for _, a := range sc.Attributes {
			if !regexp.MustCompile(`\b` + a.Name + ` *=`).Match(doc) {
				t.Errorf("docs/kubernetes.md does not set the attribute %s", a.Name)
			}
		}
		for _, b := range sc.Blocks {
			if !strings.Contains(string(doc), b.Type+" {") {
				t.Errorf("docs/kubernetes.md does not show the block %s", b.Type)
			}
		}
	}
}

// TestSecretsUnknown: with SecretsUnknown (status, logs, show, state list)
// a sensitive variable without a value is unknown instead of an error;
// other variables are still required, and a state_dir computed from a
// secret is an error rather than the default directory.
func TestSecretsUnknown(t *testing.T) {
	const vars = `
variable "key" {
  type      = string
  sensitive = true
}
variable "name" {
  type    = string
  default = "x"
}
`
	server := `
engine "e" {
  kind      = "vllm"
  version   = "0.16.0"
  rehearsal = true
}
model "m" {
  path = "/m"
}
server "s" {
  engine  = engine.e
  model   = model.m
  gpus    = [0]
  port    = 8000
  api_key = var.key
}
`
	tests := []struct {
		name, src string
		in        Inputs
		summaries []string
	}{
		{"a secret is required by default", vars + server, Inputs{}, []string{"No value for required variable"}},
		{"unknown when only the state is read", vars + server, Inputs{SecretsUnknown: true}, nil},
		{"the secret given", vars + server, Inputs{SecretsUnknown: true, Env: []string{"ROOFLINE_VAR_key=k"}}, nil},
		{"other variables are still required", strings.Replace(vars, `default = "x"`, "", 1) + server, Inputs{SecretsUnknown: true}, []string{"No value for required variable"}},
		{"state_dir from a secret", vars + server + "roofline {\n  state_dir = var.key\n}\n", Inputs{SecretsUnknown: true}, []string{"state_dir depends on a sensitive variable"}},
		{"an engine from a secret", vars + strings.Replace(server, "rehearsal = true", "command = [\"/opt/vllm\", var.key]", 1), Inputs{SecretsUnknown: true}, []string{"Engine depends on a sensitive variable"}},
		{"a model from a secret", vars + strings.Replace(server, `path = "/m"`, "path = var.key", 1), Inputs{SecretsUnknown: true}, []string{"Model depends on a sensitive variable"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, diags := LoadInputs("/cfg", []string{"main.hcl"}, map[string][]byte{"main.hcl": []byte(tt.src)}, tt.in)
			var got []string
			for _, d := range diags {
				got = append(got, d.Summary)
			}
			if !slices.Equal(got, tt.summaries) {
				t.Fatalf("diagnostics %q, want %q", got, tt.summaries)
			}
			if tt.summaries == nil && cfg.Servers["s"] == nil {
				t.Errorf("no server s")
			}
		})
	}
}

// TestVarValueWording: a -var or ROOFLINE_VAR_ value of the wrong type is
// said as the user typed it, without HCL's internals ("(Variables not
// allowed)" for a bare word, "ROOFLINE_VAR_n n=many").
func TestVarValueWording(t *testing.T) {
	cfg := inputsCfg + `
variable "l" {
  type    = list(string)
  default = []
}
variable "on" {
  type    = bool
  default = false
}
`
	tests := []struct {
		name string
		in   Inputs
		want string
	}{
		{"a word for a number", Inputs{Args: []VarArg{{Name: "n", Value: "abc"}}}, `-var n=abc: the value for "n" does not fit its type number: "abc" is not a number.`},
		{"from the environment", Inputs{Env: []string{"ROOFLINE_VAR_n=many"}}, `ROOFLINE_VAR_n=many: the value for "n" does not fit its type number: "many" is not a number.`},
		{"a word for a bool", Inputs{Args: []VarArg{{Name: "on", Value: "yes"}}}, `-var on=yes: the value for "on" does not fit its type bool: "yes" is not true or false.`},
		{"bare words in a list", Inputs{Args: []VarArg{{Name: "l", Value: "[a, b]"}}}, `-var l=[a, b]: the value for "l" does not fit its type list(string): "[a, b]" is not a list(string) value (a word without quotes); write it as HCL, such as 8, true, [0, 1] or {a = "b"}, quoted for the shell.`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, diags := LoadInputs("/cfg", []string{"main.hcl"}, map[string][]byte{"main.hcl": []byte(cfg)}, tt.in)
			if len(diags) != 1 || diags[0].Detail != tt.want {
				t.Fatalf("got %v\nwant %s", diags, tt.want)
			}
		})
	}
	// A number and a bool still read as the user means them.
	c, diags := LoadInputs("/cfg", []string{"main.hcl"}, map[string][]byte{"main.hcl": []byte(cfg)}, Inputs{Args: []VarArg{{Name: "n", Value: "12"}, {Name: "on", Value: "true"}, {Name: "l", Value: `["a", "b"]`}}})
	if diags.HasErrors() || c.Engines["e"].Env["N"] != "12" || !c.Variables["on"].Value.True() || c.Variables["l"].Value.LengthInt() != 2 {
		t.Fatalf("valid values: %v", diags)
	}
}
