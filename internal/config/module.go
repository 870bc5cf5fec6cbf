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
	"github.com/zclconf/go-cty/cty"
)

// maxModuleDepth bounds how deeply modules call modules (a cycle of
// sources would otherwise never end).
const maxModuleDepth = 8

// decodeModule loads a local module: module "x" { source = "./modules/qwen3"
// NAME = VALUE ... }. The module's variables take the block's attributes;
// its engines, models and servers join the configuration as
// module.x.engine.NAME, module.x.model.NAME and module.x.server.NAME; its
// outputs are module.x.OUTPUT in the caller's expressions. Relative paths
// inside the module (model folders) are relative to the root configuration,
// as in Terraform. It returns the module's outputs.
func (d *decoder) decodeModule(blk *hcl.Block) cty.Value {
	name := blk.Labels[0]
	empty := cty.EmptyObjectVal
	attrs, ds := blk.Body.JustAttributes()
	d.add(ds)
	if ds.HasErrors() {
		return empty
	}
	srcAttr, ok := attrs["source"]
	if !ok {
		d.errorf(blk.DefRange, "Missing required argument", "The argument \"source\" is required: the module's folder, such as \"./modules/qwen3\".")
		return empty
	}
	for _, meta := range []string{"for_each", "count", "depends_on", "version", "providers"} {
		if a, ok := attrs[meta]; ok {
			d.errorf(a.NameRange, "Unsupported argument", "%s is not supported on module blocks; repeat the servers inside the module instead.", meta)
			return empty
		}
	}
	srcVal, ds := srcAttr.Expr.Value(nil)
	if ds.HasErrors() || srcVal.Type() != cty.String || srcVal.IsNull() {
		d.errorf(srcAttr.Expr.Range(), "Invalid module source", "source must be a literal string, a local folder such as \"./modules/qwen3\".")
		return empty
	}
	src := srcVal.AsString()
	if !strings.HasPrefix(src, "./") && !strings.HasPrefix(src, "../") {
		d.errorf(srcAttr.Expr.Range(), "Invalid module source",
			"%q is not a local folder: roofline loads modules from folders only (\"./modules/qwen3\"), never from a registry or the network.", src)
		return empty
	}
	if d.depth >= maxModuleDepth {
		d.errorf(srcAttr.Expr.Range(), "Modules nested too deeply", "Modules call modules more than %d deep here; is there a cycle of sources?", maxModuleDepth)
		return empty
	}
	modDir := d.modDir
	if modDir == "" {
		modDir = d.cfg.Dir
	}
	dir := filepath.Join(modDir, src)
	rel, err := filepath.Rel(d.cfg.Dir, dir)
	if err != nil {
		rel = dir
	}
	files, err := readModuleFiles(dir)
	if err != nil || len(files) == 0 {
		if err == nil {
			err = fmt.Errorf("it has no *.hcl or *.hcl.json files")
		}
		d.errorf(srcAttr.Expr.Range(), "Cannot load the module", "Module %q from %s: %v.", name, dir, err)
		return empty
	}

	// Parse the module's files; diagnostics name them by their path from
	// the root configuration.
	p := hclparse.NewParser()
	var blocks []*hcl.Block
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fname := filepath.Join(rel, n)
		if ds := checkNesting(fname, files[n]); ds.HasErrors() {
			d.add(ds)
			return empty
		}
		var f *hcl.File
		if IsJSONFile(n) {
			f, ds = p.ParseJSON(files[n], fname)
		} else {
			f, ds = p.ParseHCL(files[n], fname)
		}
		d.add(ds)
		if f == nil || ds.HasErrors() {
			return empty
		}
		d.cfg.Files[fname] = f
		content, ds := f.Body.Content(fileSchema)
		d.add(ds)
		for _, b := range content.Blocks {
			if b.Type == "roofline" {
				d.errorf(b.DefRange, "Settings block in a module", "The roofline block belongs to the root configuration; a module declares variables, engines, models, servers and outputs.")
				continue
			}
			if b.Type == "import" || b.Type == "moved" {
				d.errorf(b.DefRange, "Unsupported block in a module", "%s blocks belong to the root configuration; address the module's servers there (module.%s.server.NAME).", b.Type, name)
				continue
			}
			blocks = append(blocks, b)
		}
	}

	// The module's variables: the block's other attributes, evaluated here.
	var inputs []varSource
	for _, an := range sortedKeys(attrs) {
		if an == "source" {
			continue
		}
		a := attrs[an]
		v, ds := a.Expr.Value(d.ctx)
		d.add(ds)
		if ds.HasErrors() {
			continue
		}
		r := a.Expr.Range()
		inputs = append(inputs, varSource{name: an, val: v, rng: &r, from: "module " + name})
	}
	child := &Config{Dir: d.cfg.Dir, Files: d.cfg.Files, Engines: map[string]*Engine{}, Models: map[string]*Model{},
		Servers: map[string]*Server{}, Clusters: map[string]*Cluster{}}
	cd := &decoder{cfg: child, modDir: dir, moduleInputs: inputs, depth: d.depth + 1}
	cd.ctx = cd.scope(blocks, Inputs{}, nil)
	cd.decodeBlocks(blocks)
	d.add(cd.diags)

	// Join the module's blocks, renamed.
	prefix := "module." + name + "."
	rename := func(kind, n string) string {
		if strings.HasPrefix(n, "module.") {
			return prefix + n
		}
		return prefix + kind + "." + n
	}
	for n, e := range child.Engines {
		e.Name = rename("engine", n)
		d.cfg.Engines[e.Name] = e
	}
	for n, m := range child.Models {
		m.Name = rename("model", n)
		d.cfg.Models[m.Name] = m
	}
	for n, s := range child.Servers {
		s.Name = rename("server", n)
		if s.Engine != "" {
			s.Engine = rename("engine", s.Engine)
		}
		if s.Model != "" {
			s.Model = rename("model", s.Model)
		}
		if s.Cluster != "" {
			s.Cluster = rename("cluster", s.Cluster)
		}
		for i, t := range s.Lifecycle.ReplaceTriggeredBy {
			if t.Server != "" {
				s.Lifecycle.ReplaceTriggeredBy[i].Server = rename("server", t.Server)
			}
		}
		d.cfg.Servers[s.Name] = s
	}
	for n, c := range child.Clusters {
		c.Name = rename("cluster", n)
		d.cfg.Clusters[c.Name] = c
	}
	outs := map[string]cty.Value{}
	for n, o := range child.Outputs {
		if o.Value == cty.NilVal {
			outs[n] = cty.DynamicVal
			continue
		}
		v := o.Value
		if o.Sensitive {
			v = v.Mark(SensitiveMark)
		}
		outs[n] = v
	}
	return cty.ObjectVal(outs)
}

// readModuleFiles reads a module folder's configuration files.
func readModuleFiles(dir string) (map[string][]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, e := range entries {
		if e.IsDir() || !IsConfigFile(e.Name()) {
			continue
		}
		b, err := fsx.ReadFile(filepath.Join(dir, e.Name()), MaxFileSize)
		if err != nil {
			return nil, err
		}
		out[e.Name()] = b
	}
	return out, nil
}
