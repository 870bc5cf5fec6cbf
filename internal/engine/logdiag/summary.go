package logdiag

import (
	"fmt"
	"regexp"
	"strings"
)

// Numbers and names quoted from the engines' messages, for one-line
// summaries. Every pattern is optional: a message in a format not seen yet
// still gets the class's generic summary.
var (
	reOOMDetail     = regexp.MustCompile(`Tried to allocate ([\d.]+ [KMGT]?i?B)\.? GPU (\d+) has a total capacity of ([\d.]+ [KMGT]?i?B) of which ([\d.]+ [KMGT]?i?B) is free`)
	reBindAddr      = regexp.MustCompile(`bind on address \('([^']*)', (\d+)\)`)
	reZMQAddr       = regexp.MustCompile(`addr='([^']+)'`)
	reQuoted        = regexp.MustCompile(`'([^']+)'`)
	reNoFileNamed   = regexp.MustCompile(`(\S+) does not appear to have a file named (\S+)`)
	reTokenizerFor  = regexp.MustCompile(`Can't load tokenizer for '([^']+)'`)
	reModelType     = regexp.MustCompile("has model type `([^`]+)` but Transformers does not recognize")
	reArchs         = regexp.MustCompile(`architectures? (\[[^\]]*\])`)
	reArgparse      = regexp.MustCompile(`: error: (.*)$`)
	reUserLen       = regexp.MustCompile(`User-specified (\w+) \((\d+)\) is greater than the derived \w+ \(([^)]*)\)`)
	reNCCL          = regexp.MustCompile(`NCCL error:? (.*)$`)
	reExceptionHead = regexp.MustCompile(`^[\w.]*(?:Error|Exception): `)
)

// summary is the one-line summary of msg, which r matched: the rule's own
// when it has one for msg, else its class's.
func summary(r *Rule, class, msg string) string {
	if r.Summary != nil {
		if s := r.Summary(msg); s != "" {
			return s
		}
	}
	return summarize(class, msg)
}

func summarize(class, msg string) string {
	switch class {
	case OOMWeights:
		return "CUDA ran out of memory while loading the weights" + oomDetail(msg) + "."
	case OOMCUDAGraph:
		return "CUDA ran out of memory while capturing CUDA graphs" + oomDetail(msg) + "."
	case KVTooSmall:
		return "The KV cache cannot hold one request of max_model_len."
	case NoKVMemory:
		return "No GPU memory is left for the KV cache after the weights and the profiling peak."
	case FreeMemBelowUtil:
		return "Less GPU memory is free at start than the engine was told to use."
	case PortInUse:
		if m := reBindAddr.FindStringSubmatch(msg); m != nil {
			return fmt.Sprintf("Port %s (%s) is already in use.", m[2], m[1])
		}
		if strings.Contains(msg, "EADDRINUSE") || strings.Contains(msg, "server socket has failed to listen") {
			return "A torch.distributed port (not the HTTP port) is already in use: another engine on this host, or a leftover process."
		}
		if m := reZMQAddr.FindStringSubmatch(msg); m != nil {
			return fmt.Sprintf("The engine's internal address %s is already in use.", m[1])
		}
		return "An address the engine binds to is already in use (the HTTP port, unless the message names another)."
	case MissingFiles:
		switch {
		case reNoFileNamed.MatchString(msg):
			m := reNoFileNamed.FindStringSubmatch(msg)
			return fmt.Sprintf("%s has no %s.", m[1], strings.TrimRight(m[2], "."))
		case strings.Contains(msg, "Can't load tokenizer"):
			if m := reTokenizerFor.FindStringSubmatch(msg); m != nil {
				return fmt.Sprintf("The tokenizer files of %s are missing or unreadable.", m[1])
			}
		case strings.Contains(msg, "SafetensorError"), strings.Contains(msg, "MetadataIncompleteBuffer"), strings.Contains(msg, "incomplete metadata"):
			return "A safetensors file is truncated or damaged: " + shortMessage(msg) + "."
		case strings.Contains(msg, "No such file or directory"):
			if m := reQuoted.FindStringSubmatch(msg); m != nil {
				return fmt.Sprintf("File %s does not exist.", m[1])
			}
		}
		return "Model files are missing or incomplete: " + shortMessage(msg) + "."
	case UnsupportedArch:
		if m := reModelType.FindStringSubmatch(msg); m != nil {
			return fmt.Sprintf("The transformers library of this engine does not know model type %s: the engine is older than the model.", m[1])
		}
		if m := reArchs.FindStringSubmatch(msg); m != nil {
			return fmt.Sprintf("This engine version does not support the model architecture %s.", m[1])
		}
		return "This engine version does not support the model: " + shortMessage(msg) + "."
	case DriverMismatch:
		switch {
		case strings.Contains(msg, "no kernel image"), strings.Contains(msg, "NoKernelImage"):
			return "The engine's kernels were not built for this GPU's architecture (no kernel image)."
		case strings.Contains(msg, "insufficient"), strings.Contains(msg, "too old"), strings.Contains(msg, "InsufficientDriver"):
			return "The NVIDIA driver is older than the CUDA runtime the engine needs."
		case strings.Contains(msg, "undefined symbol"):
			return "A compiled extension does not match the installed torch or CUDA (undefined symbol)."
		}
		return "Driver, CUDA or torch do not match: " + shortMessage(msg) + "."
	case NCCLError:
		if m := reNCCL.FindStringSubmatch(msg); m != nil {
			return "NCCL failed while setting up tensor parallelism: " + clip(m[1], 160) + "."
		}
		return "NCCL failed: " + shortMessage(msg) + "."
	case BadFlag:
		// "User-specified max_model_len (N) is greater than the derived ..."
		// (vLLM; SGLang's says context_length).
		if m := reUserLen.FindStringSubmatch(msg); m != nil {
			return fmt.Sprintf("%s %s is above the model's limit (%s).", m[1], m[2], m[3])
		}
		if m := reArgparse.FindStringSubmatch(msg); m != nil {
			return "The engine's argument parser refused the command line: " + clip(m[1], 200) + "."
		}
		return "The engine refused its arguments: " + shortMessage(msg) + "."
	case SGLangMemFraction:
		return "SGLang found no memory for the KV cache under mem_fraction_static after loading the weights."
	}
	return shortMessage(msg)
}

func oomDetail(msg string) string {
	if m := reOOMDetail.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf(" (GPU %s: %s free of %s, tried to allocate %s)", m[2], m[4], m[3], m[1])
	}
	return ""
}

// shortMessage is an exception message without its type, cut to one line.
func shortMessage(msg string) string {
	m := strings.TrimSpace(msg)
	if loc := reExceptionHead.FindStringIndex(m); loc != nil {
		m = m[loc[1]:]
	}
	return clip(strings.TrimRight(m, "."), 200)
}

func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
