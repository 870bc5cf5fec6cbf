package engine

import (
	"fmt"
	"strings"
)

// What roofline knows about engine versions beyond their --help: parser
// names (checked at startup, not by argparse), flags that were removed, and
// the names the other engine uses. Sources: shared/reference/engines/engines.md
// §2, §4 and §5.

// parserNames are the tool-call and reasoning parser registries of the
// versions that were read (engines.md §5).
var parserNames = map[string]struct{ tool, reasoning string }{
	"vllm@0.8.5": {
		tool:      "granite granite-20b-fc hermes internlm jamba llama3_json llama4_json mistral phi4_mini_json pythonic",
		reasoning: "deepseek_r1 granite",
	},
	"vllm@0.16.0": {
		tool: "deepseek_v3 deepseek_v31 deepseek_v32 ernie45 glm45 glm47 granite-20b-fc granite hermes hunyuan_a13b internlm jamba " +
			"kimi_k2 llama3_json llama4_json llama4_pythonic longcat minimax_m2 minimax mistral olmo3 openai phi4_mini_json pythonic " +
			"qwen3_coder qwen3_xml seed_oss step3 step3p5 xlam gigachat3 functiongemma",
		reasoning: "deepseek_r1 deepseek_v3 ernie45 glm45 openai_gptoss granite holo2 hunyuan_a13b kimi_k2 minimax_m2 " +
			"minimax_m2_append_think mistral olmo3 qwen3 seed_oss step3 step3p5",
	},
	"sglang@0.5.6.post2": {
		tool:      "deepseekv3 deepseekv31 deepseekv32 glm glm45 gpt-oss kimi_k2 llama3 mistral pythonic qwen qwen25 qwen3_coder step3 minimax-m2",
		reasoning: "deepseek-r1 deepseek-v3 glm45 gpt-oss kimi kimi_k2 qwen3 qwen3-thinking minimax minimax-append-think step3",
	},
}

// KnownParsers returns the tool-call and reasoning parser names of kind at
// version, when roofline has read that version's registries.
func KnownParsers(kind, version string) (tool, reasoning []string, ok bool) {
	p, ok := parserNames[kind+"@"+version]
	if !ok {
		return nil, nil, false
	}
	return strings.Fields(p.tool), strings.Fields(p.reasoning), true
}

// parserAcrossEngines maps a parser name of one engine to the other's
// spelling for the same model family (engines.md §5; a hint, not a tested
// equivalence).
var parserAcrossEngines = map[string]string{
	"vllm:hermes": "qwen25", "vllm:llama3_json": "llama3", "vllm:deepseek_v3": "deepseekv3",
	"vllm:deepseek_v31": "deepseekv31", "vllm:deepseek_v32": "deepseekv32", "vllm:openai": "gpt-oss",
	"vllm:openai_gptoss": "gpt-oss", "vllm:minimax_m2": "minimax-m2", "vllm:deepseek_r1": "deepseek-r1",
	"sglang:qwen25": "hermes", "sglang:qwen": "hermes", "sglang:llama3": "llama3_json", "sglang:deepseekv3": "deepseek_v3",
	"sglang:deepseekv31": "deepseek_v31", "sglang:deepseekv32": "deepseek_v32", "sglang:minimax-m2": "minimax_m2",
	"sglang:deepseek-r1": "deepseek_r1",
}

// Removal says when a vLLM flag went away and what replaces it.
type Removal struct {
	In  string // "in vLLM 0.10.0", or the upstream change when the release is not known
	Use string // what to do instead
}

// removedVLLM lists vLLM flags that were removed (engines.md §2).
var removedVLLM = map[string]Removal{
	"--use-v2-block-manager":             {"in vLLM 0.10.0 (upstream PR #21349)", "drop it: block manager v2 is the only one"},
	"--device":                           {"in vLLM 0.10.0 (upstream PR #21349)", "drop it: the device is detected"},
	"--enable-reasoning":                 {"in vLLM 0.10.0 (upstream PR #20979)", "drop it: setting reasoning_parser alone enables reasoning"},
	"--num-scheduler-steps":              {"by upstream PR #22138 (2025-08-12, after 0.10.0)", "drop it: multi-step scheduling went away with the V0 engine"},
	"--multi-step-stream-outputs":        {"by upstream PR #22138 (2025-08-12, after 0.10.0)", "drop it: multi-step scheduling went away with the V0 engine"},
	"--tokenizer-pool-size":              {"by upstream PR #20968 (2025-07-15)", "drop it: it had no effect"},
	"--tokenizer-pool-type":              {"by upstream PR #20968 (2025-07-15)", "drop it: it had no effect"},
	"--tokenizer-pool-extra-config":      {"by upstream PR #20968 (2025-07-15)", "drop it: it had no effect"},
	"--qlora-adapter-name-or-path":       {"by upstream PR #20979 (2025-07-15)", "drop it"},
	"--long-lora-scaling-factors":        {"by upstream PR #21169 (2025-07-19)", "drop it"},
	"--enable-prompt-adapter":            {"by upstream PR #20588 (2025-07-23)", "drop it: prompt adapters are gone"},
	"--prompt-adapters":                  {"by upstream PR #20588 (2025-07-23)", "drop it: prompt adapters are gone"},
	"--max-prompt-adapters":              {"by upstream PR #20588 (2025-07-23)", "drop it: prompt adapters are gone"},
	"--max-prompt-adapter-token":         {"by upstream PR #23284 (2025-08-20)", "drop it: prompt adapters are gone"},
	"--guided-decoding-backend":          {"by upstream PR #22772 (2025-09-18)", `use --structured-outputs-config '{"backend": "..."}'`},
	"--task":                             {"by upstream PR #30397 (2025-12-11)", "use --runner (auto, generate, pooling, draft) and --convert (auto, classify, embed, none)"},
	"--max-seq-len-to-capture":           {"by upstream PR #25543 (2025-09-24)", "use --max-cudagraph-capture-size or --cudagraph-capture-sizes"},
	"--preemption-mode":                  {"by upstream PR #25334 (2025-09-21)", "drop it"},
	"--scheduler-delay-factor":           {"by upstream PR #25334 (2025-09-21)", "drop it"},
	"--disable-async-output-proc":        {"by upstream PR #25334 (2025-09-21)", "drop it"},
	"--num-lookahead-slots":              {"by upstream PR #29000 (2025-11-20)", "drop it"},
	"--rope-scaling":                     {"by upstream PR #28006 (2025-11-04)", `use --hf-overrides '{"rope_scaling": {...}}'`},
	"--rope-theta":                       {"by upstream PR #28006 (2025-11-04)", `use --hf-overrides '{"rope_theta": ...}'`},
	"--override-pooler-config":           {"by upstream PR #29402 (2025-11-25)", "use --pooler-config"},
	"--override-neuron-config":           {"by upstream PR #21159 (2025-09-06)", "drop it"},
	"--disable-mm-preprocessor-cache":    {"by upstream PR #30397 (2025-12-11)", "use --mm-processor-cache-gb 0"},
	"--lora-extra-vocab-size":            {"by upstream PR #28545 (2025-11-21)", "drop it"},
	"--enable-lora-bias":                 {"by upstream PR #25807 (2025-10-10)", "drop it"},
	"--disable-log-requests":             {"by upstream PR #35723 (2026-03-03, after 0.16.0)", "drop it: request logging is off unless --enable-log-requests is set"},
	"--swap-space":                       {"by upstream PR #36216 (2026-03-07, after 0.16.0)", "drop it: the V1 engine does not swap"},
	"--logits-processor-pattern":         {"by upstream PR #34400 (2026-02-12, after 0.16.0)", "drop it"},
	"--disable-frontend-multiprocessing": {"after vLLM 0.16.0", "drop it"},
	"--speculative-model":                {"by upstream PR #15466 (2025-04-01, before 0.8.5)", `set speculative_config = {method = "...", model = "...", num_speculative_tokens = N}`},
	"--num-speculative-tokens":           {"by upstream PR #15466 (2025-04-01, before 0.8.5)", "set num_speculative_tokens in speculative_config"},
	"--ngram-prompt-lookup-max":          {"by upstream PR #15466 (2025-04-01, before 0.8.5)", `set speculative_config = {method = "ngram", prompt_lookup_max = N}`},
	"--ngram-prompt-lookup-min":          {"by upstream PR #15466 (2025-04-01, before 0.8.5)", `set speculative_config = {method = "ngram", prompt_lookup_min = N}`},
}

// RemovedFlag returns what is known about a removed flag of kind.
func RemovedFlag(kind, flag string) (Removal, bool) {
	k := Lookup(kind)
	if k == nil {
		return Removal{}, false
	}
	r, ok := k.removed[normalizeUnderscores(flag)]
	return r, ok
}

// acrossEngines maps a flag of one engine to the other's flag for the same
// setting and the server attribute that renders it (engines.md §4).
var acrossEngines = map[string]struct{ other, attr string }{
	"vllm:--tensor-parallel-size":    {"--tp-size", "tensor_parallel"},
	"vllm:-tp":                       {"--tp-size", "tensor_parallel"},
	"vllm:--pipeline-parallel-size":  {"--pp-size", "pipeline_parallel"},
	"vllm:--max-model-len":           {"--context-length", "max_model_len"},
	"vllm:--gpu-memory-utilization":  {"--mem-fraction-static", "gpu_memory_utilization"},
	"vllm:--max-num-seqs":            {"--max-running-requests", "max_num_seqs"},
	"vllm:--max-num-batched-tokens":  {"--max-prefill-tokens", "max_num_batched_tokens"},
	"vllm:--enforce-eager":           {"--disable-cuda-graph", "enforce_eager"},
	"vllm:--enable-prefix-caching":   {"--disable-radix-cache (radix cache is on by default)", "enable_prefix_caching"},
	"vllm:--seed":                    {"--random-seed", ""},
	"vllm:--tokenizer":               {"--tokenizer-path", ""},
	"vllm:--enable-auto-tool-choice": {"nothing: SGLang needs only --tool-call-parser", "tool_call_parser"},
	"vllm:--uvicorn-log-level":       {"--log-level-http", ""},
	"sglang:--tp-size":               {"--tensor-parallel-size", "tensor_parallel"},
	"sglang:--pp-size":               {"--pipeline-parallel-size", "pipeline_parallel"},
	"sglang:--context-length":        {"--max-model-len", "max_model_len"},
	"sglang:--mem-fraction-static":   {"--gpu-memory-utilization (a share of all GPU memory, not of the static pool)", "gpu_memory_utilization"},
	"sglang:--max-running-requests":  {"--max-num-seqs", "max_num_seqs"},
	"sglang:--chunked-prefill-size":  {"--max-num-batched-tokens", "chunked_prefill_size"},
	"sglang:--max-prefill-tokens":    {"--max-num-batched-tokens", "max_num_batched_tokens"},
	"sglang:--disable-cuda-graph":    {"--enforce-eager", "enforce_eager"},
	"sglang:--disable-radix-cache":   {"--no-enable-prefix-caching", "enable_prefix_caching"},
	"sglang:--random-seed":           {"--seed", ""},
	"sglang:--tokenizer-path":        {"--tokenizer", ""},
	"sglang:--model-path":            {"the positional model argument", "model"},
	"sglang:--enable-metrics":        {"nothing: vLLM always serves /metrics", ""},
}

// otherEngine is the kind a flag of kind would be mistaken from: the
// first other registered kind.
func otherEngine(kind string) string {
	for _, k := range registry {
		if k.Name != kind {
			return k.Name
		}
	}
	return kind
}

// crossHint explains a flag of the other engine used with kind: "--max-model-len
// is vLLM's; SGLang calls it --context-length (attribute max_model_len renders
// it for either engine)".
func crossHint(kind, flag string) string {
	other := otherEngine(kind)
	m, ok := acrossEngines[other+":"+normalizeUnderscores(flag)]
	if !ok {
		return ""
	}
	msg := fmt.Sprintf("%s is %s's; %s's equivalent is %s", flag, KindName(other), KindName(kind), m.other)
	if m.attr != "" {
		msg += fmt.Sprintf(" (the server attribute %s renders it for either engine)", m.attr)
	}
	return msg + "."
}
