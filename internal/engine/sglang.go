package engine

import (
	"strconv"

	"github.com/roofline/roofline/internal/engine/kinds"
)

// sglangDistPort is the port SGLang's leader listens on for the other
// nodes of a multi-node launch (--dist-init-addr).
const sglangDistPort = 20000

// sglangKind is SGLang (shared/reference/engines/engines.md).
var sglangKind = &Kind{
	Name:    kinds.SGLang,
	Display: "SGLang",

	modules: []string{"sglang.launch_server"},
	flags: flagNames{
		tensorParallel:    "--tp-size",
		pipelineParallel:  "--pp-size",
		maxModelLen:       "--context-length",
		memoryUtilization: "--mem-fraction-static",
		maxNumSeqs:        "--max-running-requests",
		enforceEager:      "--disable-cuda-graph",
	},
	attrs: map[string]string{
		"--model-path":                   "model",
		"--served-model-name":            "served_name",
		"--host":                         "host",
		"--port":                         "port",
		"--tp-size":                      "tensor_parallel",
		"--pp-size":                      "pipeline_parallel",
		"--context-length":               "max_model_len",
		"--mem-fraction-static":          "gpu_memory_utilization",
		"--tool-call-parser":             "tool_call_parser",
		"--reasoning-parser":             "reasoning_parser",
		"--chat-template":                "chat_template",
		"--quantization":                 "quantization",
		"--kv-cache-dtype":               "kv_cache_dtype",
		"--max-running-requests":         "max_num_seqs",
		"--max-prefill-tokens":           "max_num_batched_tokens",
		"--chunked-prefill-size":         "chunked_prefill_size",
		"--disable-cuda-graph":           "enforce_eager",
		"--disable-radix-cache":          "enable_prefix_caching",
		"--speculative-algorithm":        "speculative_config",
		"--speculative-draft-model-path": "speculative_config",
		"--speculative-num-steps":        "speculative_config",
		"--speculative-eagle-topk":       "speculative_config",
		"--speculative-num-draft-tokens": "speculative_config",
		"--enable-metrics":               "",
	},

	DefaultHost: "127.0.0.1",
	// SGLang takes its key only on its command line, where every local
	// user can read it: roofline's proxy enforces the key instead.
	APIKeyVia:                "enforced by roofline's proxy",
	DefaultMemoryUtilization: 0.88,

	VersionPaths: []string{"/server_info", "/get_server_info"},
	MetricPrefix: "sglang:",
	ExpectedMetrics: []MetricGroup{
		{"running requests", []string{"sglang:num_running_reqs"}},
		{"queued requests", []string{"sglang:num_queue_reqs"}},
		{"KV token usage", []string{"sglang:token_usage"}},
		{"prompt tokens", []string{"sglang:prompt_tokens_total"}},
		{"generation tokens", []string{"sglang:generation_tokens_total"}},
		{"time to first token", []string{"sglang:time_to_first_token_seconds"}},
	},
	GenerationCounter: "sglang:generation_tokens_total",
	NoMetrics:         "no /metrics: SGLang serves it only with --enable-metrics; add \"--enable-metrics\" to the server's extra_args",
	ToolParserHint:    "SGLang needs a --tool-call-parser that matches the model's tool-call format (tool_call_parser in the server block), and a chat template that renders tools",

	vramWords: VRAMWords{
		Utilization: "mem_fraction_static",
		Batch:       "chunked_prefill_size",
		GraphsNote:  "* Estimates: SGLang keeps activations and CUDA graphs out of the KV pool, in the 1 - mem_fraction_static share.",
	},

	// SGLang's multi-node launch: --nnodes, --node-rank, --dist-init-addr.
	multiNode: func(argv []string, nodes int, leaderAddr, workerRank string) (leader, worker []string) {
		return multiNodeArgv(argv, []string{"--nnodes", strconv.Itoa(nodes), "--dist-init-addr", leaderAddr + ":" + strconv.Itoa(sglangDistPort)}, workerRank)
	},
}
