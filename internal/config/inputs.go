package config

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/roofline/roofline/internal/fsx"
	"github.com/zclconf/go-cty/cty"
)

// Variable files. roofline's names follow Terraform's (terraform.tfvars,
// *.auto.tfvars, .json twins) with its own suffix, so a Terraform folder's
// files are never read as roofline's by accident.
const (
	VarFileName     = "roofline.rfvars"
	VarFileNameJSON = "roofline.rfvars.json"
	AutoVarSuffix   = ".auto.rfvars"
	// EnvVarPrefix is the environment's way to set a variable:
	// ROOFLINE_VAR_hf_token=... sets var.hf_token (like TF_VAR_name).
	EnvVarPrefix = "ROOFLINE_VAR_"
)

// VarArg is one -var NAME=VALUE or -var-file=FILE, in command-line order:
// as in Terraform, a later one wins over an earlier one.
type VarArg struct {
	Name, Value string // -var
	File        string // -var-file (relative to the working directory)
	// Src is the file's content when the caller read it already (tests,
	// stdin); nil means read File.
	Src []byte
}

// Inputs are the values of the configuration's variable blocks from outside
// it. In Terraform's order of precedence, lowest first: the environment
// (ROOFLINE_VAR_name), roofline.rfvars, roofline.rfvars.json, *.auto.rfvars
// and *.auto.rfvars.json in lexical order (these files are read from the
// configuration directory), then -var and -var-file in command-line order.
type Inputs struct {
	Args []VarArg
	// Env is the process environment as KEY=VALUE; only ROOFLINE_VAR_*
	// entries are read. The loader itself never reads the environment.
	Env []string
	// Partial leaves a variable without a value unknown instead of reporting
	// it: validate checks a configuration "regardless of any provided
	// variables", as Terraform does.
	Partial bool
	// SecretsUnknown leaves a sensitive variable without a value unknown:
	// commands that only read the state and the logs (status, logs, show,
	// state list) need no secret. A state_dir that depends on one is an
	// error, never a silent default.
	SecretsUnknown bool
	// AsDir, when set, is the directory relative paths resolve against
	// instead of the one the files are read from: a review plan reads a
	// checkout as if it were the GPU host's copy (roofline snapshot).
	AsDir string
}

// isVarFile reports whether a file of the configuration directory is an
// auto-loaded variable file.
func isVarFile(name string) bool {
	return name == VarFileName || name == VarFileNameJSON ||
		strings.HasSuffix(name, AutoVarSuffix) || strings.HasSuffix(name, AutoVarSuffix+".json")
}

// varFileRank orders the auto-loaded files: roofline.rfvars, its JSON twin,
// then *.auto.* files by name.
func varFileRank(name string) int {
	switch name {
	case VarFileName:
		return 0
	case VarFileNameJSON:
		return 1
	}
	return 2
}

// varSource is a value given for a variable and where it came from.
type varSource struct {
	name string
	val  cty.Value // typed (from a file) or a cty.String to parse (raw)
	raw  bool      // a string from -var or the environment: parsed by the variable's type
	rng  *hcl.Range
	from string // "-var", "ROOFLINE_VAR_x", a file name
}

// collectInputs reads every value source in precedence order. Files are
// parsed into cfg.Files so diagnostics show their snippets.
func (d *decoder) collectInputs(in Inputs, autoFiles map[string][]byte) []varSource {
	var out []varSource
	env := append([]string(nil), in.Env...)
	sort.Strings(env)
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(k, EnvVarPrefix) || len(k) == len(EnvVarPrefix) {
			continue
		}
		out = append(out, varSource{name: k[len(EnvVarPrefix):], val: cty.StringVal(v), raw: true, from: k})
	}
	names := make([]string, 0, len(autoFiles))
	for n := range autoFiles {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		ri, rj := varFileRank(names[i]), varFileRank(names[j])
		if ri != rj {
			return ri < rj
		}
		return names[i] < names[j]
	})
	for _, n := range names {
		out = append(out, d.varFile(n, autoFiles[n])...)
	}
	for _, a := range in.Args {
		if a.File == "" {
			out = append(out, varSource{name: a.Name, val: cty.StringVal(a.Value), raw: true, from: "-var"})
			continue
		}
		src := a.Src
		if src == nil {
			var err error
			src, err = readBounded(a.File)
			if err != nil {
				d.diags = append(d.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot read a variable file",
					Detail: fmt.Sprintf("-var-file=%s: %v.", a.File, err)})
				continue
			}
		}
		out = append(out, d.varFile(a.File, src)...)
	}
	return out
}

// readBounded reads a -var-file with the configuration's size cap; a FIFO
// or device is refused rather than waited on.
func readBounded(path string) ([]byte, error) { return fsx.ReadFile(path, MaxFileSize) }

// varFile parses a variable file: NAME = VALUE lines in HCL, or a JSON
// object when the name ends in .json. Values are constants: no variables
// and no functions, as in Terraform's .tfvars.
func (d *decoder) varFile(name string, src []byte) []varSource {
	p := hclparse.NewParser()
	var f *hcl.File
	var ds hcl.Diagnostics
	if ds := checkNesting(name, src); ds.HasErrors() {
		d.add(ds)
		return nil
	}
	if strings.HasSuffix(name, ".json") {
		f, ds = p.ParseJSON(src, name)
	} else {
		f, ds = p.ParseHCL(src, name)
	}
	d.add(ds)
	if f == nil || ds.HasErrors() {
		return nil
	}
	d.cfg.Files[name] = f
	attrs, ds := f.Body.JustAttributes()
	d.add(ds)
	var out []varSource
	for _, a := range inSourceOrder(attrs) {
		v, ds := a.Expr.Value(nil)
		if ds.HasErrors() {
			for _, diag := range ds {
				if diag.Summary == "Variables not allowed" || diag.Summary == "Function calls not allowed" {
					diag.Detail = "A variable file holds constant values only: strings, numbers, bools, lists and objects. " + diag.Detail
				}
			}
			d.add(ds)
			continue
		}
		r := a.Expr.Range()
		out = append(out, varSource{name: a.Name, val: v, rng: &r, from: name})
	}
	return out
}
