package engine

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/roofline/roofline/internal/engine/kinds"
	"github.com/roofline/roofline/internal/engine/logdiag"
)

// vllmLogs are the lines of vLLM's own log (V0 and V1) that name a failed
// start's cause, show how far a start got, or give its memory figures; texts quoted from vLLM's
// sources and public issue threads (engines.md §8, vram.md §2.5). What every
// engine prints (argparse, CUDA, NCCL, Hugging Face) is logdiag's.
var vllmLogs = logdiag.Rules{
	Kind: kinds.VLLM,
	Failures: []logdiag.Rule{
		{Class: logdiag.BadFlag, Keys: []string{"invalid tool call parser", "invalid reasoning parser"}, Summary: vllmParserSummary},
		{Class: logdiag.BadFlag, Keys: []string{"User-specified max_model_len"}},
		{Class: logdiag.BadFlag, Keys: []string{"requires --tool-call-parser", "is smaller than max_model_len"}},
		{Class: logdiag.BadFlag, Keys: []string{"validation error for "}, Re: regexp.MustCompile(`validation error for \w*(?:Config|Args)\b`), Weak: true},

		{Class: logdiag.KVTooSmall, Keys: []string{"To serve at least one request with the model"}, Context: vllmKVContext, Summary: vllmKVSummary},
		{Class: logdiag.KVTooSmall, Keys: []string{"is larger than the maximum number of tokens that can be stored in KV cache"}, Context: vllmKVContext, Summary: vllmKVSummary},
		{Class: logdiag.NoKVMemory, Keys: []string{"No available memory for the cache blocks"}, Context: vllmKVContext},
		{Class: logdiag.FreeMemBelowUtil, Keys: []string{"on startup is less than desired GPU memory utilization", "Error in memory profiling. Initial free memory"}, Summary: vllmFreeMemSummary},

		{Class: logdiag.MissingFiles, Keys: []string{"Invalid repository ID or local directory", "Could not detect config format"}, Summary: vllmMissingSummary},

		{Class: logdiag.UnsupportedArch, Keys: []string{"are not supported for now", "is not supported for now", "was supported in vLLM until"}, Summary: vllmArchSummary},
		{Class: logdiag.UnsupportedArch, Keys: []string{"failed to be inspected"}, Weak: true},
	},
	Starts: []string{"vLLM API server version"},
	Progress: []logdiag.Stage{
		{Phase: logdiag.PhaseServing, Keys: []string{"Starting vLLM API server"}},
		{Phase: logdiag.PhaseCaptureDone, Keys: []string{"Graph capturing finished", "init engine (profile, create kv cache, warmup model) took"}},
		{Phase: logdiag.PhaseCapture, Keys: []string{"Capturing CUDA graph", "Capturing cudagraphs", "Capturing the model for CUDA graphs", "Profiling CUDA graph memory", "CUDA graphs can take additional"}},
		{Phase: logdiag.PhaseProfile, Keys: []string{"Memory profiling takes", "Memory profiling results", "Available KV cache memory", "GPU KV cache size", "# GPU blocks", "# cuda blocks", "the current vLLM instance can use"}},
		{Phase: logdiag.PhaseWeightsDone, Keys: []string{"Model loading took", "Loading model weights took", "Loading weights took"}},
		{Phase: logdiag.PhaseWeights, Keys: []string{"Starting to load model"}},
	},
	Frames: []logdiag.Frame{
		{Phase: logdiag.PhaseCapture, Funcs: []string{"capture_model", "_capture_cudagraphs", "compile_or_warm_up_model", "profile_cudagraph_memory"}},
		{Phase: logdiag.PhaseProfile, Funcs: []string{"profile_run", "_dummy_sampler_run", "determine_available_memory",
			"determine_num_available_blocks", "initialize_kv_cache", "_allocate_kv_cache_tensors", "initialize_cache", "_init_cache_engine"}},
	},
	Consequences: []string{
		"Engine core initialization failed", "EngineCore failed to start", "WorkerProc failed to start",
		"WorkerProc initialization failed", "Worker failed with error", "Exception in worker",
	},
	Footprint: []logdiag.FootprintLine{
		{Hint: "Model loading took", Re: regexp.MustCompile(`Model loading took ([\d.]+) ?(?:GiB|GB)`),
			Read: func(r *logdiag.Reading, m []string) { r.Weights(m[1]) }},
		{Hint: "Loading model weights took", Re: regexp.MustCompile(`Loading model weights took ([\d.]+) ?(?:GiB|GB)`),
			Read: func(r *logdiag.Reading, m []string) { r.Weights(m[1]) }},
		// V1; V0 logs "the rest of the memory reserved for KV Cache is X GiB"
		// or "kv_cache_size=X GiB".
		{Hint: "Available KV cache memory", Re: regexp.MustCompile(`Available KV cache memory: (-?[\d.]+) ?GiB`),
			Read: func(r *logdiag.Reading, m []string) { r.KVCache(m[1]) }},
		{Hint: "reserved for KV Cache is", Re: regexp.MustCompile(`reserved for KV Cache is (-?[\d.]+) ?GiB`),
			Read: func(r *logdiag.Reading, m []string) { r.KVCache(m[1]) }},
		{Hint: "kv_cache_size=", Re: regexp.MustCompile(`kv_cache_size=(-?[\d.]+) ?GiB`),
			Read: func(r *logdiag.Reading, m []string) { r.KVCache(m[1]) }},
		{Hint: "GPU KV cache size", Re: regexp.MustCompile(`GPU KV cache size: ([\d,]+) tokens`),
			Read: func(r *logdiag.Reading, m []string) { r.KVTokens(m[1], 0) }},
		{Hint: "Maximum concurrency", Re: regexp.MustCompile(`Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x`),
			Read: func(r *logdiag.Reading, m []string) {
				r.MaxConcurrency(m[2])
				r.MaxModelLen(m[1], 0)
			}},
		// V0 logs blocks only: tokens are blocks × block size, which the log
		// does not say.
		{Hint: "blocks:", Re: regexp.MustCompile(`# (?:GPU|cuda) blocks: (\d+)`),
			Read: func(r *logdiag.Reading, m []string) { r.GPUBlocks(m[1]) }},
		// The engine config line: the length when no concurrency line says.
		{Hint: "max_seq_len=", Re: regexp.MustCompile(`max_seq_len=(\d+)`),
			Read: func(r *logdiag.Reading, m []string) { r.MaxModelLen(m[1], 1) }},
		{Hint: "Graph capturing finished", Re: regexp.MustCompile(`Graph capturing finished in [\d.]+ secs?, took (-?[\d.]+) ?GiB`),
			Read: func(r *logdiag.Reading, m []string) { r.CUDAGraph(m[1]) }},
	},
}

// vllmKVContext: a KV cache failure shows the engine's measure of the
// memory left for it.
var vllmKVContext = []string{"Available KV cache memory", "reserved for KV Cache is", "# GPU blocks"}

// Numbers and names quoted from vLLM's messages, for one-line summaries.
// Every pattern is optional: a message in a format not seen yet gets the
// class's summary.
var (
	reVLLMParser    = regexp.MustCompile(`invalid (tool call|reasoning) parser: ([^ (]+)`)
	reVLLMMaxSeq    = regexp.MustCompile(`max seq len \((\d+)\)`)
	reVLLMNeededGiB = regexp.MustCompile(`([\d.]+) GiB KV cache is needed`)
	reVLLMAvailGiB  = regexp.MustCompile(`available KV cache memory \(([\d.]+) GiB\)`)
	reVLLMEstimated = regexp.MustCompile(`estimated maximum model length is (\d+)`)
	reVLLMV0KV      = regexp.MustCompile(`max seq len \((\d+)\) is larger than the maximum number of tokens that can be stored in KV cache \((\d+)\)`)
	reVLLMFreeMem   = regexp.MustCompile(`Free memory on device ?(\S*) \(([\d.]+)/([\d.]+) GiB\) on startup is less than desired GPU memory utilization \(([\d.]+), ([\d.]+) GiB\)`)
	reVLLMQuoted    = regexp.MustCompile(`'([^']+)'`)
	reVLLMArchUntil = regexp.MustCompile(`Model architecture (\S+) was supported in vLLM until (v[\w.]+)`)
)

func vllmParserSummary(msg string) string {
	if m := reVLLMParser.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("This engine version has no %s parser %s.", m[1], strings.Trim(m[2], "'\"{}"))
	}
	return ""
}

// vllmKVSummary: V0 compares tokens; V1 names the lengths and the memory
// the cache needs and has.
func vllmKVSummary(msg string) string {
	if m := reVLLMV0KV.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("max_model_len %s is larger than the %s tokens the KV cache holds.", m[1], m[2])
	}
	s := "The KV cache cannot hold one request of max_model_len"
	if m := reVLLMMaxSeq.FindStringSubmatch(msg); m != nil {
		s += " " + m[1]
	}
	need, avail := reVLLMNeededGiB.FindStringSubmatch(msg), reVLLMAvailGiB.FindStringSubmatch(msg)
	if need != nil && avail != nil {
		s += fmt.Sprintf(": it needs %s GiB, %s GiB is available", need[1], avail[1])
	}
	if m := reVLLMEstimated.FindStringSubmatch(msg); m != nil {
		s += fmt.Sprintf("; the engine estimates max_model_len %s fits", m[1])
	}
	return s + "."
}

func vllmFreeMemSummary(msg string) string {
	if m := reVLLMFreeMem.FindStringSubmatch(msg); m != nil {
		dev := m[1]
		if dev == "" {
			dev = "the GPU"
		}
		return fmt.Sprintf("Only %s of %s GiB is free on %s at start; gpu_memory_utilization %s asks for %s GiB.", m[2], m[3], dev, m[4], m[5])
	}
	if strings.Contains(msg, "memory profiling") {
		return "GPU memory changed during vLLM's memory profiling: another process allocated or freed GPU memory."
	}
	return ""
}

func vllmMissingSummary(msg string) string {
	switch {
	case strings.Contains(msg, "Invalid repository ID or local directory"):
		if m := reVLLMQuoted.FindStringSubmatch(msg); m != nil {
			return fmt.Sprintf("%s is not a model directory with a config.json (nor a repository id).", m[1])
		}
	case strings.Contains(msg, "Could not detect config format"):
		return "The model directory has neither config.json (HF format) nor params.json (Mistral format)."
	}
	return ""
}

func vllmArchSummary(msg string) string {
	if m := reVLLMArchUntil.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("This engine version no longer supports %s (vLLM supported it until %s).", m[1], m[2])
	}
	return ""
}
