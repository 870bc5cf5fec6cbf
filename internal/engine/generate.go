package engine

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/secret"
	"github.com/zclconf/go-cty/cty"
)

// genFlags maps an engine flag back to the server attribute it renders
// from, with the value's kind; the attributes are the kinds' flag tables'
// (TestGenFlagsAgree).
var genFlags = map[string]struct {
	attr string
	kind byte // 'n' number, 's' string, 't' true when present, 'f' false when present, '-' implied by another
}{
	"--served-model-name":        {"served_name", 's'},
	"--tensor-parallel-size":     {"tensor_parallel", 'n'},
	"--tp-size":                  {"tensor_parallel", 'n'},
	"--pipeline-parallel-size":   {"pipeline_parallel", 'n'},
	"--pp-size":                  {"pipeline_parallel", 'n'},
	"--max-model-len":            {"max_model_len", 'n'},
	"--context-length":           {"max_model_len", 'n'},
	"--gpu-memory-utilization":   {"gpu_memory_utilization", 'n'},
	"--mem-fraction-static":      {"gpu_memory_utilization", 'n'},
	"--tool-call-parser":         {"tool_call_parser", 's'},
	"--enable-auto-tool-choice":  {"", '-'},
	"--reasoning-parser":         {"reasoning_parser", 's'},
	"--enable-reasoning":         {"", '-'},
	"--chat-template":            {"chat_template", 's'},
	"--quantization":             {"quantization", 's'},
	"--kv-cache-dtype":           {"kv_cache_dtype", 's'},
	"--max-num-seqs":             {"max_num_seqs", 'n'},
	"--max-running-requests":     {"max_num_seqs", 'n'},
	"--max-num-batched-tokens":   {"max_num_batched_tokens", 'n'},
	"--chunked-prefill-size":     {"chunked_prefill_size", 'n'},
	"--enforce-eager":            {"enforce_eager", 't'},
	"--disable-cuda-graph":       {"enforce_eager", 't'},
	"--enable-prefix-caching":    {"enable_prefix_caching", 't'},
	"--no-enable-prefix-caching": {"enable_prefix_caching", 'f'},
	"--disable-radix-cache":      {"enable_prefix_caching", 'f'},
	"--speculative-config":       {"speculative_config", 's'},
	"--host":                     {"host", 's'},
	"--port":                     {"port", 'n'},
	"--model-path":               {"", '-'},
	"--model":                    {"", '-'},
	"--enable-metrics":           {"", '-'}, // roofline adds it to every SGLang server
}

// envRooflineSets are variables roofline sets on every server itself.
var envRooflineSets = map[string]bool{"HF_HUB_OFFLINE": true, "TRANSFORMERS_OFFLINE": true, "VLLM_NO_USAGE_STATS": true, "DO_NOT_TRACK": true, "CUDA_VISIBLE_DEVICES": true}

// Recognized is the engine a command line runs, as a Recognizer tells it.
type Recognized struct {
	Kind, Version string // Version "" when the command line does not say
	// Rest is the engine's own part of argv: subcommand, model, flags.
	Rest []string
	// Attrs are a generated engine block's attributes besides kind and
	// version (a kind's executable: command).
	Attrs map[string]cty.Value
	// Is tells whether an engine block of the configuration, of Kind,
	// runs this engine.
	Is func(*config.Engine) bool
}

// A Recognizer tells the engine of a command line that the kinds'
// executables and modules do not name (an engine the CLI resolves to a
// command of its own). ok false leaves argv to the kinds.
type Recognizer func(argv []string) (r Recognized, ok bool, err error)

// GenerateServer writes a server block (and the engine or model block it
// needs when the configuration has none that matches) for a running engine
// from its command line and environment: roofline import
// -generate-config-out. recognize, when not nil, is asked first. notes say
// what a person must check.
func GenerateServer(cfg *config.Config, name string, argv []string, env map[string]string, recognize Recognizer) ([]byte, []string, error) {
	var notes []string
	eng, err := splitEngineArgv(argv, recognize)
	if err != nil {
		return nil, nil, err
	}
	kind, version, rest := eng.Kind, eng.Version, eng.Rest
	f := hclwrite.NewEmptyFile()
	body := f.Body()

	modelPath := ""
	if sub := MustLookup(kind).subcommand; sub != "" && len(rest) > 0 && rest[0] == sub {
		rest = rest[1:]
		if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
			modelPath, rest = rest[0], rest[1:]
		}
	}
	pos, flags := parseFlags(rest)
	attrs := map[string]cty.Value{}
	var extra []string
	servedName := ""
	var secretFlags []string
	for _, fl := range flags {
		g, known := genFlags[fl.name]
		switch {
		case !known && secret.IsName(fl.name):
			// Written, it would leak into a file meant for review, and
			// extra_args refuses it anyway.
			secretFlags = append(secretFlags, fl.name)
		case fl.name == "--model-path" || fl.name == "--model":
			if len(fl.vals) > 0 {
				modelPath = fl.vals[0]
			}
		case fl.name == "--served-model-name":
			if len(fl.vals) > 0 {
				servedName = fl.vals[0]
			}
		case !known:
			extra = append(extra, fl.name)
			extra = append(extra, fl.vals...)
		case g.kind == '-':
		case g.kind == 't':
			attrs[g.attr] = cty.True
		case g.kind == 'f':
			attrs[g.attr] = cty.False
		case len(fl.vals) != 1:
			extra = append(extra, fl.name)
			extra = append(extra, fl.vals...)
		case g.kind == 'n':
			n, err := strconv.ParseFloat(fl.vals[0], 64)
			if err != nil {
				extra = append(extra, fl.name, fl.vals[0])
				continue
			}
			attrs[g.attr] = cty.NumberFloatVal(n)
		default:
			attrs[g.attr] = cty.StringVal(fl.vals[0])
		}
	}
	if len(pos) > 0 {
		extra = append(pos, extra...)
	}
	if modelPath == "" {
		return nil, nil, fmt.Errorf("the command line names no model folder (vLLM: serve MODEL; SGLang: --model-path): %s", strings.Join(argv, " "))
	}

	engineName := findEngine(cfg, eng)
	if engineName == "" {
		engineName = name + "_engine"
		eb := body.AppendNewBlock("engine", []string{engineName}).Body()
		eb.SetAttributeValue("kind", cty.StringVal(kind))
		if version == "" {
			version = "VERSION"
			notes = append(notes, fmt.Sprintf("engine %q: set version to the installed %s version (roofline plan checks it)", engineName, kind))
		}
		eb.SetAttributeValue("version", cty.StringVal(version))
		for _, a := range slices.Sorted(maps.Keys(eng.Attrs)) {
			eb.SetAttributeValue(a, eng.Attrs[a])
		}
		body.AppendNewline()
	}
	modelName := findModel(cfg, modelPath)
	if modelName == "" {
		modelName = name + "_model"
		mb := body.AppendNewBlock("model", []string{modelName}).Body()
		mb.SetAttributeValue("path", cty.StringVal(modelPath))
		if servedName != "" {
			mb.SetAttributeValue("served_name", cty.StringVal(servedName))
		}
		body.AppendNewline()
	} else if m := cfg.Models[modelName]; servedName != "" && m.ServedName != servedName {
		notes = append(notes, fmt.Sprintf("the process serves %q, but model.%s's served_name is %q: a difference that forces a restart", servedName, modelName, m.ServedName))
	}

	sb := body.AppendNewBlock("server", []string{name}).Body()
	sb.SetAttributeTraversal("engine", hcl.Traversal{hcl.TraverseRoot{Name: "engine"}, hcl.TraverseAttr{Name: engineName}})
	sb.SetAttributeTraversal("model", hcl.Traversal{hcl.TraverseRoot{Name: "model"}, hcl.TraverseAttr{Name: modelName}})
	gpus, err := parseGPUList(env["CUDA_VISIBLE_DEVICES"])
	if err != nil {
		notes = append(notes, "CUDA_VISIBLE_DEVICES is not set (or not a list of indices): set gpus to the GPUs the process uses")
		gpus = []cty.Value{cty.NumberIntVal(0)}
	}
	sb.SetAttributeValue("gpus", cty.TupleVal(gpus))
	order := []string{"port", "host", "tensor_parallel", "pipeline_parallel", "max_model_len", "gpu_memory_utilization", "tool_call_parser", "reasoning_parser",
		"chat_template", "quantization", "kv_cache_dtype", "max_num_seqs", "max_num_batched_tokens", "chunked_prefill_size", "enforce_eager", "enable_prefix_caching", "speculative_config"}
	for _, a := range order {
		if v, ok := attrs[a]; ok {
			sb.SetAttributeValue(a, v)
		}
	}
	if _, ok := attrs["port"]; !ok {
		notes = append(notes, "the command line sets no --port: set port to the one the process listens on")
		sb.SetAttributeValue("port", cty.NumberIntVal(8000))
	}
	if len(extra) > 0 {
		sb.SetAttributeValue("extra_args", strList(extra))
	}
	serverEnv := map[string]cty.Value{}
	var secrets []string
	engineEnv := map[string]string{}
	if e := cfg.Engines[engineName]; e != nil {
		engineEnv = e.Env
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		switch {
		case envRooflineSets[k] || engineEnv[k] == env[k] || strings.HasPrefix(k, "ROOFLINE_"):
		case !(strings.HasPrefix(k, "VLLM_") || strings.HasPrefix(k, "SGLANG_") || strings.HasPrefix(k, "NCCL_") || strings.HasPrefix(k, "HF_") ||
			strings.HasPrefix(k, "TORCH_") || strings.HasPrefix(k, "CUDA_") || strings.HasPrefix(k, "PYTORCH_")):
		case isSecretName(k):
			secrets = append(secrets, k)
		default:
			serverEnv[k] = cty.StringVal(env[k])
		}
	}
	if len(serverEnv) > 0 {
		sb.SetAttributeValue("env", cty.ObjectVal(serverEnv))
	}
	if len(secretFlags) > 0 {
		notes = append(notes, fmt.Sprintf("the process has %s on its command line: not written here; set the server's api_key from a sensitive variable, or api_key_file (roofline hands it to the engine off its command line)", strings.Join(secretFlags, ", ")))
	}
	if len(secrets) > 0 {
		sort.Strings(secrets)
		notes = append(notes, fmt.Sprintf("the process has %s set: not written here; give it through a sensitive variable or api_key_file", strings.Join(secrets, ", ")))
	}
	return hclwrite.Format(f.Bytes()), notes, nil
}

func isSecretName(k string) bool {
	l := strings.ToLower(k)
	for _, w := range []string{"key", "token", "secret", "password", "passwd", "credential"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// splitEngineArgv tells the engine from a command line: what recognize
// knows, or a kind's executable ("vllm serve") or module ("python -m
// sglang.launch_server").
func splitEngineArgv(argv []string, recognize Recognizer) (Recognized, error) {
	if recognize != nil {
		r, ok, err := recognize(argv)
		switch {
		case err != nil:
			return Recognized{}, err
		case ok && (Lookup(r.Kind) == nil || r.Is == nil):
			return Recognized{}, fmt.Errorf("%q is not an engine kind roofline knows: %s", r.Kind, strings.Join(argv, " "))
		case ok:
			return r, nil
		}
	}
	for _, k := range registry {
		if len(argv) >= 2 && slices.Contains(k.executables, filepath.Base(argv[0])) {
			return commandEngine(k, argv[:1], argv[1:]), nil
		}
	}
	for i := 0; i+1 < len(argv); i++ {
		if argv[i] == "-m" {
			for _, k := range registry {
				if slices.Contains(k.modules, argv[i+1]) {
					return commandEngine(k, argv[:i+2], argv[i+2:]), nil
				}
			}
		}
	}
	return Recognized{}, fmt.Errorf("the process is neither vLLM nor SGLang as roofline knows them: %s", strings.Join(argv, " "))
}

// commandEngine is a local install: its block is its command.
func commandEngine(k *Kind, cmd, rest []string) Recognized {
	return Recognized{Kind: k.Name, Rest: rest, Attrs: map[string]cty.Value{"command": strList(cmd)},
		Is: func(e *config.Engine) bool {
			return len(e.Command) > 0 && strings.Join(e.Command, "\x00") == strings.Join(cmd, "\x00")
		}}
}

type genFlag struct {
	name string
	vals []string
}

func parseFlags(argv []string) (pos []string, out []genFlag) {
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		if !strings.HasPrefix(a, "--") {
			if len(out) == 0 {
				pos = append(pos, a)
			} else {
				out[len(out)-1].vals = append(out[len(out)-1].vals, a)
			}
			continue
		}
		if n, v, ok := strings.Cut(a, "="); ok {
			out = append(out, genFlag{n, []string{v}})
			continue
		}
		out = append(out, genFlag{name: a})
	}
	return pos, out
}

func findEngine(cfg *config.Config, eng Recognized) string {
	for _, n := range cfg.EngineNames() {
		if e := cfg.Engines[n]; e.Kind == eng.Kind && eng.Is(e) {
			return n
		}
	}
	return ""
}

func findModel(cfg *config.Config, path string) string {
	for _, n := range cfg.ModelNames() {
		if m := cfg.Models[n]; filepath.Clean(m.Path) == filepath.Clean(path) {
			return n
		}
	}
	return ""
}

func parseGPUList(s string) ([]cty.Value, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("empty")
	}
	var out []cty.Value
	for _, p := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q", s)
		}
		out = append(out, cty.NumberIntVal(int64(n)))
	}
	return out, nil
}

func strList(ss []string) cty.Value {
	if len(ss) == 0 {
		return cty.ListValEmpty(cty.String)
	}
	vals := make([]cty.Value, len(ss))
	for i, s := range ss {
		vals[i] = cty.StringVal(s)
	}
	return cty.ListVal(vals)
}
