package rehearsal

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/roofline/roofline/internal/fsx"
	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/model"
	"github.com/roofline/roofline/internal/vram"
	"github.com/roofline/roofline/internal/vram/fromodel"
)

// engineRun is one start of the emulated engine: the parsed command line,
// the knobs, the model and GPUs it was given, and the memory plan. Both the
// API server process and its worker child build it from the same argv and
// environment, so they agree without talking.
type engineRun struct {
	kind, version string
	spec          *argSpec
	args          *Args
	k             knobs
	lookup        func(string) (string, bool)

	modelPath       string
	served          []string
	host            string
	port            int
	tp, pp          int
	maxLen          int  // the context length served
	maxLenGiven     bool // --max-model-len / --context-length given
	maxLenAuto      bool // --max-model-len auto / -1
	util            float64
	kvDtype         string
	blockSize       int
	maxNumSeqs      int
	mbt             int
	eager           bool
	toolParser      string
	reasoningParser string
	autoTool        bool
	enableReasoning bool
	apiKeys         []string
	metrics         bool
	v0              bool // vLLM 0.8.5 with VLLM_USE_V1=0

	info    *model.Info
	gpus    []gpu.GPU // the visible GPUs, in CUDA order
	cudaDrv string    // the driver's CUDA version ("12.4"); "" unknown
	res     *vram.Result
	failure failure // what stops the start; zero when it starts
}

// failure is a failed start: the class and where it happens.
type failure struct {
	class  string
	detail string // a fact for the error text (a file name, a count)
}

func (e *engineRun) getenv(name string) string {
	v, _ := e.lookup(name)
	return v
}

// resolve reads the settings from the parsed flags.
func (e *engineRun) resolve() {
	a := e.args
	if e.kind == KindVLLM {
		e.modelPath = a.Str("model", "")
		if len(a.Pos) > 0 {
			e.modelPath = a.Pos[0]
		}
		if e.modelPath == "" { // vLLM's default --model
			e.modelPath = "Qwen/Qwen3-0.6B"
			if versionLess(e.version, "0.10") {
				e.modelPath = "facebook/opt-125m"
			}
		}
		e.served = a.Strings("served_model_name")
		e.port = a.Int("port", 8000)
		e.host = a.Str("host", "")
		e.tp = a.Int("tensor_parallel_size", 1)
		e.pp = a.Int("pipeline_parallel_size", 1)
		e.maxLen = a.Int("max_model_len", 0)
		if v := a.Str("max_model_len", ""); v == "auto" || e.maxLen < 0 {
			// -1 / auto (vLLM >= 0.12): the longest context the KV cache
			// holds, up to the model's maximum.
			e.maxLen, e.maxLenAuto = 0, true
		}
		e.util = a.Float("gpu_memory_utilization", 0.9)
		e.blockSize = a.Int("block_size", 0)
		e.maxNumSeqs = a.Int("max_num_seqs", 0)
		e.mbt = a.Int("max_num_batched_tokens", 0)
		e.eager = a.Bool("enforce_eager")
		e.autoTool = a.Bool("enable_auto_tool_choice")
		e.enableReasoning = a.Bool("enable_reasoning")
		e.apiKeys = a.Strings("api_key")
		if k := e.getenv("VLLM_API_KEY"); len(e.apiKeys) == 0 && k != "" {
			e.apiKeys = []string{k}
		}
		e.metrics = true // /metrics is always mounted; --disable-log-stats empties it
		e.v0 = versionLess(e.version, "0.10") && e.getenv("VLLM_USE_V1") == "0"
	} else {
		e.modelPath = a.Str("model_path", "")
		if s := a.Str("served_model_name", ""); s != "" {
			e.served = []string{s}
		}
		e.port = a.Int("port", 30000)
		e.host = a.Str("host", "127.0.0.1")
		e.tp = a.Int("tensor_parallel_size", 1)
		e.pp = a.Int("pipeline_parallel_size", 1)
		e.maxLen = a.Int("context_length", 0)
		e.util = a.Float("mem_fraction_static", 0)
		e.blockSize = a.Int("page_size", 0)
		e.maxNumSeqs = a.Int("max_running_requests", 0)
		e.mbt = a.Int("chunked_prefill_size", 0)
		e.eager = a.Bool("disable_cuda_graph")
		e.autoTool = a.Has("tool_call_parser")
		if k := a.Str("api_key", ""); k != "" {
			e.apiKeys = []string{k}
		}
		e.metrics = a.Bool("enable_metrics")
	}
	if len(e.served) == 0 {
		e.served = []string{e.modelPath}
	}
	e.maxLenGiven = e.maxLen > 0
	e.kvDtype = a.Str("kv_cache_dtype", "auto")
	e.toolParser = a.Str("tool_call_parser", "")
	e.reasoningParser = a.Str("reasoning_parser", "")
	e.tp, e.pp = max(e.tp, 1), max(e.pp, 1)
}

// postParseError is the check the engine runs right after parsing, as
// Python raises it (exit status 1 with a traceback), or "".
func (e *engineRun) postParseError() (exc string, frames []string) {
	if e.kind != KindVLLM {
		return "", nil
	}
	frames = []string{
		"/usr/local/bin/vllm:10:<module>:sys.exit(main())",
		"/usr/local/lib/python3.12/site-packages/vllm/entrypoints/cli/main.py:73:main:cmd.validate(args)",
		"/usr/local/lib/python3.12/site-packages/vllm/entrypoints/cli/serve.py:104:validate:validate_parsed_serve_args(args)",
		"/usr/local/lib/python3.12/site-packages/vllm/entrypoints/openai/cli_args.py:306:validate_parsed_serve_args:raise TypeError(",
	}
	switch {
	case e.autoTool && e.toolParser == "":
		return "TypeError: Error: --enable-auto-tool-choice requires --tool-call-parser", frames
	case versionLess(e.version, "0.10") && e.enableReasoning && e.reasoningParser == "":
		return "TypeError: Error: --enable-reasoning requires --reasoning-parser", frames
	}
	return "", nil
}

// parserError is vLLM's start-up check of the parser names (a KeyError
// before the server binds its port), or "".
func (e *engineRun) parserError() string {
	if e.kind != KindVLLM {
		return "" // SGLang's parser names are argparse choices
	}
	if e.autoTool && e.toolParser != "" {
		if valid := e.registry("--tool-call-parser"); len(valid) > 0 && !contains(valid, e.toolParser) {
			return fmt.Sprintf("KeyError: 'invalid tool call parser: %s (chose from { %s })'", e.toolParser, strings.Join(valid, ","))
		}
	}
	if e.reasoningParser != "" {
		if valid := e.registry("--reasoning-parser"); len(valid) > 0 && !contains(valid, e.reasoningParser) {
			return fmt.Sprintf("KeyError: 'invalid reasoning parser: %s (chose from { %s })'", e.reasoningParser, strings.Join(valid, ","))
		}
	}
	return ""
}

// registry is the list of names a vLLM parser flag accepts (from its help).
func (e *engineRun) registry(flag string) []string {
	f := e.spec.flags.Lookup(flag)
	if f == nil {
		return nil
	}
	if len(f.Choices) > 0 {
		return f.Choices
	}
	return f.Suggested
}

// defaultInventory is 8 idle "NVIDIA H100 80GB HBM3".
func defaultInventory() []gpu.GPU {
	h100, _ := gpu.Preset("H100")
	out := make([]gpu.GPU, 8)
	for i := range out {
		g := h100
		g.Index = i
		g.UUID = fmt.Sprintf("GPU-00000000-0000-4000-8000-%012d", i)
		g.PCIBusID = fmt.Sprintf("00000000:%02X:00.0", 0x18+i)
		out[i] = g
	}
	return out
}

// readGPUs returns the GPUs the engine sees: the inventory filtered and
// ordered by CUDA_VISIBLE_DEVICES (indices or UUIDs; CUDA stops at the first
// entry it cannot resolve).
func (e *engineRun) readGPUs() error {
	all := defaultInventory()
	if e.k.inventory != "" {
		snap, err := gpu.ReadSnapshotFile(e.k.inventory)
		if err != nil {
			return fmt.Errorf("%s=%s: %v", EnvInventory, e.k.inventory, err)
		}
		all = snap.GPUs
		e.cudaDrv = snap.CUDADriverVersion
	}
	cvd, set := e.lookup("CUDA_VISIBLE_DEVICES")
	if !set {
		e.gpus = all
		return nil
	}
	e.gpus = nil
	for _, item := range strings.Split(cvd, ",") {
		item = strings.TrimSpace(item)
		var found *gpu.GPU
		if n, err := strconv.Atoi(item); err == nil {
			for i := range all {
				if all[i].Index == n {
					found = &all[i]
				}
			}
		} else if item != "" {
			for i := range all {
				if strings.HasPrefix(all[i].UUID, item) {
					found = &all[i]
				}
			}
		}
		if found == nil {
			break
		}
		e.gpus = append(e.gpus, *found)
	}
	return nil
}

// supportedArchitectures are the model classes the rehearsal accepts, as the
// engines' model registries do (a subset of both).
var supportedArchitectures = []string{
	"LlamaForCausalLM", "MistralForCausalLM", "MixtralForCausalLM", "Qwen2ForCausalLM",
	"Qwen2MoeForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM", "DeepseekV2ForCausalLM",
	"DeepseekV3ForCausalLM", "Gemma2ForCausalLM", "Gemma3ForCausalLM", "Gemma3ForConditionalGeneration",
	"Phi3ForCausalLM", "GptOssForCausalLM", "GraniteForCausalLM", "Glm4MoeForCausalLM",
	"Qwen2_5_VLForConditionalGeneration", "MllamaForConditionalGeneration", "Llama4ForConditionalGeneration",
}

// inspect reads the model folder and records the first missing-file or
// architecture problem as the failure.
func (e *engineRun) inspect() {
	info, err := model.Inspect(e.modelPath)
	if err != nil {
		e.failure = failure{class: ClassMissingFiles, detail: "config.json"}
		return
	}
	e.info = info
	for _, p := range info.Problems {
		if p.Severity != model.SeverityError {
			continue
		}
		switch {
		case p.File == "config.json":
			e.failure = failure{class: ClassMissingFiles, detail: "config.json"}
		case p.File == "tokenizer.json" || p.File == "tokenizer_config.json":
			e.failure = failure{class: ClassMissingFiles, detail: "tokenizer"}
		case strings.HasPrefix(p.Summary, "no safetensors weights"):
			e.failure = failure{class: ClassMissingFiles, detail: "weights"}
		case strings.HasSuffix(p.File, ".safetensors") && strings.Contains(p.Summary, "missing"):
			e.failure = failure{class: ClassMissingFiles, detail: "shard:" + p.File}
		case strings.HasSuffix(p.File, ".safetensors"):
			e.failure = failure{class: ClassMissingFiles, detail: "header:" + p.File}
		default:
			continue // pickles, index mismatches: the engines load what they find
		}
		return
	}
	if info.Config == nil {
		e.failure = failure{class: ClassMissingFiles, detail: "config.json"}
		return
	}
	ok := false
	for _, a := range info.Config.Architectures {
		ok = ok || contains(supportedArchitectures, a)
	}
	if !ok {
		e.failure = failure{class: ClassUnsupportedArch}
	}
}

// footprint sizes the start with roofline's memory model, as the engine will.
func (e *engineRun) footprint() error {
	spec, err := fromodel.Spec(e.info)
	if err != nil {
		return err
	}
	g := e.gpus[0]
	in := vram.Input{Engine: e.kind, EngineVersion: e.version, Model: spec,
		GPUMemoryBytes: g.CUDATotalBytes(), NVMLTotalBytes: g.MemoryTotalBytes, GPUName: g.Name,
		ComputeCapability: g.ComputeCapability, TP: e.tp, PP: e.pp, MaxModelLen: e.maxLen,
		GPUMemoryUtilization: e.util, KVCacheDtype: e.kvDtype, BlockSize: e.blockSize,
		MaxNumSeqs: e.maxNumSeqs, MaxNumBatchedTokens: e.mbt, EnforceEager: e.eager}
	if e.kind == KindVLLM && e.v0 {
		in.EngineVersion = "0.7.3" // the V0 engine's arithmetic
	}
	if e.kind == KindVLLM {
		in.KVCacheMemoryBytes = uint64(max(e.args.Int("kv_cache_memory_bytes", 0), 0))
	}
	for i := 0; i < e.tp*e.pp && i < len(e.gpus); i++ {
		in.FreeMemoryBytes = append(in.FreeMemoryBytes, e.gpus[i].MemoryFreeBytes)
	}
	if e.maxLen > 0 && spec.MaxModelLen > 0 && e.maxLen > spec.MaxModelLen {
		// The engine refuses this before sizing (or allows it with its
		// override variable); size at the requested length either way.
		spec.MaxModelLen = e.maxLen
		in.Model = spec
	}
	res, err := vram.Estimate(in)
	if err != nil {
		return err
	}
	if e.k.skew.set() && e.kind == KindVLLM {
		// The engine's own measurement deviates from roofline's model: size
		// again with the skewed activation and non-torch memory as overrides,
		// as the engine would measure them.
		for _, r := range res.Ranks {
			in.Overrides.ActivationBytes = append(in.Overrides.ActivationBytes, e.k.skew.activation.apply(r.ActivationBytes))
			in.Overrides.NonTorchBytes = append(in.Overrides.NonTorchBytes, e.k.skew.nonTorch.apply(r.NonTorchBytes))
		}
		if res, err = vram.Estimate(in); err != nil {
			return err
		}
	}
	if e.maxLenAuto && e.kind == KindVLLM && res.MaxModelLenFit > 0 && res.MaxModelLenFit < int64(res.MaxModelLen) {
		// vLLM's auto-fit: a binary search over its own (measured) pool for
		// the longest context one request fits in (PR 29431).
		in.MaxModelLen = int(res.MaxModelLenFit)
		if res, err = vram.Estimate(in); err != nil {
			return err
		}
	}
	e.res = res
	if e.maxLen == 0 {
		e.maxLen = res.MaxModelLen
	}
	if e.maxNumSeqs == 0 {
		e.maxNumSeqs = res.MaxNumSeqs
	}
	if e.maxNumSeqs == 0 { // SGLang derives it from the pool
		e.maxNumSeqs = sglangMaxRunning(res.KVTokens, e.maxLen)
	}
	if e.blockSize == 0 {
		e.blockSize = res.BlockSize
	}
	if e.util == 0 {
		e.util = res.GPUMemoryUtilization
	}
	if e.mbt == 0 {
		e.mbt = res.MaxNumBatchedTokens
	}
	return nil
}

// sglangMaxRunning is SGLang's default max_running_requests.
func sglangMaxRunning(tokens int64, ctx int) int {
	est := 4096
	if ctx > 0 {
		est = min(max(int(tokens/int64(ctx)*512), 2048), 4096)
	}
	return max(min(est, int(tokens/2)), 1)
}

// modelLimit is the model's own maximum context (0 = unknown).
func (e *engineRun) modelLimit() int {
	if e.info == nil || e.info.Config == nil {
		return 0
	}
	return fromodel.DerivedMaxLen(e.info.Config)
}

// decide picks what stops the start, in the order the engine checks:
// files and architecture, the context limit, the GPUs, then memory.
func (e *engineRun) decide() error {
	if e.failure.class != "" {
		return nil
	}
	if lim := e.modelLimit(); e.maxLenGiven && lim > 0 && e.maxLen > lim {
		allow := "VLLM_ALLOW_LONG_MAX_MODEL_LEN"
		if e.kind == KindSGLang {
			allow = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"
		}
		if v := e.getenv(allow); v != "1" && strings.ToLower(v) != "true" {
			e.failure = failure{class: ClassBadFlag, detail: "max_model_len"}
			return nil
		}
	}
	if len(e.gpus) == 0 {
		e.failure = failure{class: "no_gpu"}
		return nil
	}
	// The engines' PyTorch wheels are built for CUDA 12: a driver whose
	// CUDA is older cannot run them.
	if major, _, ok := strings.Cut(e.cudaDrv, "."); ok {
		if n, err := strconv.Atoi(major); err == nil && n < 12 {
			e.failure = failure{class: ClassDriverMismatch, detail: e.cudaDrv}
			return nil
		}
	}
	if e.tp*e.pp > len(e.gpus) {
		e.failure = failure{class: "too_few_gpus"}
		return nil
	}
	if h := e.info.Config.NumAttentionHeads; h%e.tp != 0 {
		e.failure = failure{class: "tp_heads"}
		return nil
	}
	if err := e.footprint(); err != nil {
		return err
	}
	r := e.res
	for i, k := range r.Ranks {
		if k.WeightsBytes > k.FreeBytes {
			e.failure = failure{class: ClassOOMWeights, detail: strconv.Itoa(i)}
			return nil
		}
	}
	for _, reason := range r.Reasons {
		switch {
		case strings.Contains(reason, "Free memory on device"), strings.Contains(reason, "memory capacity is unbalanced"):
			e.failure = failure{class: ClassFreeMemBelowUtil}
		case strings.Contains(reason, "No available memory for the cache blocks"):
			e.failure = failure{class: ClassNoKVMemory}
		case strings.Contains(reason, "To serve at least one request"), strings.Contains(reason, "max seq len"):
			e.failure = failure{class: ClassKVTooSmall}
		case strings.Contains(reason, "Not enough memory"):
			e.failure = failure{class: ClassSGLangMemFraction}
		default:
			continue
		}
		return nil
	}
	return nil
}

// prepare builds the run from parsed flags and the environment.
func prepare(kind, version string, spec *argSpec, args *Args, lookup func(string) (string, bool)) (*engineRun, error) {
	e := &engineRun{kind: kind, version: version, spec: spec, args: args, lookup: lookup}
	k, err := readKnobs(kind, e.getenv)
	if err != nil {
		return nil, err
	}
	e.k = k
	e.resolve()
	if err := e.readGPUs(); err != nil {
		return nil, err
	}
	if e.k.fail.class == ClassMissingFiles || e.k.fail.class == ClassUnsupportedArch {
		e.failure = failure{class: e.k.fail.class, detail: "config.json"}
	} else {
		e.inspect()
	}
	if e.failure.class == "" {
		if err := e.decide(); err != nil {
			return nil, err
		}
	}
	if c := e.k.fail.class; c != "" && e.failure.class == "" {
		e.failure = failure{class: c, detail: "injected"}
	}
	if e.maxLen == 0 {
		e.maxLen = max(e.modelLimit(), 2048)
	}
	return e, nil
}

// serveOptions are the HTTP settings of this run.
func (e *engineRun) serveOptions() ServeOptions {
	o := ServeOptions{Kind: e.kind, Version: e.version, ServedNames: e.served, ModelPath: e.modelPath,
		MaxModelLen: e.maxLen, TTFT: e.k.ttft, ITL: e.k.itl, Alpha: e.k.alpha, MaxNumSeqs: e.maxNumSeqs,
		PrefillTokensPerSecond: e.k.prefill, OutputLen: e.k.outputLen, ToolCallParser: e.toolParser,
		EnableAutoToolChoice: e.autoTool, ReasoningParser: e.reasoningParser, EnableReasoning: e.enableReasoning,
		Metrics: e.metrics, NoStats: e.kind == KindVLLM && e.args.Bool("disable_log_stats"), APIKeys: e.apiKeys, BlockSize: e.blockSize, KVCacheDtype: e.kvDtype,
		GPUMemoryUtilization: e.util, LoadTime: e.k.loadTime, V0: e.v0, ToolFormat: e.k.toolFormat}
	if e.res != nil {
		o.KVTokens = int(e.res.KVTokens)
	}
	if e.info != nil && e.info.Config != nil {
		o.VocabSize = e.info.Config.VocabSize
		o.ModelType = e.info.Config.ModelType
		if o.ToolFormat == "" {
			o.ToolFormat = string(toolFormatFromTemplate(e.modelPath))
		}
	}
	switch e.k.thinking {
	case "on":
		o.Thinking = true
	case "auto":
		o.Thinking = strings.HasPrefix(o.ModelType, "qwen3") || strings.Contains(strings.ToLower(e.modelPath), "-r1")
	}
	if e.kind == KindSGLang {
		o.ServerArgs = e.serverArgs()
	}
	return o
}

// toolFormatFromTemplate reads the tool-call format from the chat template
// in tokenizer_config.json, as that is what the model was trained to write.
func toolFormatFromTemplate(dir string) toolFormat {
	raw, err := fsx.ReadFile(filepath.Join(dir, "tokenizer_config.json"), model.MaxTokenizerConfigBytes)
	if err != nil {
		return toolFormatNone
	}
	t := string(raw)
	switch {
	case strings.Contains(t, "<function="):
		return fmtQwen3Coder
	case strings.Contains(t, "<tool_call>"):
		return fmtHermes
	case strings.Contains(t, "[TOOL_CALLS]"):
		return fmtMistral
	case strings.Contains(t, "tool▁calls▁begin"):
		return fmtDeepSeekV3
	case strings.Contains(t, "<|python_tag|>"), strings.Contains(t, `\"parameters\"`):
		return fmtLlama3JSON
	}
	return toolFormatNone
}

// serverArgs is SGLang's /server_info view of the flags.
func (e *engineRun) serverArgs() map[string]any {
	m := map[string]any{"model_path": e.modelPath, "tokenizer_path": e.modelPath, "host": e.host,
		"port": e.port, "tp_size": e.tp, "pp_size": e.pp, "context_length": e.maxLen,
		"mem_fraction_static": e.util, "max_running_requests": e.maxNumSeqs, "kv_cache_dtype": e.kvDtype,
		"served_model_name": e.served[0], "enable_metrics": e.metrics, "page_size": e.blockSize,
		"chunked_prefill_size": e.mbt}
	if e.toolParser != "" {
		m["tool_call_parser"] = e.toolParser
	} else {
		m["tool_call_parser"] = nil
	}
	if e.reasoningParser != "" {
		m["reasoning_parser"] = e.reasoningParser
	} else {
		m["reasoning_parser"] = nil
	}
	return m
}

// nonDefault renders the given flags as vLLM's "non-default args: {...}" dict.
func (e *engineRun) nonDefault() string {
	var parts []string
	if len(e.args.Pos) > 0 {
		parts = append(parts, "'model_tag': "+pyStrRepr(e.args.Pos[0]))
	}
	for _, d := range e.args.Given() {
		v := e.args.values[d]
		f := e.args.flags[d]
		switch {
		case f != nil && !f.TakesValue:
			parts = append(parts, pyStrRepr(d)+": "+map[string]string{"true": "True", "false": "False"}[v[len(v)-1]])
		case f != nil && (f.NArgs == "+" || f.NArgs == "*"):
			q := make([]string, len(v))
			for i, s := range v {
				q[i] = pyStrRepr(s)
			}
			parts = append(parts, pyStrRepr(d)+": ["+strings.Join(q, ", ")+"]")
		default:
			s := v[len(v)-1]
			if _, err := strconv.ParseFloat(s, 64); err == nil {
				parts = append(parts, pyStrRepr(d)+": "+s)
			} else {
				parts = append(parts, pyStrRepr(d)+": "+pyStrRepr(s))
			}
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
