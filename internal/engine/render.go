package engine

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine/kinds"
)

// Launch is how to start one server: the full argv and the environment the
// engine needs on top of the process's own.
type Launch struct {
	Argv []string
	Env  map[string]string
	// Attrs maps each flag the renderer wrote (extra_args aside) to the
	// server attribute it came from; "" for a flag the engine needs.
	Attrs map[string]string
}

// EnvList returns Env as sorted KEY=VALUE strings.
func (l *Launch) EnvList() []string {
	out := make([]string, 0, len(l.Env))
	for k, v := range l.Env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// airGapEnv keeps engines off the network (seed-runtime.md, Air-gap).
var airGapEnv = []string{"HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1", "VLLM_NO_USAGE_STATS=1", "DO_NOT_TRACK=1"}

// AirGapEnv returns the variables every launch gets: HF_HUB_OFFLINE=1,
// TRANSFORMERS_OFFLINE=1, VLLM_NO_USAGE_STATS=1, DO_NOT_TRACK=1.
func AirGapEnv() map[string]string {
	m := map[string]string{}
	for _, kv := range airGapEnv {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// arg is one rendered flag and where it comes from.
type arg struct {
	flag   string
	values []string
	attr   string // the server attribute that renders it; "" for a flag the engine needs
	why    string // for an engine-added flag: why roofline adds it
}

type renderer struct {
	s     *config.Server
	m     *config.Model
	e     *config.Engine
	inst  *Installed
	kind  string
	k     *Kind
	diags hcl.Diagnostics
}

// Render builds the command line and environment of server s for engine e,
// and checks every flag against the installed flag list inst (nil: render
// without checks, e.g. when the engine is not installed here).
//
// Argv is Command(e), for vLLM `serve MODEL_PATH`, then the flags in
// the seed's order: model and served name (and host, port), parallelism,
// context, memory, parsers (and chat template), quantization and KV cache,
// batching (and eager mode, prefix caching), speculation, then extra_args.
// An attribute left at its zero value renders nothing, so the engine's
// default applies; tensor and pipeline parallelism render above 1.
//
// Env is CUDA_VISIBLE_DEVICES from gpus (not for an image engine, whose
// container is given only its GPUs), the air-gap variables, then the
// engine's env, then the server's (the server wins).
func Render(s *config.Server, m *config.Model, e *config.Engine, inst *Installed) (*Launch, hcl.Diagnostics) {
	r := &renderer{s: s, m: m, e: e, inst: inst, kind: e.Kind, k: Lookup(e.Kind)}
	if r.k == nil {
		rng := e.Range("kind")
		r.errorf(&rng, "Unsupported engine kind", "Engine %q has kind %q; roofline runs %s.", e.Name, e.Kind, kinds.Or(true))
		return nil, r.diags
	}
	prefix := Command(e)
	if prefix == nil {
		rng := e.DeclRange
		r.errorf(&rng, "Engine cannot be launched", "Engine %q has no command: set command, image, or rehearsal = true.", e.Name)
		return nil, r.diags
	}
	if m == nil {
		rng := s.Range("model")
		r.errorf(&rng, "Server has no model", "Server %q needs model = model.NAME.", s.Name)
		return nil, r.diags
	}
	args := r.args()
	argv := append([]string(nil), prefix...)
	if r.k.subcommand != "" {
		argv = append(argv, r.k.subcommand, m.Path)
	}
	attrs := map[string]string{}
	for _, a := range args {
		argv = append(argv, a.flag)
		argv = append(argv, a.values...)
		attrs[a.flag] = a.attr
	}
	argv = append(argv, s.ExtraArgs...)
	if inst != nil && inst.Flags != nil {
		owned := r.checkRendered(args)
		r.checkExtra(owned)
	}
	return &Launch{Argv: argv, Env: r.env(), Attrs: attrs}, r.diags
}

func (r *renderer) errorf(rng *hcl.Range, summary, format string, a ...any) {
	r.diags = append(r.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: fmt.Sprintf(format, a...), Subject: rng})
}

func (r *renderer) warnf(rng *hcl.Range, summary, format string, a ...any) {
	r.diags = append(r.diags, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: summary, Detail: fmt.Sprintf(format, a...), Subject: rng})
}

// rangeOf points a diagnostic at a server attribute, or at the engine
// reference for flags the engine needs.
func (r *renderer) rangeOf(attr string) *hcl.Range {
	switch {
	case attr == "":
		attr = "engine"
	case attr == "served_name" && r.m.Ranges.Has("served_name"):
		rng := r.m.Range("served_name")
		return &rng
	case attr == "served_name":
		attr = "model" // the name comes from the model the server references
	}
	rng := r.s.Range(attr)
	return &rng
}

func (r *renderer) engineName() string {
	if r.inst != nil {
		return r.inst.Name()
	}
	return displayName(r.kind, r.e.Version)
}

// has reports whether the installed engine has a flag; with no probe it
// answers from the version.
func (r *renderer) has(flag string, fallback bool) bool {
	if r.inst == nil || r.inst.Flags == nil {
		return fallback
	}
	f := r.inst.Flags.Lookup(flag)
	return f != nil && !f.Deprecated
}

func (r *renderer) args() []arg {
	s, k, fl := r.s, r.k, r.k.flags
	var out []arg
	add := func(attr, flag string, values ...string) {
		out = append(out, arg{flag: flag, values: values, attr: attr})
	}
	itoa := strconv.Itoa

	// 1. Model and name (the endpoint's address with them).
	if k.modelFlag != "" {
		add("model", k.modelFlag, r.m.Path)
	}
	name := r.m.ServedName
	if name == "" {
		name = r.m.Name
	}
	add("served_name", "--served-model-name", name)
	if s.Host != "" {
		add("host", "--host", s.Host)
	}
	switch {
	case s.Port > 0:
		add("port", "--port", itoa(s.Port))
	case k.requirePort:
		r.errorf(r.rangeOf("port"), "Server needs a port", "Server %q has no port; %s would listen on %d. Set port = N.", s.Name, k.Display, k.defaultPort)
	}
	// 2. Parallelism.
	if s.TensorParallel > 1 {
		add("tensor_parallel", fl.tensorParallel, itoa(s.TensorParallel))
	}
	if s.PipelineParallel > 1 {
		add("pipeline_parallel", fl.pipelineParallel, itoa(s.PipelineParallel))
	}
	// 3. Context.
	if s.MaxModelLen > 0 {
		add("max_model_len", fl.maxModelLen, itoa(s.MaxModelLen))
	}
	if s.MaxModelLenAuto {
		if AcceptsAutoMaxModelLen(r.inst) {
			add("max_model_len", fl.maxModelLen, "auto")
		} else {
			r.errorf(r.rangeOf("max_model_len"), "max_model_len = \"auto\" not supported",
				"%s has no automatic context length: vLLM picks the longest context that fits from 0.12 on (PR 29431); SGLang never does. Set max_model_len to a number (`roofline vram` shows the longest that fits).", r.engineName())
		}
	}
	// 4. Memory.
	if s.GPUMemoryUtilization > 0 {
		add("gpu_memory_utilization", fl.memoryUtilization,
			strconv.FormatFloat(s.GPUMemoryUtilization, 'f', -1, 64))
	}
	// 5. Parsers.
	if s.ToolCallParser != "" {
		if tc := k.toolChoiceFlag; tc.flag != "" {
			out = append(out, arg{flag: tc.flag, attr: "tool_call_parser", why: tc.why})
		}
		add("tool_call_parser", "--tool-call-parser", s.ToolCallParser)
	}
	if s.ReasoningParser != "" {
		if rf := k.reasoningFlag; rf.flag != "" && r.has(rf.flag, CompareVersions(r.e.Version, rf.before) < 0) {
			out = append(out, arg{flag: rf.flag, attr: "reasoning_parser", why: rf.why})
		}
		add("reasoning_parser", "--reasoning-parser", s.ReasoningParser)
	}
	if s.ChatTemplate != "" {
		add("chat_template", "--chat-template", s.ChatTemplate)
	}
	// 6. Quantization and KV cache.
	if s.Quantization != "" {
		add("quantization", "--quantization", s.Quantization)
	}
	if s.KVCacheDtype != "" {
		if v, ok := r.kvDtype(s.KVCacheDtype); ok {
			add("kv_cache_dtype", "--kv-cache-dtype", v)
		}
	}
	// 7. Batching.
	if s.MaxNumSeqs > 0 {
		add("max_num_seqs", fl.maxNumSeqs, itoa(s.MaxNumSeqs))
	}
	out = append(out, k.batching(r)...)
	if s.EnforceEager {
		add("enforce_eager", fl.enforceEager)
	}
	if p := s.EnablePrefixCaching; p != nil {
		flag := k.prefixCachingOff
		if *p {
			flag = k.prefixCachingOn
		}
		if flag != "" { // "": the engine's default (SGLang's radix cache is on)
			add("enable_prefix_caching", flag)
		}
	}
	// 8. Speculation.
	if s.SpeculativeConfig != "" {
		out = append(out, r.speculation()...)
	}
	if mf := k.metricsFlag; mf.flag != "" {
		out = append(out, arg{flag: mf.flag, why: mf.why})
	}
	return out
}

// vllmBatching maps the batching attributes to vLLM, where the prefill
// chunk is the per-step token budget (--max-num-batched-tokens).
func vllmBatching(r *renderer) []arg {
	s := r.s
	var out []arg
	tokens, attr := s.MaxNumBatchedTokens, "max_num_batched_tokens"
	if s.ChunkedPrefillSize > 0 {
		if tokens > 0 && tokens != s.ChunkedPrefillSize {
			r.errorf(r.rangeOf("chunked_prefill_size"), "Conflicting batch settings",
				"vLLM's prefill chunk is its per-step token budget, --max-num-batched-tokens: chunked_prefill_size = %d and max_num_batched_tokens = %d cannot both hold. Set one of them.",
				s.ChunkedPrefillSize, tokens)
		}
		if tokens == 0 {
			tokens, attr = s.ChunkedPrefillSize, "chunked_prefill_size"
		}
	}
	if tokens > 0 {
		out = append(out, arg{flag: "--max-num-batched-tokens", values: []string{strconv.Itoa(tokens)}, attr: attr})
	}
	if s.ChunkedPrefillSize < 0 {
		out = append(out, arg{flag: "--no-enable-chunked-prefill", attr: "chunked_prefill_size"})
	}
	return out
}

// kvDtype translates a KV cache dtype name to the engine's spelling.
func (r *renderer) kvDtype(v string) (string, bool) {
	if r.k.kvDtype == nil {
		return v, true
	}
	return r.k.kvDtype(r, v)
}

func (r *renderer) flag(name string) *Flag {
	if r.inst == nil {
		return nil
	}
	return r.inst.Flags.Lookup(name)
}

// speculation renders speculative_config: vLLM takes the JSON as it is;
// SGLang gets its --speculative-* flags from the common keys.
func (r *renderer) speculation() []arg {
	js := r.s.SpeculativeConfig
	var cfg map[string]any
	if err := json.Unmarshal([]byte(js), &cfg); err != nil {
		r.errorf(r.rangeOf("speculative_config"), "Invalid speculative_config",
			"speculative_config must be a JSON object such as {\"method\": \"eagle3\", \"model\": \"/models/draft\", \"num_speculative_tokens\": 3}: %v.", err)
		return nil
	}
	return r.k.speculation(r, js, cfg)
}

// sglangSpeculation maps speculative_config's common keys to SGLang's
// --speculative-* flags.
func sglangSpeculation(r *renderer, js string, cfg map[string]any) []arg {
	algos := map[string]string{"eagle": "EAGLE", "eagle3": "EAGLE3", "ngram": "NGRAM", "mtp": "NEXTN", "deepseek_mtp": "NEXTN",
		"nextn": "NEXTN", "draft_model": "STANDALONE", "standalone": "STANDALONE"}
	var out []arg
	add := func(flag string, v string) {
		out = append(out, arg{flag: flag, values: []string{v}, attr: "speculative_config"})
	}
	method, _ := cfg["method"].(string)
	algo, ok := algos[strings.ToLower(method)]
	if !ok {
		r.errorf(r.rangeOf("speculative_config"), "Unsupported speculative method for SGLang",
			"speculative_config method %q has no SGLang algorithm roofline knows; use eagle, eagle3, mtp, ngram or draft_model, or pass SGLang's --speculative-* flags in extra_args.", method)
		return nil
	}
	add("--speculative-algorithm", algo)
	keys := make([]string, 0, len(cfg))
	for k := range cfg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch v := cfg[k]; k {
		case "method":
		case "model":
			s, _ := v.(string)
			add("--speculative-draft-model-path", s)
		case "num_speculative_tokens":
			n, ok := v.(float64)
			if !ok || n < 1 || n != float64(int(n)) {
				r.errorf(r.rangeOf("speculative_config"), "Invalid speculative_config", "num_speculative_tokens must be a whole number ≥ 1.")
				return nil
			}
			if algo == "NGRAM" {
				add("--speculative-num-draft-tokens", strconv.Itoa(int(n)))
				continue
			}
			// A chain of n draft steps: SGLang's documented setting for
			// top-k 1 is num_draft_tokens = num_steps + 1.
			add("--speculative-num-steps", strconv.Itoa(int(n)))
			add("--speculative-eagle-topk", "1")
			add("--speculative-num-draft-tokens", strconv.Itoa(int(n)+1))
		default:
			r.errorf(r.rangeOf("speculative_config"), "Unsupported speculative_config key for SGLang",
				"speculative_config key %q has no SGLang equivalent roofline knows (it maps method, model and num_speculative_tokens). Pass SGLang's --speculative-* flags in extra_args instead.", k)
			return nil
		}
	}
	return out
}

// env builds the launch environment and flags settings that undo what
// roofline relies on.
func (r *renderer) env() map[string]string {
	env := map[string]string{}
	// A container sees only its GPUs, numbered from 0: the docker driver
	// requests them by host index and CUDA_VISIBLE_DEVICES would mis-select.
	if len(r.s.GPUs) > 0 && r.e.Image == "" {
		ids := make([]string, len(r.s.GPUs))
		for i, g := range r.s.GPUs {
			ids[i] = strconv.Itoa(g)
		}
		env["CUDA_VISIBLE_DEVICES"] = strings.Join(ids, ",")
	}
	gpus := env["CUDA_VISIBLE_DEVICES"]
	airGap := AirGapEnv()
	for k, v := range airGap {
		env[k] = v
	}
	for _, src := range []struct {
		env  map[string]string
		rng  hcl.Range
		what string
	}{
		{r.e.Env, r.e.Range("env"), fmt.Sprintf("engine %q", r.e.Name)},
		{r.s.Env, r.s.Range("env"), fmt.Sprintf("server %q", r.s.Name)},
	} {
		keys := make([]string, 0, len(src.env))
		for k := range src.env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := src.env[k]
			rng := src.rng
			switch {
			case k == "CUDA_VISIBLE_DEVICES" && v != gpus:
				r.errorf(&rng, "CUDA_VISIBLE_DEVICES set in env",
					"The env of %s sets CUDA_VISIBLE_DEVICES=%s, but roofline places servers and counts GPU memory by gpus. Remove it and set gpus = [...] on the server instead.", src.what, v)
				continue
			case airGap[k] != "" && v != airGap[k]:
				r.warnf(&rng, "Air-gap variable overridden",
					"The env of %s sets %s=%s; roofline sets %s=%s so engines stay off the network. Remove it unless this host is meant to download.", src.what, k, v, k, airGap[k])
			}
			env[k] = v
		}
	}
	return env
}

// AcceptsAutoMaxModelLen reports an engine that takes --max-model-len auto:
// vLLM from 0.12 (PR 29431, "auto" / -1 fits the context to the KV cache).
func AcceptsAutoMaxModelLen(inst *Installed) bool {
	if inst == nil {
		return false
	}
	k := Lookup(inst.Kind)
	return k != nil && k.autoMaxModelLenFrom != "" && CompareVersions(inst.Version, k.autoMaxModelLenFrom) >= 0
}
