package logdiag

import (
	"regexp"
	"strings"
)

// phase is how far a start got, read from the engines' progress lines. It
// tells an out-of-memory error while loading weights from one while
// capturing CUDA graphs.
type phase int

const (
	phaseNone phase = iota
	phaseWeights
	phaseWeightsDone
	phaseProfile
	phaseCapture
	phaseCaptureDone
	phaseServing
)

func (p phase) String() string {
	return [...]string{
		"starting", "loading the weights", "done loading the weights", "profiling memory and allocating the KV cache",
		"capturing CUDA graphs", "warming up after CUDA graph capture", "serving",
	}[p]
}

// phaseKeys lists the progress lines of vLLM (V0 and V1) and SGLang, in the
// order a start goes through them.
var phaseKeys = []struct {
	p    phase
	keys []string
}{
	{phaseServing, []string{"Starting vLLM API server", "Application startup complete", "The server is fired up and ready to roll", "Uvicorn running on"}},
	{phaseCaptureDone, []string{"Graph capturing finished", "Capture cuda graph end", "init engine (profile, create kv cache, warmup model) took"}},
	{phaseCapture, []string{"Capturing CUDA graph", "Capturing cudagraphs", "Capturing the model for CUDA graphs", "Capture cuda graph begin", "Capturing batches (", "Profiling CUDA graph memory", "CUDA graphs can take additional"}},
	{phaseProfile, []string{"Memory profiling takes", "Memory profiling results", "Available KV cache memory", "GPU KV cache size", "# GPU blocks", "# cuda blocks", "KV Cache is allocated", "Memory pool end", "the current vLLM instance can use"}},
	{phaseWeightsDone, []string{"Model loading took", "Loading model weights took", "Loading weights took", "Load weight end"}},
	{phaseWeights, []string{"Starting to load model", "Loading safetensors checkpoint shards", "Loading pt checkpoint shards", "Load weight begin", "Loading weights with"}},
}

func lineKeyPhase(m string) phase {
	if isCodeLine(m) {
		return phaseNone
	}
	for _, pk := range phaseKeys {
		if containsAny(m, pk.keys) {
			return pk.p
		}
	}
	return phaseNone
}

// Function names in traceback frames, outermost first, that say what the
// process was doing. _dummy_run is missing on purpose: both the profile run
// and the graph capture call it, and the outer frame tells them apart.
var (
	captureFuncs = set("capture_model", "_capture_cudagraphs", "capture_one_batch_size", "capture",
		"init_cuda_graphs", "init_device_graphs", "compile_or_warm_up_model", "capture_begin", "capture_end",
		"graph_capture", "profile_cudagraph_memory")
	weightFuncs = set("load_model", "load_weights", "weight_loader", "create_weights", "_init_model",
		"initialize_model", "_initialize_model", "make_layers", "process_weights_after_loading",
		"_process_weights_after_loading", "get_model")
	profileFuncs = set("profile_run", "_dummy_sampler_run", "determine_available_memory",
		"determine_num_available_blocks", "initialize_kv_cache", "_allocate_kv_cache_tensors",
		"initialize_cache", "_init_cache_engine", "init_memory_pool", "profile_max_num_token")
)

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

var reFrame = regexp.MustCompile(`^\s*File "([^"]*)", line \d+, in (\S+)`)

// oomPhase decides what the process was doing when the out-of-memory error
// on lines[i] was raised, and returns the line that shows it (-1 if none).
func oomPhase(lines []line, i int) (phase, int) {
	m := lines[i].msg
	if strings.Contains(m, "weights") {
		// "Failed to create unquantized linear weights: CUDA out of memory..."
		return phaseWeights, -1
	}
	if strings.Contains(m, "Capture cuda graph failed") || strings.Contains(m, "capture") {
		return phaseCapture, -1
	}
	lp, lat := logPhase(lines, i)
	if p, at := framePhase(lines, i); p != phaseNone {
		// The engine's own progress line reads better than a frame when
		// both say the same.
		if lp == p || (p == phaseWeights && lp == phaseNone) {
			if lat >= 0 {
				return p, lat
			}
		}
		return p, at
	}
	return lp, lat
}

// framePhase reads the traceback that ends at lines[i] (same process only)
// and returns the phase named by its outermost telling frame.
func framePhase(lines []line, i int) (phase, int) {
	proc := lines[i].proc
	var frames []int
	for j := i - 1; j >= 0 && i-j <= 600; j-- {
		l := &lines[j]
		if proc != "" && l.proc != proc {
			continue
		}
		if strings.Contains(l.msg, "Traceback (most recent call last)") {
			break
		}
		if strings.HasPrefix(strings.TrimLeft(l.msg, " "), "File \"") {
			frames = append(frames, j)
		}
	}
	// frames are innermost first; walk from the outermost.
	for k := len(frames) - 1; k >= 0; k-- {
		j := frames[k]
		fm := reFrame.FindStringSubmatch(lines[j].msg)
		if fm == nil {
			continue
		}
		file, fn := fm[1], fm[2]
		switch {
		case captureFuncs[fn] || strings.HasSuffix(file, "cuda/graphs.py") || strings.HasSuffix(file, "cuda_graph_runner.py"):
			return phaseCapture, j
		case weightFuncs[fn]:
			return phaseWeights, j
		case profileFuncs[fn]:
			return phaseProfile, j
		}
	}
	return phaseNone, -1
}

// logPhase returns the furthest phase the progress lines before lines[i]
// reached, from the same process (and unprefixed progress bars) when that
// process logged progress itself: the ranks of a tensor-parallel group do not
// finish loading together.
func logPhase(lines []line, i int) (phase, int) {
	best, at := phaseNone, -1
	sameBest, sameAt := phaseNone, -1
	proc := lines[i].proc
	for j := 0; j < i; j++ {
		p := lineKeyPhase(lines[j].msg)
		if p == phaseNone {
			continue
		}
		if p >= best {
			best, at = p, j
		}
		// Progress bars (tqdm) carry no process prefix: they count as the
		// same process.
		if proc != "" && (lines[j].proc == proc || lines[j].proc == "") && p >= sameBest {
			sameBest, sameAt = p, j
		}
	}
	if sameBest != phaseNone {
		return sameBest, sameAt
	}
	return best, at
}

// furthestPhase is the phase the whole log reached.
func furthestPhase(lines []line) phase {
	best := phaseNone
	for i := range lines {
		best = max(best, lineKeyPhase(lines[i].msg))
	}
	return best
}

// weightsAfter looks at the few lines after an out-of-memory error for a
// weight-loading progress bar (tqdm flushes it after the error is printed).
func weightsAfter(lines []line, i int) (phase, int) {
	for j := i + 1; j < len(lines) && j <= i+8; j++ {
		if lineKeyPhase(lines[j].msg) == phaseWeights {
			return phaseWeights, j
		}
	}
	return phaseNone, -1
}
