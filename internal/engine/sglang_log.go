package engine

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/roofline/roofline/internal/engine/kinds"
	"github.com/roofline/roofline/internal/engine/logdiag"
)

// sglangLogs are the lines of SGLang's own log that name a failed start's
// cause, show how far a start got, or give its memory figures; texts quoted from SGLang's sources and
// public issue threads (engines.md §8, vram.md §3). SGLang prints "GB" but
// divides by 2^30. What every engine prints is logdiag's.
var sglangLogs = logdiag.Rules{
	Kind: kinds.SGLang,
	Failures: []logdiag.Rule{
		{Class: logdiag.BadFlag, Keys: []string{"User-specified context_length"}},
		{Class: logdiag.FreeMemBelowUtil, Keys: []string{"The memory capacity is unbalanced"},
			Summary: func(string) string {
				return "Free GPU memory differs between the tensor-parallel GPUs: some are used by other processes."
			}},
		{Class: logdiag.SGLangMemFraction, Keys: []string{"Please try to increase --mem-fraction-static", "leave no GPU memory for the KV cache"}, Context: []string{"Load weight end"}, Summary: sglangFractionSummary},
		{Class: logdiag.PortInUse, Keys: []string{"Port is already in use"},
			Summary: func(string) string { return "One of SGLang's internal ports is already in use." }},
		{Class: logdiag.UnsupportedArch, Keys: []string{"are not supported for now", "is not supported for now"}},
	},
	Starts:       []string{"server_args=ServerArgs("},
	Consequences: []string{"Received sigquit from a child process", "Scheduler hit an exception"},
	Progress: []logdiag.Stage{
		{Phase: logdiag.PhaseServing, Keys: []string{"The server is fired up and ready to roll"}},
		{Phase: logdiag.PhaseCaptureDone, Keys: []string{"Capture cuda graph end"}},
		{Phase: logdiag.PhaseCapture, Keys: []string{"Capture cuda graph begin", "Capturing batches ("}},
		{Phase: logdiag.PhaseProfile, Keys: []string{"KV Cache is allocated", "Memory pool end"}},
		{Phase: logdiag.PhaseWeightsDone, Keys: []string{"Load weight end"}},
		{Phase: logdiag.PhaseWeights, Keys: []string{"Load weight begin"}},
	},
	Frames: []logdiag.Frame{
		{Phase: logdiag.PhaseCapture, Funcs: []string{"capture_one_batch_size", "init_cuda_graphs", "init_device_graphs"}, Files: []string{"cuda_graph_runner.py"}},
		{Phase: logdiag.PhaseProfile, Funcs: []string{"init_memory_pool", "profile_max_num_token"}},
	},
	OOMWhile: []logdiag.Stage{{Phase: logdiag.PhaseCapture, Keys: []string{"Capture cuda graph failed"}}},
	Footprint: []logdiag.FootprintLine{
		{Hint: "Load weight end", Re: regexp.MustCompile(`Load weight end\..*mem usage=([\d.]+) ?GB`),
			Read: func(r *logdiag.Reading, m []string) { r.Weights(m[1]) }},
		// The KV pool: K and V apart, or one KV size with MLA. Its token
		// count is second to the scheduler's max_total_num_tokens.
		{Hint: "KV Cache is allocated", Re: regexp.MustCompile(`KV Cache is allocated\. #tokens: (\d+), (?:K size: ([\d.]+) GB, V size: ([\d.]+) GB|KV size: ([\d.]+) GB)`),
			Read: func(r *logdiag.Reading, m []string) {
				if m[4] != "" {
					r.KVCache(m[4])
				} else {
					r.KVCache(m[2], m[3])
				}
				r.KVTokens(m[1], 1)
			}},
		// The scheduler's line (Hint: only that line's context_len and
		// max_running_requests count).
		{Hint: "max_total_num_tokens=", Re: regexp.MustCompile(`max_total_num_tokens=(\d+)`),
			Read: func(r *logdiag.Reading, m []string) { r.KVTokens(m[1], 0) }},
		{Hint: "max_total_num_tokens=", Re: regexp.MustCompile(`context_len=(\d+)`),
			Read: func(r *logdiag.Reading, m []string) { r.MaxModelLen(m[1], 0) }},
		{Hint: "max_total_num_tokens=", Re: regexp.MustCompile(`max_running_requests=(\d+)`),
			Read: func(r *logdiag.Reading, m []string) { r.MaxRunningRequests(m[1]) }},
		{Hint: "Capture cuda graph end", Re: regexp.MustCompile(`Capture cuda graph end\..*mem usage=([\d.]+) ?GB`),
			Read: func(r *logdiag.Reading, m []string) { r.CUDAGraph(m[1]) }},
	},
}

// Numbers quoted from SGLang's messages, for one-line summaries.
var (
	reSGLangFraction = regexp.MustCompile(`mem[_-]fraction[_-]static=([\d.]+)`)
)

func sglangFractionSummary(msg string) string {
	if m := reSGLangFraction.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("SGLang found no memory for the KV cache at mem_fraction_static=%s after loading the weights.", strings.TrimRight(m[1], "."))
	}
	return ""
}
