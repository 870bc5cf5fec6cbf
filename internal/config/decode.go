package config

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

var fileSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "roofline"},
		{Type: "engine", LabelNames: []string{"name"}},
		{Type: "model", LabelNames: []string{"name"}},
		{Type: "server", LabelNames: []string{"name"}},
		{Type: "cluster", LabelNames: []string{"name"}},
		{Type: "variable", LabelNames: []string{"name"}},
		{Type: "locals"},
		{Type: "output", LabelNames: []string{"name"}},
		{Type: "moved"},
		{Type: "import"},
		{Type: "module", LabelNames: []string{"name"}},
	},
}

var rooflineSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "state_dir"}, {Name: "inventory"}, {Name: "backend_ports"}, {Name: "required_version"}},
}

var engineSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "kind", Required: true},
		{Name: "version", Required: true},
		{Name: "command"},
		{Name: "image"},
		{Name: "rehearsal"},
		{Name: "env"},
	},
}

var modelSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "path", Required: true},
		{Name: "served_name"},
		{Name: "checksums"},
	},
}

var serverSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "engine", Required: true},
		{Name: "model", Required: true},
		{Name: "gpus"}, // required on a host: decodeServerPlacement
		{Name: "cluster"},
		{Name: "nodes"},
		{Name: "replicas"},
		{Name: "port", Required: true},
		{Name: "host"},
		{Name: "tensor_parallel"},
		{Name: "pipeline_parallel"},
		{Name: "max_model_len"},
		{Name: "gpu_memory_utilization"},
		{Name: "concurrency"},
		{Name: "tool_call_parser"},
		{Name: "reasoning_parser"},
		{Name: "chat_template"},
		{Name: "quantization"},
		{Name: "kv_cache_dtype"},
		{Name: "max_num_seqs"},
		{Name: "max_num_batched_tokens"},
		{Name: "chunked_prefill_size"},
		{Name: "enforce_eager"},
		{Name: "enable_prefix_caching"},
		{Name: "speculative_config"},
		{Name: "extra_args"},
		{Name: "env"},
		{Name: "api_key"},
		{Name: "api_key_file"},
		{Name: "env_from_file"},
		{Name: "env_from_host"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "gate"}, {Type: "lifecycle"}, {Type: "proxy"}},
}

var gateSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "health_timeout"}, {Name: "smoke_toolcall"}},
	Blocks:     []hcl.BlockHeaderSchema{{Type: "bench"}},
}

var benchSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "concurrency"},
		{Name: "request_rate"},
		{Name: "requests"},
		{Name: "input_tokens"},
		{Name: "output_tokens"},
		{Name: "min_output_tokens_per_second"},
		{Name: "min_requests_per_second"},
		{Name: "max_ttft_p99"},
		{Name: "max_tpot_p99"},
		{Name: "max_itl_p99"},
		{Name: "max_failed_requests"},
	},
}

var lifecycleSchema = &hcl.BodySchema{
	Attributes: append([]hcl.AttributeSchema{{Name: "create_before_destroy"}, {Name: "drain_timeout"}, {Name: "keep_previous"}}, lifecycleExtraSchema...),
	Blocks:     []hcl.BlockHeaderSchema{{Type: "precondition"}},
}

// decoder accumulates diagnostics while decoding blocks into cfg.
type decoder struct {
	cfg   *Config
	diags hcl.Diagnostics
	ctx   *hcl.EvalContext // functions, var.* and local.*
	// first declaration of each block address, for duplicate diagnostics
	seen map[string]hcl.Range
	// Modules (module.go): the folder of the files being decoded (module
	// sources are relative to it), the values a module block gives its
	// variables, and how deep modules nest.
	modDir       string
	moduleInputs []varSource
	depth        int
}

func (d *decoder) add(ds hcl.Diagnostics) { d.diags = append(d.diags, ds...) }

func (d *decoder) errorf(rng hcl.Range, summary, detail string, args ...any) {
	r := rng
	d.diags = append(d.diags, &hcl.Diagnostic{
		Severity: hcl.DiagError, Summary: summary, Detail: fmt.Sprintf(detail, args...), Subject: &r,
	})
}

func (d *decoder) decodeBlocks(blocks []*hcl.Block) {
	if d.seen == nil {
		d.seen = map[string]hcl.Range{}
	}
	var servers, outputs, moved, imports, modules []*hcl.Block
	engines, models := map[string][]refEntry{}, map[string][]refEntry{}
	reps := map[string]repetition{}
	// Engines and models first: servers refer to them, by expressions that
	// see their instances.
	for _, blk := range blocks {
		if !d.declare(blk) {
			continue
		}
		switch blk.Type {
		case "roofline":
			d.cfg.Roofline = d.decodeRoofline(blk)
		case "engine":
			insts, rep := d.expand(blk, d.ctx)
			reps["engine."+blk.Labels[0]] = rep
			engines[blk.Labels[0]] = []refEntry{}
			for _, in := range insts {
				e := d.decodeEngine(blk, in)
				d.cfg.Engines[e.Name] = e
				engines[blk.Labels[0]] = append(engines[blk.Labels[0]], refEntry{eachKey(in.key), cty.ObjectVal(map[string]cty.Value{
					"address": addressAttr("engine", e.Name), "name": cty.StringVal(e.Name),
					"kind": cty.StringVal(e.Kind), "version": cty.StringVal(e.Version),
				})})
			}
		case "model":
			insts, rep := d.expand(blk, d.ctx)
			reps["model."+blk.Labels[0]] = rep
			models[blk.Labels[0]] = []refEntry{}
			for _, in := range insts {
				m := d.decodeModel(blk, in)
				d.cfg.Models[m.Name] = m
				models[blk.Labels[0]] = append(models[blk.Labels[0]], refEntry{eachKey(in.key), cty.ObjectVal(map[string]cty.Value{
					"address": addressAttr("model", m.Name), "name": cty.StringVal(m.Name),
					"path": cty.StringVal(m.Path), "served_name": cty.StringVal(m.ServedName),
				})})
			}
		case "cluster":
			c := d.decodeCluster(blk)
			d.cfg.Clusters[c.Name] = c
		case "server":
			servers = append(servers, blk)
		case "output":
			outputs = append(outputs, blk)
		case "moved":
			moved = append(moved, blk)
		case "import":
			imports = append(imports, blk)
		case "module":
			modules = append(modules, blk)
		}
	}
	refCtx := d.ctx.NewChild()
	refCtx.Variables = map[string]cty.Value{
		"engine": refObjects("engine", engines, prefixed(reps, "engine.")),
		"model":  refObjects("model", models, prefixed(reps, "model.")),
	}
	saved := d.ctx
	d.ctx = refCtx
	serverRefs, serverReps := map[string][]refEntry{}, map[string]repetition{}
	for _, blk := range servers {
		insts, rep := d.expand(blk, refCtx)
		serverReps[blk.Labels[0]] = rep
		serverRefs[blk.Labels[0]] = []refEntry{}
		for _, in := range insts {
			s := d.decodeServer(blk, in)
			d.cfg.Servers[s.Name] = s
			serverRefs[blk.Labels[0]] = append(serverRefs[blk.Labels[0]], d.serverRef(s))
		}
	}
	if len(modules) > 0 {
		mods := map[string]cty.Value{}
		for _, blk := range modules {
			mods[blk.Labels[0]] = d.decodeModule(blk)
		}
		refCtx.Variables["module"] = cty.ObjectVal(mods)
	}
	d.decodeOutputs(outputs, serverRefs, serverReps)
	d.decodeMoved(moved)
	d.decodeImports(imports)
	d.ctx = saved
}

func prefixed(reps map[string]repetition, prefix string) map[string]repetition {
	out := map[string]repetition{}
	for k, v := range reps {
		if len(k) > len(prefix) && k[:len(prefix)] == prefix {
			out[k[len(prefix):]] = v
		}
	}
	return out
}

// declare checks a block's name and that it is declared once; false means
// the block is skipped (the diagnostic is recorded).
func (d *decoder) declare(blk *hcl.Block) bool {
	switch blk.Type {
	case "variable", "locals":
		return false // decoded by scope
	case "moved", "import":
		return true // any number, no name
	}
	addr := blk.Type
	if len(blk.Labels) > 0 {
		addr += "." + blk.Labels[0]
		if !validName(blk.Labels[0]) {
			d.errorf(blk.LabelRanges[0], "Invalid block name",
				"The name %q of %s block must start with a letter or underscore and contain only letters, digits, underscores and dashes.", blk.Labels[0], blk.Type)
			return false
		}
	}
	if prev, dup := d.seen[addr]; dup {
		what := fmt.Sprintf("%s %q", blk.Type, blk.Labels)
		if len(blk.Labels) > 0 {
			what = fmt.Sprintf("%s %q", blk.Type, blk.Labels[0])
		}
		d.errorf(blk.DefRange, "Duplicate "+blk.Type+" block",
			"A %s block was already declared at %s. Each %s needs a unique name; rename or remove one of them.", what, prev, blk.Type)
		return false
	}
	d.seen[addr] = blk.DefRange
	return true
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'):
		case i > 0 && (r == '-' || (r >= '0' && r <= '9')):
		default:
			return false
		}
	}
	return true
}

func (d *decoder) decodeRoofline(blk *hcl.Block) *Roofline {
	r := &Roofline{DeclRange: blk.DefRange, Ranges: Ranges{}, Sensitive: Sensitive{}, Unknown: map[string]bool{}}
	content, ds := blk.Body.Content(rooflineSchema)
	d.add(ds)
	a := attrs{d: d, m: content.Attributes, ranges: r.Ranges, sens: r.Sensitive, unknown: r.Unknown}
	d.checkRequiredVersion(r, a)
	r.StateDir = a.str("state_dir")
	r.Inventory = a.str("inventory")
	if r.Inventory != "" && !filepath.IsAbs(r.Inventory) {
		r.Inventory = filepath.Join(d.cfg.Dir, r.Inventory)
	}
	if v := a.str("backend_ports"); v != "" {
		lo, hi, err := ParsePortRange(v)
		if err != nil {
			d.errorf(r.Ranges["backend_ports"], "Invalid backend_ports", "%v. Write a range of ports such as \"20000-29999\": the engines behind roofline's proxies listen on 127.0.0.1 on ports from it.", err)
		} else {
			r.BackendPorts = [2]int{lo, hi}
		}
	}
	return r
}

// ParsePortRange reads "LO-HI" (1024 ≤ LO ≤ HI ≤ 65535).
func ParsePortRange(v string) (lo, hi int, err error) {
	a, b, ok := strings.Cut(strings.TrimSpace(v), "-")
	if !ok {
		return 0, 0, fmt.Errorf("%q is not a range LO-HI", v)
	}
	lo, err1 := strconv.Atoi(strings.TrimSpace(a))
	hi, err2 := strconv.Atoi(strings.TrimSpace(b))
	switch {
	case err1 != nil || err2 != nil:
		return 0, 0, fmt.Errorf("%q is not a range of port numbers LO-HI", v)
	case lo < 1024 || hi > 65535:
		return 0, 0, fmt.Errorf("%q reaches outside 1024-65535", v)
	case lo > hi:
		return 0, 0, fmt.Errorf("%q starts above its end", v)
	}
	return lo, hi, nil
}

func (d *decoder) decodeEngine(blk *hcl.Block, in instance) *Engine {
	defer d.within(in.ctx)()
	e := &Engine{Name: in.name, Block: blk.Labels[0], Key: in.key, DeclRange: blk.DefRange, Ranges: Ranges{}, Sensitive: Sensitive{}, Unknown: map[string]bool{}}
	content, ds := in.body.Content(engineSchema)
	d.add(ds)
	a := attrs{d: d, m: content.Attributes, ranges: e.Ranges, sens: e.Sensitive, unknown: e.Unknown}
	e.Kind = a.str("kind")
	e.Version = a.str("version")
	e.Command = a.strList("command")
	e.Image = a.str("image")
	e.Rehearsal = a.boolean("rehearsal")
	e.Env = a.strMap("env")
	return e
}

func (d *decoder) decodeModel(blk *hcl.Block, in instance) *Model {
	defer d.within(in.ctx)()
	m := &Model{Name: in.name, Block: blk.Labels[0], Key: in.key, DeclRange: blk.DefRange, Ranges: Ranges{}, Sensitive: Sensitive{}, Unknown: map[string]bool{}}
	content, ds := in.body.Content(modelSchema)
	d.add(ds)
	a := attrs{d: d, m: content.Attributes, ranges: m.Ranges, sens: m.Sensitive, unknown: m.Unknown}
	m.Path = d.absPath(a.str("path"))
	m.ServedName = a.str("served_name")
	if m.ServedName == "" && !m.Unknown["served_name"] {
		// The block name: instances of one block share it unless they set
		// their own (served_name = each.key, say).
		m.ServedName = blk.Labels[0]
	}
	m.Checksums = d.absPath(a.str("checksums"))
	return m
}

func (d *decoder) absPath(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(d.cfg.Dir, p)
}

func (d *decoder) decodeServer(blk *hcl.Block, in instance) *Server {
	defer d.within(in.ctx)()
	s := &Server{Name: in.name, Block: blk.Labels[0], Key: in.key, DeclRange: blk.DefRange, Ranges: Ranges{}, Sensitive: Sensitive{}, Unknown: map[string]bool{}, TensorParallel: 1, PipelineParallel: 1}
	content, ds := in.body.Content(serverSchema)
	d.add(ds)
	a := attrs{d: d, m: content.Attributes, ranges: s.Ranges, sens: s.Sensitive, unknown: s.Unknown}
	s.Engine = a.ref("engine", "engine")
	s.Model = a.ref("model", "model")
	s.GPUs = a.intList("gpus")
	s.Port = a.integer("port")
	s.Host = a.str("host")
	d.decodeServerPlacement(a, s)
	// The default (1) stays unless a value decoded: a wrong one is its
	// own error.
	if v := a.integer("tensor_parallel"); s.Ranges.Has("tensor_parallel") {
		s.TensorParallel = v
	}
	if v := a.integer("pipeline_parallel"); s.Ranges.Has("pipeline_parallel") {
		s.PipelineParallel = v
	}
	if a.isAuto("max_model_len") {
		s.MaxModelLenAuto = true
	} else {
		s.MaxModelLen = a.tokens("max_model_len")
	}
	s.GPUMemoryUtilization = a.float("gpu_memory_utilization")
	s.Concurrency = a.integer("concurrency")
	s.ToolCallParser = a.str("tool_call_parser")
	s.ReasoningParser = a.str("reasoning_parser")
	s.ChatTemplate = a.str("chat_template")
	s.Quantization = a.str("quantization")
	s.KVCacheDtype = a.str("kv_cache_dtype")
	s.MaxNumSeqs = a.integer("max_num_seqs")
	s.MaxNumBatchedTokens = a.tokens("max_num_batched_tokens")
	s.ChunkedPrefillSize = a.integer("chunked_prefill_size")
	s.EnforceEager = a.boolean("enforce_eager")
	if a.has("enable_prefix_caching") {
		v := a.boolean("enable_prefix_caching")
		s.EnablePrefixCaching = &v
	}
	s.SpeculativeConfig = a.jsonish("speculative_config")
	s.ExtraArgs = a.strList("extra_args")
	s.Env = a.strMap("env")
	s.APIKey = a.str("api_key")
	s.APIKeyFile = a.str("api_key_file")
	if s.APIKeyFile != "" && !filepath.IsAbs(s.APIKeyFile) {
		s.APIKeyFile = filepath.Join(d.cfg.Dir, s.APIKeyFile)
	}
	if a.has("api_key") && a.has("api_key_file") {
		d.errorf(s.Ranges["api_key_file"], "Two API keys", "Server %q sets both api_key and api_key_file; keep one.", s.Name)
	}
	if a.has("api_key") && s.APIKey == "" && !s.Unknown["api_key"] {
		d.errorf(s.Ranges["api_key"], "Empty API key", "Server %q has an empty api_key; an empty key would let every request in. Give a key, or remove the attribute.", s.Name)
	}
	s.EnvFromFile = a.strMap("env_from_file")
	s.EnvFromHost = a.strList("env_from_host")

	s.Gate = &Gate{HealthTimeout: DefaultHealthTimeout, DeclRange: blk.DefRange, Ranges: Ranges{}}
	var gateSeen, lifecycleSeen *hcl.Range
	for _, b := range content.Blocks {
		switch b.Type {
		case "proxy":
			if s.Proxy != nil {
				d.errorf(b.DefRange, "Duplicate proxy block", "%s already has a proxy block at %s; merge them into one.", s.Addr(), s.Proxy.DeclRange)
				continue
			}
			s.Proxy = d.decodeProxy(b)
		case "gate":
			if gateSeen != nil {
				d.errorf(b.DefRange, "Duplicate gate block", "%s already has a gate block at %s; merge them into one.", s.Addr(), *gateSeen)
				continue
			}
			r := b.DefRange
			gateSeen = &r
			s.Gate = d.decodeGate(b)
		case "lifecycle":
			if lifecycleSeen != nil {
				d.errorf(b.DefRange, "Duplicate lifecycle block", "%s already has a lifecycle block at %s; merge them into one.", s.Addr(), *lifecycleSeen)
				continue
			}
			r := b.DefRange
			lifecycleSeen = &r
			lc, ds := b.Body.Content(lifecycleSchema)
			d.add(ds)
			la := attrs{d: d, m: lc.Attributes, ranges: Ranges{}}
			s.Lifecycle = Lifecycle{CreateBeforeDestroy: la.boolean("create_before_destroy"), DrainTimeout: DefaultDrainTimeout, DeclRange: b.DefRange, Ranges: la.ranges}
			if kp, ok := la.duration("keep_previous"); ok {
				s.Lifecycle.KeepPrevious = kp
				if kp < 0 {
					d.errorf(la.ranges["keep_previous"], "Invalid keep_previous", "keep_previous must be a positive duration: how long the previous instance stays after a rollout, for roofline rollback.")
				}
			}
			if dt, ok := la.duration("drain_timeout"); ok {
				s.Lifecycle.DrainTimeout = dt
				if dt <= 0 {
					d.errorf(la.ranges["drain_timeout"], "Invalid drain_timeout", "drain_timeout must be a positive duration: how long a rollout waits for the old instance's requests before it stops it and cuts them.")
				}
			}
			d.decodeLifecycleExtras(s, la, lc.Blocks)
		}
	}
	return s
}

func (d *decoder) decodeGate(blk *hcl.Block) *Gate {
	g := &Gate{HealthTimeout: DefaultHealthTimeout, DeclRange: blk.DefRange, Ranges: Ranges{}}
	content, ds := blk.Body.Content(gateSchema)
	d.add(ds)
	a := attrs{d: d, m: content.Attributes, ranges: g.Ranges}
	if d, ok := a.duration("health_timeout"); ok {
		g.HealthTimeout = d
		if d <= 0 {
			a.d.errorf(a.ranges["health_timeout"], "Invalid health_timeout", "health_timeout must be a positive duration; large models take minutes to load (the seed waits 900s).")
		}
	}
	g.SmokeToolcall = a.boolean("smoke_toolcall")
	for i, b := range content.Blocks {
		if i > 0 {
			d.errorf(b.DefRange, "Duplicate bench block", "A gate has at most one bench block; the first is at %s.", content.Blocks[0].DefRange)
			continue
		}
		g.Bench = d.decodeBench(b)
	}
	return g
}

// Bench defaults, chosen to finish in well under a minute on a real server.
const (
	DefaultBenchRequests     = 100
	DefaultBenchInputTokens  = 1024
	DefaultBenchOutputTokens = 128
)

func (d *decoder) decodeBench(blk *hcl.Block) *Bench {
	b := &Bench{DeclRange: blk.DefRange, Ranges: Ranges{},
		Requests: DefaultBenchRequests, InputTokens: DefaultBenchInputTokens, OutputTokens: DefaultBenchOutputTokens}
	content, ds := blk.Body.Content(benchSchema)
	d.add(ds)
	a := attrs{d: d, m: content.Attributes, ranges: b.Ranges}
	b.Concurrency = a.integer("concurrency")
	b.RequestRate = a.float("request_rate")
	if a.has("requests") {
		b.Requests = a.integer("requests")
	}
	if a.has("input_tokens") {
		b.InputTokens = a.integer("input_tokens")
	}
	if a.has("output_tokens") {
		b.OutputTokens = a.integer("output_tokens")
	}
	if b.Concurrency == 0 && b.RequestRate == 0 {
		b.Concurrency = 1
	}
	b.MinOutputTokensPerSecond = a.float("min_output_tokens_per_second")
	b.MinRequestsPerSecond = a.float("min_requests_per_second")
	for _, f := range []struct {
		name string
		dst  *time.Duration
	}{{"max_ttft_p99", &b.MaxTTFTP99}, {"max_tpot_p99", &b.MaxTPOTP99}, {"max_itl_p99", &b.MaxITLP99}} {
		if d, ok := a.duration(f.name); ok {
			*f.dst = d
			if d <= 0 {
				a.d.errorf(a.ranges[f.name], "Threshold that can never pass", "%s must be a positive duration: no request completes in zero time.", f.name)
			}
		}
	}
	b.MaxFailedRequests = a.integer("max_failed_requests")
	return b
}

// within makes ctx the context of expressions until the returned function
// is called.
func (d *decoder) within(ctx *hcl.EvalContext) func() {
	saved := d.ctx
	d.ctx = ctx
	return func() { d.ctx = saved }
}

// attrs decodes the attributes of one block, recording each value's range,
// which values derive from sensitive variables and which are unknown.
type attrs struct {
	d       *decoder
	m       hcl.Attributes
	ranges  Ranges
	sens    Sensitive // nil: not recorded
	unknown map[string]bool
}

func (a attrs) has(name string) bool { _, ok := a.m[name]; return ok }

// invalid marks attribute name, whose value was reported as invalid, as not
// known: the checks that depend on it are skipped, as for an unknown value,
// so that one mistake is one error (tensor_parallel = "two" is not also
// "tensor_parallel must be 1 or more" on the block's first line).
func (a attrs) invalid(name string) {
	if a.unknown != nil {
		a.unknown[name] = true
	}
}

// isAuto reports attribute name set to the string "auto" (and records its
// range).
func (a attrs) isAuto(name string) bool {
	attr, ok := a.m[name]
	if !ok {
		return false
	}
	v, ds := attr.Expr.Value(a.d.ctx)
	v, _ = v.UnmarkDeep()
	if ds.HasErrors() || !v.IsKnown() || v.IsNull() || v.Type() != cty.String || v.AsString() != "auto" {
		return false
	}
	a.ranges[name] = attr.Expr.Range()
	return true
}

// value evaluates attribute name and converts it to ty. ok is false when the
// attribute is absent or invalid (a diagnostic was recorded for the latter).
func (a attrs) value(name string, ty cty.Type, what string) (cty.Value, bool) {
	attr, ok := a.m[name]
	if !ok {
		return cty.NilVal, false
	}
	// The range is recorded only for a value that decoded, so that checks
	// on the value (Ranges.Has) do not pile consequences onto a type error.
	v, ok := a.eval(name, attr)
	if !ok {
		return cty.NilVal, false
	}
	cv, err := convert.Convert(v, ty)
	if err != nil {
		a.d.errorf(attr.Expr.Range(), "Incorrect attribute value type",
			"The value of %s must be %s: %s.", name, what, err.Error())
		a.invalid(name)
		return cty.NilVal, false
	}
	a.ranges[name] = attr.Expr.Range()
	return cv, true
}

func (a attrs) str(name string) string {
	v, ok := a.value(name, cty.String, "a string")
	if !ok {
		return ""
	}
	return v.AsString()
}

func (a attrs) boolean(name string) bool {
	v, ok := a.value(name, cty.Bool, "true or false")
	if !ok {
		return false
	}
	return v.True()
}

func (a attrs) integer(name string) int {
	v, ok := a.value(name, cty.Number, "a whole number")
	if !ok {
		return 0
	}
	bf := v.AsBigFloat()
	i, acc := bf.Int64()
	if !bf.IsInt() || acc != 0 || i > math.MaxInt32 || i < math.MinInt32 {
		a.d.errorf(a.ranges[name], "Invalid number", "The value of %s must be a whole number between %d and %d.", name, math.MinInt32, math.MaxInt32)
		delete(a.ranges, name)
		a.invalid(name)
		return 0
	}
	return int(i)
}

func (a attrs) float(name string) float64 {
	v, ok := a.value(name, cty.Number, "a number")
	if !ok {
		return 0
	}
	f, _ := v.AsBigFloat().Float64()
	return f
}

// tokens reads a token count written as a number or, as vLLM's
// --max-model-len accepts, a string with a k/K/m/M suffix ("32k" = 32000,
// "32K" = 32768).
func (a attrs) tokens(name string) int {
	attr, ok := a.m[name]
	if !ok {
		return 0
	}
	v, ds := attr.Expr.Value(a.d.ctx)
	v, _ = v.UnmarkDeep()
	if !ds.HasErrors() && v.IsKnown() && !v.IsNull() && v.Type() == cty.String {
		a.ranges[name] = attr.Expr.Range()
		n, err := ParseTokens(v.AsString())
		if err != nil {
			a.d.errorf(attr.Expr.Range(), "Invalid token count", "%s. Write a number such as 32768, or \"32k\" (32000) / \"32K\" (32768).", err)
			delete(a.ranges, name)
			return 0
		}
		return n
	}
	return a.integer(name)
}

// ParseTokens parses a human-readable token count as vLLM does: a lower-case
// suffix is decimal (k = 1000), an upper-case one binary (K = 1024).
func ParseTokens(s string) (int, error) {
	s = strings.TrimSpace(s)
	mult := 1
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'k':
			mult = 1000
		case 'K':
			mult = 1024
		case 'm':
			mult = 1000 * 1000
		case 'M':
			mult = 1024 * 1024
		}
		if mult != 1 {
			s = s[:n-1]
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != f || f*float64(mult) > math.MaxInt32 || f*float64(mult) < math.MinInt32 {
		return 0, fmt.Errorf("%q is not a token count", s)
	}
	return int(f * float64(mult)), nil
}

// duration reads a Go duration string. ok is false when the attribute is
// absent or invalid (then a diagnostic was recorded).
func (a attrs) duration(name string) (dur time.Duration, ok bool) {
	v, ok := a.value(name, cty.String, `a duration string such as "90s" or "15m"`)
	if !ok {
		return 0, false
	}
	dur, err := time.ParseDuration(v.AsString())
	if err != nil {
		a.d.errorf(a.ranges[name], "Invalid duration",
			"%q is not a duration. Write a number with a unit: \"500ms\", \"90s\", \"15m\", \"1h\".", v.AsString())
		return 0, false
	}
	return dur, true
}

func (a attrs) strList(name string) []string {
	v, ok := a.value(name, cty.List(cty.String), "a list of strings")
	if !ok {
		return nil
	}
	out := []string{}
	for it := v.ElementIterator(); it.Next(); {
		_, ev := it.Element()
		if ev.IsNull() {
			a.d.errorf(a.ranges[name], "Invalid value", "The list %s must not contain null.", name)
			continue
		}
		out = append(out, ev.AsString())
	}
	return out
}

func (a attrs) intList(name string) []int {
	v, ok := a.value(name, cty.List(cty.Number), "a list of whole numbers")
	if !ok {
		return nil
	}
	out := []int{}
	for it := v.ElementIterator(); it.Next(); {
		_, ev := it.Element()
		if ev.IsNull() {
			a.d.errorf(a.ranges[name], "Invalid value", "The list %s must not contain null.", name)
			delete(a.ranges, name)
			return nil
		}
		bf := ev.AsBigFloat()
		i, acc := bf.Int64()
		if !bf.IsInt() || acc != 0 || i < 0 || i > 1<<16 {
			a.d.errorf(a.ranges[name], "Invalid GPU index", "The list %s must hold GPU indices: whole numbers from 0, as `roofline gpu` lists them.", name)
			delete(a.ranges, name)
			return nil
		}
		out = append(out, int(i))
	}
	return out
}

func (a attrs) strMap(name string) map[string]string {
	v, ok := a.value(name, cty.Map(cty.String), "a map of strings, such as { NAME = \"value\" }")
	if !ok {
		return nil
	}
	out := map[string]string{}
	for k, ev := range v.AsValueMap() {
		if ev.IsNull() {
			continue
		}
		out[k] = ev.AsString()
	}
	return out
}

// eval evaluates an attribute and strips its marks, recording the paths
// that were sensitive. ok is false for an error, null, or a value that is
// not known yet: a variable without a value was reported once already (or
// validate runs without inputs), so nothing more is said about it.
func (a attrs) eval(name string, attr *hcl.Attribute) (cty.Value, bool) {
	v, ds := attr.Expr.Value(a.d.ctx)
	a.d.add(ds)
	if ds.HasErrors() {
		return cty.NilVal, false
	}
	a.d.noteSecrets(name, v, nil)
	v, pvm := v.UnmarkDeepWithPaths()
	a.d.noteSecrets("", v, pvm)
	for _, pm := range pvm {
		if _, ok := pm.Marks[SensitiveMark]; ok && a.sens != nil {
			a.sens[name+pathString(pm.Path)] = true
		}
	}
	if !v.IsWhollyKnown() {
		if a.unknown != nil {
			a.unknown[name] = true
		}
		return cty.NilVal, false
	}
	if v.IsNull() {
		return cty.NilVal, false
	}
	return v, true
}

// jsonish accepts a JSON string or an HCL object and returns JSON text.
func (a attrs) jsonish(name string) string {
	attr, ok := a.m[name]
	if !ok {
		return ""
	}
	v, ok := a.eval(name, attr)
	if !ok {
		return ""
	}
	a.ranges[name] = attr.Expr.Range()
	if v.Type() == cty.String {
		return v.AsString()
	}
	if !v.Type().IsObjectType() && !v.Type().IsMapType() {
		a.d.errorf(attr.Expr.Range(), "Incorrect attribute value type", "The value of %s must be an object or a JSON string.", name)
		return ""
	}
	b, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		a.d.errorf(attr.Expr.Range(), "Invalid value", "%s cannot be written as JSON: %v.", name, err)
		return ""
	}
	return string(b)
}

// ref decodes a reference such as engine.vllm_016, or engine.e["a"] /
// engine.e[each.key] to an instance, and returns the instance name.
func (a attrs) ref(name, kind string) string {
	attr, ok := a.m[name]
	if !ok {
		return ""
	}
	bad := func() string {
		a.d.errorf(attr.Expr.Range(), "Invalid reference",
			"The value of %s must be a reference to %s %s block, such as %s.NAME (without quotes), or %s.NAME[KEY] for one of a repeated block's instances.", name, article(kind), kind, kind, kind)
		return ""
	}
	trav, ds := hcl.AbsTraversalForExpr(attr.Expr)
	if !ds.HasErrors() && len(trav) == 2 && trav.RootName() == kind {
		// The plain form: checked against the declared blocks by validate,
		// with a suggestion.
		step, ok := trav[1].(hcl.TraverseAttr)
		if !ok {
			return bad()
		}
		a.ranges[name] = attr.Expr.Range()
		if obj := lookupRef(a.d.ctx, kind, step.Name); obj != cty.NilVal && !(obj.Type().IsObjectType() && obj.Type().HasAttribute("address")) {
			a.d.errorf(attr.Expr.Range(), "Reference to a repeated block",
				"%s.%s has for_each or count: refer to one instance, such as %s.%s[each.key] or %s.%s[0].", kind, step.Name, kind, step.Name, kind, step.Name)
			delete(a.ranges, name)
			return ""
		}
		return step.Name
	}
	var v cty.Value
	if !ds.HasErrors() {
		// A traversal with an index (JSON: "engine.e[\"a\"]").
		if trav.RootName() != kind {
			return bad()
		}
		var diags hcl.Diagnostics
		v, diags = trav.TraverseAbs(a.d.ctx)
		a.d.add(diags)
		if diags.HasErrors() {
			return ""
		}
	} else {
		for _, t := range attr.Expr.Variables() {
			if t.RootName() != kind && t.RootName() != "each" && t.RootName() != "count" && t.RootName() != "var" && t.RootName() != "local" {
				return bad()
			}
		}
		var diags hcl.Diagnostics
		v, diags = attr.Expr.Value(a.d.ctx)
		a.d.add(diags)
		if diags.HasErrors() {
			return ""
		}
	}
	v, _ = v.UnmarkDeep()
	if !v.IsWhollyKnown() {
		return ""
	}
	if v.IsNull() || !v.Type().IsObjectType() || !v.Type().HasAttribute("address") {
		return bad()
	}
	addr := v.GetAttr("address").AsString()
	if len(addr) <= len(kind)+1 || addr[:len(kind)+1] != kind+"." {
		return bad()
	}
	a.ranges[name] = attr.Expr.Range()
	return addr[len(kind)+1:]
}

// lookupRef finds the reference object of kind.name in ctx or its parents;
// NilVal when there is none.
func lookupRef(ctx *hcl.EvalContext, kind, name string) cty.Value {
	for c := ctx; c != nil; c = c.Parent() {
		v, ok := c.Variables[kind]
		if !ok {
			continue
		}
		if v.Type().IsObjectType() && v.Type().HasAttribute(name) {
			return v.GetAttr(name)
		}
		return cty.NilVal
	}
	return cty.NilVal
}

// article is "an" before a vowel sound, "a" otherwise ("an engine block").
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}
