package config

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/roofline/roofline/internal/fsx"
)

// MaxFileSize bounds what the loader (and fmt of standard input) reads: a
// configuration is a few KiB, and a huge file is a mistake (a model path
// given as -chdir, say).
const MaxFileSize = 4 << 20

// LoadDir reads every *.hcl and *.hcl.json file of dir into one Config, decodes and validates
// it. It returns every diagnostic found, not only the first; the Config is
// returned even with errors (as complete as the input allows) so callers can
// keep checking, but it must not be acted on when diags.HasErrors().
func LoadDir(dir string) (*Config, hcl.Diagnostics) { return LoadDirInputs(dir, Inputs{}) }

// LoadDirVars is LoadDir with -var NAME=VALUE values for the configuration's
// variable blocks.
func LoadDirVars(dir string, vars map[string]string) (*Config, hcl.Diagnostics) {
	return LoadDirInputs(dir, Inputs{Args: varArgs(vars)})
}

func varArgs(vars map[string]string) []VarArg {
	var out []VarArg
	for _, n := range sortedKeys(vars) {
		out = append(out, VarArg{Name: n, Value: vars[n]})
	}
	return out
}

// LoadDirInputs is LoadDir with inputs for the variable blocks: the
// directory's auto-loaded variable files are read with the configuration.
func LoadDirInputs(dir string, in Inputs) (*Config, hcl.Diagnostics) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return &Config{Dir: abs, Files: map[string]*hcl.File{}}, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Cannot read the configuration directory",
			Detail:   fmt.Sprintf("%v. Run roofline in a directory of *.hcl files, or pass -chdir=DIR.", err),
		}}
	}
	srcs := map[string][]byte{}
	var names, skipped []string
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if tool := OtherTool(e.Name()); tool != "" {
			skipped = append(skipped, fmt.Sprintf("%s (%s)", e.Name(), tool))
			continue
		}
		if !IsConfigFile(e.Name()) && !isVarFile(e.Name()) {
			continue
		}
		path := filepath.Join(abs, e.Name())
		// Bounded, and a FIFO or device named *.hcl is refused, not waited on.
		src, err := fsx.ReadFile(path, MaxFileSize)
		if err != nil {
			return &Config{Dir: abs, Files: map[string]*hcl.File{}}, hcl.Diagnostics{{
				Severity: hcl.DiagError,
				Summary:  "Cannot read a configuration file",
				Detail:   fmt.Sprintf("%s: %v", path, err),
			}}
		}
		names = append(names, e.Name())
		srcs[e.Name()] = src
	}
	sort.Strings(names)
	configFiles := 0
	for _, n := range names {
		if !isVarFile(n) {
			configFiles++
		}
	}
	if configFiles == 0 {
		return &Config{Dir: abs, Files: map[string]*hcl.File{}}, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "No configuration files",
			Detail:   fmt.Sprintf("The directory %s has no *.hcl or *.hcl.json files. Write one (see examples/ and docs/language.md), or pass -chdir=DIR.", abs),
		}}
	}
	root := abs
	if in.AsDir != "" {
		root = in.AsDir
	}
	cfg, diags := LoadInputs(root, names, srcs, in)
	if len(skipped) > 0 {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Files of other tools skipped",
			Detail: fmt.Sprintf("roofline read none of: %s. Their names end in another tool's suffix; roofline's files are *.hcl and *.hcl.json (see docs/language.md). Rename a file if it is roofline's.", strings.Join(skipped, ", "))})
	}
	return cfg, diags
}

// Load decodes the named sources (file name → bytes) as one configuration
// rooted at dir. Relative paths in the configuration are relative to dir.
func Load(dir string, names []string, srcs map[string][]byte) (*Config, hcl.Diagnostics) {
	return LoadVars(dir, names, srcs, nil)
}

// LoadVars is Load with -var values for the variable blocks.
func LoadVars(dir string, names []string, srcs map[string][]byte, vars map[string]string) (*Config, hcl.Diagnostics) {
	return LoadInputs(dir, names, srcs, Inputs{Args: varArgs(vars)})
}

// LoadInputs is Load with inputs for the variable blocks. Names that are
// variable files (roofline.rfvars, *.auto.rfvars and their .json twins) are
// read as such.
func LoadInputs(dir string, names []string, srcs map[string][]byte, in Inputs) (*Config, hcl.Diagnostics) {
	cfg := &Config{
		Dir:      dir,
		Files:    map[string]*hcl.File{},
		Engines:  map[string]*Engine{},
		Models:   map[string]*Model{},
		Servers:  map[string]*Server{},
		Clusters: map[string]*Cluster{},
	}
	var diags hcl.Diagnostics
	p := hclparse.NewParser()
	var bodies []hcl.Body
	varFiles := map[string][]byte{}
	for _, name := range names {
		if isVarFile(name) {
			varFiles[name] = srcs[name]
			continue
		}
		// Diagnostics name files by their path as given, which the snippet
		// writer looks up in Files.
		if ds := checkNesting(name, srcs[name]); ds.HasErrors() {
			cfg.Files[name] = &hcl.File{Body: hcl.EmptyBody(), Bytes: srcs[name]}
			diags = append(diags, ds...)
			continue
		}
		var f *hcl.File
		var ds hcl.Diagnostics
		if IsJSONFile(name) {
			f, ds = p.ParseJSON(srcs[name], name)
		} else {
			f, ds = p.ParseHCL(srcs[name], name)
		}
		diags = append(diags, ds...)
		if f != nil {
			cfg.Files[name] = f
			bodies = append(bodies, f.Body)
		}
	}
	if diags.HasErrors() {
		// Syntax errors make everything after them noise.
		return cfg, diags
	}
	d := &decoder{cfg: cfg}
	var blocks []*hcl.Block
	for _, body := range bodies {
		content, ds := body.Content(fileSchema)
		d.diags = append(d.diags, ds...)
		blocks = append(blocks, content.Blocks...)
	}
	// Variables and locals first: every other block's expressions see them.
	d.ctx = d.scope(blocks, in, varFiles)
	d.decodeBlocks(blocks)
	if in.SecretsUnknown && !in.Partial && !d.diags.HasErrors() {
		d.secretsNeeded(cfg)
	}
	diags = append(diags, d.diags...)
	diags = append(diags, validate(cfg)...)
	sortDiags(diags)
	return cfg, diags
}

// secretsNeeded reports, for a command run without the values of sensitive
// variables (SecretsUnknown), what it cannot do without them: find the
// state directory, probe an engine, read a model folder. Left unknown they
// would read as "engine has no command" or "model folder : no such file".
func (d *decoder) secretsNeeded(cfg *Config) {
	const give = "give it (-var, ROOFLINE_VAR_name, roofline.rfvars)"
	if r := cfg.Roofline; r != nil && r.Unknown["state_dir"] {
		d.errorf(r.DeclRange, "state_dir depends on a sensitive variable",
			"The state directory is computed from a sensitive variable that has no value here: %s, or set state_dir without it.", give)
	}
	for _, n := range cfg.EngineNames() {
		e := cfg.Engines[n]
		for _, attr := range sortedKeys(e.Unknown) {
			d.errorf(e.DeclRange, "Engine depends on a sensitive variable",
				"The %s of engine %q is computed from a sensitive variable that has no value here: %s, or set %s without it.", attr, n, give, attr)
		}
	}
	for _, n := range cfg.ModelNames() {
		m := cfg.Models[n]
		for _, attr := range sortedKeys(m.Unknown) {
			d.errorf(m.DeclRange, "Model depends on a sensitive variable",
				"The %s of model %q is computed from a sensitive variable that has no value here: %s, or set %s without it.", attr, n, give, attr)
		}
	}
}

// sortDiags orders diagnostics by file and position so output is stable and
// reads top to bottom.
func sortDiags(diags hcl.Diagnostics) {
	sort.SliceStable(diags, func(i, j int) bool {
		a, b := diags[i].Subject, diags[j].Subject
		switch {
		case a == nil && b == nil:
			return false
		case a == nil:
			return false
		case b == nil:
			return true
		case a.Filename != b.Filename:
			return a.Filename < b.Filename
		default:
			return a.Start.Byte < b.Start.Byte
		}
	})
}
