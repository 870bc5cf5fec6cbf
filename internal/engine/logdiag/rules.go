package logdiag

import (
	"regexp"
	"strings"
)

// rule recognises one log line of a class. Texts are quoted from the engines'
// sources and from public issue threads (see engines.md §8).
type rule struct {
	class string
	// keys: the message must contain one of them. Cheap, so most lines are
	// rejected without running a regexp.
	keys []string
	re   *regexp.Regexp // when set, must also match
	// weak rules are hints (warnings, consequences that usually have a cause
	// printed elsewhere): used only when no strong rule matched.
	weak bool
	// secondary classes are often the echo of another rank's failure (a rank
	// that dies makes NCCL fail on the others): any other strong match wins.
	secondary bool
}

// classOOM is the internal class of a CUDA out-of-memory line: what the log
// was doing at the time decides between oom_weights, oom_cudagraph and
// unknown.
const classOOM = "oom"

var rules = []rule{
	// Argument parsing comes first: nothing else runs after it fails.
	{class: BadFlag, keys: []string{": error: "}, re: regexp.MustCompile(`: error: (?:unrecognized arguments|argument |the following arguments are required|ambiguous option|unrecognized|invalid choice)`)},
	{class: BadFlag, keys: []string{"invalid tool call parser", "invalid reasoning parser"}},
	{class: BadFlag, keys: []string{"User-specified max_model_len", "User-specified context_length"}},
	{class: BadFlag, keys: []string{"requires --tool-call-parser", "is smaller than max_model_len"}},
	{class: BadFlag, keys: []string{"validation error for "}, re: regexp.MustCompile(`validation error for \w*(?:Config|Args)\b`), weak: true},

	{class: KVTooSmall, keys: []string{"To serve at least one request with the model"}},
	{class: KVTooSmall, keys: []string{"is larger than the maximum number of tokens that can be stored in KV cache"}},
	{class: NoKVMemory, keys: []string{"No available memory for the cache blocks"}},
	{class: FreeMemBelowUtil, keys: []string{"on startup is less than desired GPU memory utilization", "The memory capacity is unbalanced", "Error in memory profiling. Initial free memory"}},
	{class: SGLangMemFraction, keys: []string{"Please try to increase --mem-fraction-static", "leave no GPU memory for the KV cache"}},

	{class: PortInUse, keys: []string{"Address already in use", "address already in use", "EADDRINUSE", "[Errno 98]", "Port is already in use"}},

	{class: MissingFiles, keys: []string{
		"Invalid repository ID or local directory", "does not appear to have a file named",
		"Could not detect config format", "Cannot find any model weights", "Can't load tokenizer",
		"Can't load the configuration of", "is not a local folder and is not a valid model identifier",
		"couldn't connect to 'https://huggingface.co'", "outgoing traffic has been disabled",
		"SafetensorError", "HFValidationError", "Repo id must be in the form", "MetadataIncompleteBuffer",
		"incomplete metadata, file not fully covered",
	}},
	{class: MissingFiles, keys: []string{"No such file or directory"}, re: regexp.MustCompile(`No such file or directory: '[^']*(?:\.json|\.safetensors|\.bin|\.pt|\.pth|\.model|\.tiktoken|\.gguf|tokenizer[^'/]*)'`)},

	{class: UnsupportedArch, keys: []string{"are not supported for now", "is not supported for now", "was supported in vLLM until", "does not recognize this architecture"}},
	{class: UnsupportedArch, keys: []string{"failed to be inspected"}, weak: true},

	{class: DriverMismatch, keys: []string{
		"no kernel image is available", "CUDA driver version is insufficient", "driver on your system is too old",
		"Found no NVIDIA driver", "forward compatibility was attempted on non supported HW",
		"unsupported display driver / cuda driver combination", "unsupported PTX version",
		"cudaErrorUnsupportedPtxVersion", "cudaErrorNoKernelImageForDevice", "cudaErrorInsufficientDriver",
	}},
	{class: DriverMismatch, keys: []string{"undefined symbol"}, re: regexp.MustCompile(`(?:ImportError|OSError).*undefined symbol`)},
	{class: DriverMismatch, keys: []string{"cannot open shared object file"}, re: regexp.MustCompile(`lib(?:cuda|cudart|cublas|nvidia-ml|nccl)[\w.\-]*: cannot open shared object file`)},
	{class: DriverMismatch, keys: []string{"is not compatible with the current PyTorch installation"}, weak: true},

	{class: NCCLError, secondary: true, keys: []string{
		"NCCL error", "ncclSystemError", "ncclUnhandledCudaError", "ncclInternalError", "ncclInvalidUsage",
		"ncclRemoteError", "ncclInvalidArgument", "Watchdog caught collective operation timeout", "DistStoreError",
	}},
	{class: NCCLError, keys: []string{"NCCL WARN"}, weak: true},

	{class: classOOM, keys: []string{
		"CUDA out of memory", "OutOfMemoryError", "CUDA error: out of memory", "CUDA driver error: out of memory",
		"cudaErrorMemoryAllocation", "CUBLAS_STATUS_ALLOC_FAILED",
	}},
}

// consequenceKeys mark the end of a failed start without naming its cause.
var consequenceKeys = []string{
	"Engine core initialization failed", "EngineCore failed to start", "Received sigquit from a child process",
	"Scheduler hit an exception", "WorkerProc failed to start", "WorkerProc initialization failed",
	"Worker failed with error", "Exception in worker",
}

// startKeys are printed once at the beginning of each launch; a log that
// holds several launches is classified from the last one.
var startKeys = []string{"vLLM API server version", "server_args=ServerArgs("}

// match returns the first rule that matches l, or nil.
func match(l *line) (*rule, string) {
	m := l.msg
	// Source lines of traceback frames quote the code that raised, which may
	// hold the very message a rule looks for; the message itself follows.
	if isCodeLine(m) {
		return nil, ""
	}
	for i := range rules {
		r := &rules[i]
		key := ""
		for _, k := range r.keys {
			if strings.Contains(m, k) {
				key = k
				break
			}
		}
		if key == "" {
			continue
		}
		if r.re != nil {
			loc := r.re.FindStringIndex(m)
			if loc == nil {
				continue
			}
			key = m[loc[0]:loc[1]]
		}
		return r, key
	}
	return nil, ""
}

// isCodeLine reports a traceback frame or source line ("  File ...",
// "    raise ValueError(", "    ^^^^").
func isCodeLine(m string) bool {
	return strings.HasPrefix(m, "    ") || strings.HasPrefix(m, "\t") || strings.HasPrefix(m, "  File \"")
}

func containsAny(s string, keys []string) bool {
	for _, k := range keys {
		if strings.Contains(s, k) {
			return true
		}
	}
	return false
}
