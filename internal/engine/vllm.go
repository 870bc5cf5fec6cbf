package engine

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine/kinds"
)

// vllmKind is vLLM (shared/reference/engines/engines.md).
var vllmKind = &Kind{
	Name:    kinds.VLLM,
	Display: "vLLM",

	subcommand:  "serve",
	executables: []string{"vllm"},
	modules:     []string{"vllm.entrypoints.cli.main", "vllm.entrypoints.openai.api_server"},

	imageCommand: []string{"vllm"},
	versionArgv: func(_ *config.Engine, argv []string) ([]string, error) {
		return append(slices.Clone(argv), "--version"), nil
	},
	help: vllmHelp,
	flags: flagNames{
		tensorParallel:    "--tensor-parallel-size",
		pipelineParallel:  "--pipeline-parallel-size",
		maxModelLen:       "--max-model-len",
		memoryUtilization: "--gpu-memory-utilization",
		maxNumSeqs:        "--max-num-seqs",
		enforceEager:      "--enforce-eager",
	},
	modelOption:         "--model",
	autoMaxModelLenFrom: "0.12",
	toolChoiceFlag:      impliedFlag{flag: "--enable-auto-tool-choice", why: "vLLM needs it to use a tool-call parser"},
	// vLLM before 0.10 also needed --enable-reasoning; later it is gone.
	reasoningFlag:    impliedFlag{flag: "--enable-reasoning", why: "this vLLM needs it to use a reasoning parser", before: "0.10.0"},
	batching:         vllmBatching,
	prefixCachingOn:  "--enable-prefix-caching",
	prefixCachingOff: "--no-enable-prefix-caching",
	kvDtype: func(_ *renderer, v string) (string, bool) {
		if v == "bf16" {
			return "bfloat16", true
		}
		return v, true
	},
	// vLLM takes the JSON as it is.
	speculation: func(_ *renderer, js string, _ map[string]any) []arg {
		return []arg{{flag: "--speculative-config", values: []string{js}, attr: "speculative_config"}}
	},
	dottedFlags: true,
	removed:     removedVLLM,
	attrs: map[string]string{
		"--served-model-name":         "served_name",
		"--host":                      "host",
		"--port":                      "port",
		"--tensor-parallel-size":      "tensor_parallel",
		"--pipeline-parallel-size":    "pipeline_parallel",
		"--max-model-len":             "max_model_len",
		"--gpu-memory-utilization":    "gpu_memory_utilization",
		"--enable-auto-tool-choice":   "tool_call_parser",
		"--tool-call-parser":          "tool_call_parser",
		"--enable-reasoning":          "reasoning_parser",
		"--reasoning-parser":          "reasoning_parser",
		"--chat-template":             "chat_template",
		"--quantization":              "quantization",
		"--kv-cache-dtype":            "kv_cache_dtype",
		"--max-num-seqs":              "max_num_seqs",
		"--max-num-batched-tokens":    "max_num_batched_tokens",
		"--no-enable-chunked-prefill": "chunked_prefill_size",
		"--enforce-eager":             "enforce_eager",
		"--enable-prefix-caching":     "enable_prefix_caching",
		"--no-enable-prefix-caching":  "enable_prefix_caching",
		"--speculative-config":        "speculative_config",
	},

	DefaultHost:              "0.0.0.0", // all interfaces
	APIKeyEnv:                "VLLM_API_KEY",
	APIKeyVia:                "VLLM_API_KEY in the engine's environment",
	DefaultMemoryUtilization: 0.9,
	ProfilesMemory:           true,
	nestedErrorsFrom:         "0.10",

	VersionPaths: []string{"/version"},
	MetricPrefix: "vllm:",
	// vLLM renamed the KV gauge (gpu_cache_usage_perc → kv_cache_usage_perc)
	// and the ITL histogram; both spellings are accepted.
	ExpectedMetrics: []MetricGroup{
		{"running requests", []string{"vllm:num_requests_running"}},
		{"waiting requests", []string{"vllm:num_requests_waiting"}},
		{"KV cache usage", []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"}},
		{"prompt tokens", []string{"vllm:prompt_tokens_total"}},
		{"generation tokens", []string{"vllm:generation_tokens_total"}},
		{"time to first token", []string{"vllm:time_to_first_token_seconds"}},
	},
	GenerationCounter: "vllm:generation_tokens_total",
	CacheConfigMetric: "vllm:cache_config_info",
	NoMetrics:         "no /metrics, which every vLLM serves: is this really vLLM, and on this port?",
	NoSeries:          "/metrics has no vllm:* series: the server runs with --disable-log-stats; remove it so load and latency can be watched",
	ToolParserHint:    "vLLM needs --enable-auto-tool-choice and a --tool-call-parser that matches the model's tool-call format (tool_call_parser in the server block; roofline adds both), and a chat template that renders tools (chat_template)",

	// logs are its log lines: failures, launch banner, footprint
	// (vllm_log.go).
	logs: vllmLogs,

	vramWords: VRAMWords{
		Utilization: "gpu_memory_utilization",
		Batch:       "max_num_batched_tokens",
		GraphsNote:  "* Estimate: this vLLM captures CUDA graphs after sizing the KV cache, in the 1 - utilization headroom.",
	},

	// vLLM's multiprocess mode: --nnodes, --node-rank, --master-addr, and
	// --headless on the workers.
	multiNode: func(argv []string, nodes int, leaderAddr, workerRank string) (leader, worker []string) {
		return multiNodeArgv(argv, []string{"--nnodes", strconv.Itoa(nodes), "--master-addr", leaderAddr}, workerRank, "--headless")
	},
}

// vllmHelp lists vLLM's flags: ≥0.11 lists them only with --help=all; older
// versions reject --help=all (argparse exit 2) and list everything on plain
// --help.
func vllmHelp(ctx context.Context, e *config.Engine, r Runner, argv, env []string) (*FlagSet, string, error) {
	allArgv := append(slices.Clone(argv), "serve", "--help=all")
	fs, errAll := helpFlags(ctx, e, r, allArgv, env)
	if errAll == nil {
		return fs, shellJoin(allArgv), nil
	}
	plainArgv := append(slices.Clone(argv), "serve", "--help")
	fs, err := helpFlags(ctx, e, r, plainArgv, env)
	if err != nil {
		return nil, "", fmt.Errorf("%w\n(before that, %q failed too: %v)", err, shellJoin(allArgv), errAll)
	}
	return fs, shellJoin(plainArgv), nil
}
