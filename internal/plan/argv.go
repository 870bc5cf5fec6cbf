package plan

import (
	"slices"
	"strings"
)

// flagAttrs maps engine flags back to the configuration attribute that
// renders them, so a plan says "max_model_len changed", not a flag name.
var flagAttrs = map[string]string{
	"--served-model-name":        "served_name",
	"--tensor-parallel-size":     "tensor_parallel",
	"--tp-size":                  "tensor_parallel",
	"--pipeline-parallel-size":   "pipeline_parallel",
	"--pp-size":                  "pipeline_parallel",
	"--max-model-len":            "max_model_len",
	"--context-length":           "max_model_len",
	"--gpu-memory-utilization":   "gpu_memory_utilization",
	"--mem-fraction-static":      "gpu_memory_utilization",
	"--tool-call-parser":         "tool_call_parser",
	"--enable-auto-tool-choice":  "tool_call_parser",
	"--reasoning-parser":         "reasoning_parser",
	"--enable-reasoning":         "reasoning_parser",
	"--chat-template":            "chat_template",
	"--quantization":             "quantization",
	"--kv-cache-dtype":           "kv_cache_dtype",
	"--max-num-seqs":             "max_num_seqs",
	"--max-running-requests":     "max_num_seqs",
	"--max-num-batched-tokens":   "max_num_batched_tokens",
	"--chunked-prefill-size":     "chunked_prefill_size",
	"--enforce-eager":            "enforce_eager",
	"--disable-cuda-graph":       "enforce_eager",
	"--enable-prefix-caching":    "enable_prefix_caching",
	"--no-enable-prefix-caching": "enable_prefix_caching",
	"--disable-radix-cache":      "enable_prefix_caching",
	"--speculative-config":       "speculative_config",
	"--host":                     "host",
	"--port":                     "port",
	"--model-path":               "model",
}

// Flag is one option of an argv with its values.
type Flag struct {
	Name   string
	Values []string
}

// ParseArgv splits an engine argv (after the command prefix) into positional
// words and flags, in order. A word that starts with "-" followed by a digit is
// a value (SGLang's --chunked-prefill-size -1).
func ParseArgv(argv []string) (positional []string, flags []Flag) {
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		if !isFlag(a) {
			if len(flags) > 0 {
				flags[len(flags)-1].Values = append(flags[len(flags)-1].Values, a)
			} else {
				positional = append(positional, a)
			}
			continue
		}
		name, val, hasVal := strings.Cut(a, "=")
		f := Flag{Name: name}
		if hasVal {
			f.Values = []string{val}
		}
		flags = append(flags, f)
	}
	return
}

func isFlag(a string) bool {
	if len(a) < 2 || a[0] != '-' {
		return false
	}
	if a[1] >= '0' && a[1] <= '9' || a[1] == '.' {
		return false
	}
	return true
}

// ArgvDiffFlags returns the attributes (or flags, for extra_args) whose
// values differ between two argvs.
func ArgvDiffFlags(a, b []string) []string {
	fa, fb := flagValues(a), flagValues(b)
	var out []string
	for name, va := range fa {
		if vb, ok := fb[name]; !ok || !slices.Equal(va, vb) {
			out = append(out, attrOf(name))
		}
	}
	for name := range fb {
		if _, ok := fa[name]; !ok {
			out = append(out, attrOf(name))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func attrOf(flag string) string {
	if a, ok := flagAttrs[flag]; ok {
		return a
	}
	return "extra_args " + flag
}

func flagValues(argv []string) map[string][]string {
	_, flags := ParseArgv(argv)
	out := map[string][]string{}
	for _, f := range flags {
		out[f.Name] = append(out[f.Name], f.Values...)
		if len(f.Values) == 0 {
			out[f.Name] = append(out[f.Name], "")
		}
	}
	return out
}

// ArgvLines renders an argv as one line per flag with its values, for the
// flag-by-flag diff in the human plan.
func ArgvLines(argv []string) []string {
	pos, flags := ParseArgv(argv)
	var out []string
	if len(pos) > 0 {
		out = append(out, strings.Join(pos, " "))
	}
	for _, f := range flags {
		out = append(out, strings.TrimSpace(f.Name+" "+strings.Join(f.Values, " ")))
	}
	return out
}
