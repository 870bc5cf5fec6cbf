package logdiag

import (
	"regexp"
	"slices"
	"strings"
)

// Rule recognises one log line of a failure class. Texts are quoted from
// the engines' sources and from public issue threads (see engines.md §8).
// The rules every engine shares are here (argparse, ports, model files,
// CUDA, NCCL, out of memory); an engine kind adds its own (Rules).
type Rule struct {
	Class string
	// Keys: the message must contain one of them. Cheap, so most lines are
	// rejected without running a regexp.
	Keys []string
	Re   *regexp.Regexp // when set, must also match
	// Weak rules are hints (warnings, consequences that usually have a cause
	// printed elsewhere): used only when no strong rule matched.
	Weak bool
	// Secondary classes are often the echo of another rank's failure (a rank
	// that dies makes NCCL fail on the others): any other strong match wins.
	Secondary bool
	// Context: the last line before the matched one that holds one of these
	// is shown too (the KV cache the engine found, the weights it loaded).
	Context []string
	// Summary says in one line what the matched message says, with its
	// figures; "" (or nil) leaves the class's summary.
	Summary func(msg string) string
}

// Rules are what one engine kind's logs add to the shared rules.
type Rules struct {
	// Kind names the engine in Footprint.Engine.
	Kind string
	// Failures are the kind's own failure lines.
	Failures []Rule
	// Starts are printed once at the beginning of each launch; a log that
	// holds several launches is classified from the last one.
	Starts []string
	// Consequences mark the end of a failed start without naming its cause.
	Consequences []string
	// Footprint reads the memory figures of a start.
	Footprint []FootprintLine
	// Progress are the kind's progress lines, Frames the functions and files
	// of its tracebacks, OOMWhile the words of an out-of-memory message,
	// that show the stage a start was in: they place an out-of-memory error.
	Progress []Stage
	Frames   []Frame
	OOMWhile []Stage
}

// Classifier classifies logs with the shared rules and those of some engine
// kinds (engine.Kind builds one per kind, and one of every kind for a log
// whose engine is not known).
type Classifier struct {
	rules               []Rule
	starts, consequence []string
	footprint           []kindLine
	footprintHints      [][]byte
	phases              phases
}

// New returns the classifier of the shared rules and of kinds' rules. A line
// is named by the first rule that matches, tried class by class (order),
// the shared rules first within a class, then the kinds' in the order given.
func New(kinds ...Rules) *Classifier {
	c := &Classifier{rules: slices.Clone(shared)}
	for _, k := range kinds {
		c.rules = append(c.rules, k.Failures...)
		c.starts = append(c.starts, k.Starts...)
		c.consequence = append(c.consequence, k.Consequences...)
		for _, f := range k.Footprint {
			c.footprint = append(c.footprint, kindLine{k.Kind, f})
		}
	}
	slices.SortStableFunc(c.rules, func(a, b Rule) int { return rank(a.Class) - rank(b.Class) })
	c.phases = newPhases(kinds)
	// Every line of a log is tested for each hint: each once.
	var hints []string
	for _, f := range c.footprint {
		hints = append(hints, f.Hint)
	}
	for _, h := range append(slices.Clone(c.starts), hints...) {
		if !slices.ContainsFunc(c.footprintHints, func(b []byte) bool { return string(b) == h }) {
			c.footprintHints = append(c.footprintHints, []byte(h))
		}
	}
	return c
}

// order is the order in which rules of each class are tried: nothing runs
// after argument parsing fails, and an out-of-memory error is often the
// consequence of a cause printed with it, so its rules come last of all. A
// class not listed comes after the listed ones.
var order = []string{BadFlag, KVTooSmall, NoKVMemory, FreeMemBelowUtil, SGLangMemFraction, PortInUse,
	MissingFiles, UnsupportedArch, DriverMismatch, NCCLError}

func rank(class string) int {
	if class == classOOM {
		return len(order) + 1
	}
	if i := slices.Index(order, class); i >= 0 {
		return i
	}
	return len(order)
}

// classOOM is the internal class of a CUDA out-of-memory line: what the log
// was doing at the time decides between oom_weights, oom_cudagraph and
// unknown.
const classOOM = "oom"

// shared are the rules of messages every engine prints: Python's argparse,
// the socket layer, Hugging Face and safetensors, CUDA, torch and NCCL.
var shared = []Rule{
	// Argument parsing comes first: nothing else runs after it fails.
	{Class: BadFlag, Keys: []string{": error: "}, Re: regexp.MustCompile(`: error: (?:unrecognized arguments|argument |the following arguments are required|ambiguous option|unrecognized|invalid choice)`)},

	{Class: PortInUse, Keys: []string{"Address already in use", "address already in use", "EADDRINUSE", "[Errno 98]"}},

	{Class: MissingFiles, Keys: []string{
		"does not appear to have a file named", "Cannot find any model weights", "Can't load tokenizer",
		"Can't load the configuration of", "is not a local folder and is not a valid model identifier",
		"couldn't connect to 'https://huggingface.co'", "outgoing traffic has been disabled",
		"SafetensorError", "HFValidationError", "Repo id must be in the form", "MetadataIncompleteBuffer",
		"incomplete metadata, file not fully covered",
	}},
	{Class: MissingFiles, Keys: []string{"No such file or directory"}, Re: regexp.MustCompile(`No such file or directory: '[^']*(?:\.json|\.safetensors|\.bin|\.pt|\.pth|\.model|\.tiktoken|\.gguf|tokenizer[^'/]*)'`)},

	{Class: UnsupportedArch, Keys: []string{"does not recognize this architecture"}},

	{Class: DriverMismatch, Keys: []string{
		"no kernel image is available", "CUDA driver version is insufficient", "driver on your system is too old",
		"Found no NVIDIA driver", "forward compatibility was attempted on non supported HW",
		"unsupported display driver / cuda driver combination", "unsupported PTX version",
		"cudaErrorUnsupportedPtxVersion", "cudaErrorNoKernelImageForDevice", "cudaErrorInsufficientDriver",
	}},
	{Class: DriverMismatch, Keys: []string{"undefined symbol"}, Re: regexp.MustCompile(`(?:ImportError|OSError).*undefined symbol`)},
	{Class: DriverMismatch, Keys: []string{"cannot open shared object file"}, Re: regexp.MustCompile(`lib(?:cuda|cudart|cublas|nvidia-ml|nccl)[\w.\-]*: cannot open shared object file`)},
	{Class: DriverMismatch, Keys: []string{"is not compatible with the current PyTorch installation"}, Weak: true},

	{Class: NCCLError, Secondary: true, Keys: []string{
		"NCCL error", "ncclSystemError", "ncclUnhandledCudaError", "ncclInternalError", "ncclInvalidUsage",
		"ncclRemoteError", "ncclInvalidArgument", "Watchdog caught collective operation timeout", "DistStoreError",
	}},
	{Class: NCCLError, Keys: []string{"NCCL WARN"}, Weak: true},

	{Class: classOOM, Keys: []string{
		"CUDA out of memory", "OutOfMemoryError", "CUDA error: out of memory", "CUDA driver error: out of memory",
		"cudaErrorMemoryAllocation", "CUBLAS_STATUS_ALLOC_FAILED",
	}},
}

// match returns the first rule that matches l, or nil.
func (c *Classifier) match(l *line) (*Rule, string) {
	m := l.msg
	// Source lines of traceback frames quote the code that raised, which may
	// hold the very message a rule looks for; the message itself follows.
	if isCodeLine(m) {
		return nil, ""
	}
	for i := range c.rules {
		r := &c.rules[i]
		key := ""
		for _, k := range r.Keys {
			if strings.Contains(m, k) {
				key = k
				break
			}
		}
		if key == "" {
			continue
		}
		if r.Re != nil {
			loc := r.Re.FindStringIndex(m)
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
