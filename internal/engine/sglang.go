package engine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine/kinds"
)

// sglangDistPort is the port SGLang's leader listens on for the other
// nodes of a multi-node launch (--dist-init-addr).
const sglangDistPort = 20000

// sglangKind is SGLang (shared/reference/engines/engines.md).
var sglangKind = &Kind{
	Name:    kinds.SGLang,
	Display: "SGLang",

	modules:      []string{"sglang.launch_server"},
	launchModule: "sglang.launch_server",

	imageCommand: []string{"python3", "-m", "sglang.launch_server"},
	// The interpreter part of the command answers the version.
	versionArgv: func(e *config.Engine, argv []string) ([]string, error) {
		interp := sglangInterpreter(argv)
		if interp == nil {
			return nil, fmt.Errorf("engine %q: an SGLang command must be the interpreter and the module, such as [\"/opt/sglang/bin/python\", \"-m\", \"sglang.launch_server\"]; got %q", e.Name, shellJoin(argv))
		}
		return append(slices.Clone(interp), "-c", "import sglang; print(sglang.__version__)"), nil
	},
	help: helpCommand,
	flags: flagNames{
		tensorParallel:    "--tp-size",
		pipelineParallel:  "--pp-size",
		maxModelLen:       "--context-length",
		memoryUtilization: "--mem-fraction-static",
		maxNumSeqs:        "--max-running-requests",
		enforceEager:      "--disable-cuda-graph",
	},
	modelFlag:        "--model-path",
	requirePort:      true,
	defaultPort:      30000,
	metricsFlag:      impliedFlag{flag: "--enable-metrics", why: "the gates read /metrics, which SGLang serves only with it"},
	batching:         sglangBatching,
	prefixCachingOff: "--disable-radix-cache", // the radix cache is on by default
	kvDtype:          sglangKVDtype,
	speculation:      sglangSpeculation,
	dashesOnly:       true,
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

	// logs are its log lines: failures, launch banner, footprint
	// (sglang_log.go).
	logs: sglangLogs,

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

// sglangInterpreter returns the interpreter part of an SGLang command: what
// comes before "-m" ("/opt/sglang/bin/python").
func sglangInterpreter(argv []string) []string {
	for i, a := range argv {
		if a == "-m" && i > 0 {
			return argv[:i]
		}
	}
	return nil
}

// sglangBatching: SGLang has a prefill token budget and a chunk size of
// its own.
func sglangBatching(r *renderer) []arg {
	var out []arg
	if n := r.s.MaxNumBatchedTokens; n > 0 {
		out = append(out, arg{flag: "--max-prefill-tokens", values: []string{strconv.Itoa(n)}, attr: "max_num_batched_tokens"})
	}
	if n := r.s.ChunkedPrefillSize; n != 0 {
		out = append(out, arg{flag: "--chunked-prefill-size", values: []string{strconv.Itoa(n)}, attr: "chunked_prefill_size"})
	}
	return out
}

// sglangKVDtype refuses vLLM's "fp8", which SGLang does not name.
func sglangKVDtype(r *renderer, v string) (string, bool) {
	if v != "fp8" {
		return v, true
	}
	valid := "auto, fp8_e5m2, fp8_e4m3, bf16, bfloat16, fp4_e2m1"
	if f := r.flag("--kv-cache-dtype"); f != nil && len(f.Choices) > 0 {
		valid = strings.Join(f.Choices, ", ")
	}
	r.errorf(r.rangeOf("kv_cache_dtype"), "KV cache dtype has no SGLang equivalent",
		`kv_cache_dtype "fp8" is vLLM's name (FP8 E4M3 on CUDA). %s names the FP8 formats fp8_e4m3 and fp8_e5m2; valid values: %s.`, r.engineName(), valid)
	return "", false
}
