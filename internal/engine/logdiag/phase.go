package logdiag

import (
	"regexp"
	"slices"
	"strings"
)

// Phase is how far a start got, read from the engines' progress lines. It
// tells an out-of-memory error while loading weights from one while
// capturing CUDA graphs.
type Phase int

const (
	PhaseNone Phase = iota
	PhaseWeights
	PhaseWeightsDone
	PhaseProfile
	PhaseCapture
	PhaseCaptureDone
	PhaseServing
)

func (p Phase) String() string {
	return [...]string{
		"starting", "loading the weights", "done loading the weights", "profiling memory and allocating the KV cache",
		"capturing CUDA graphs", "warming up after CUDA graph capture", "serving",
	}[p]
}

// Stage is a stage of a start and the words that show it: progress lines
// (Rules.Progress), or the message of an out-of-memory error (Rules.OOMWhile).
type Stage struct {
	Phase Phase
	Keys  []string
}

// Frame names, in a traceback, the stage its process was in: the functions
// and the source files (path suffixes) of that stage.
type Frame struct {
	Phase Phase
	Funcs []string
	Files []string
}

// sharedProgress are the progress lines of code every engine runs:
// uvicorn, and the safetensors loader both engines inherited.
var sharedProgress = []Stage{
	{PhaseServing, []string{"Application startup complete", "Uvicorn running on"}},
	{PhaseWeights, []string{"Loading safetensors checkpoint shards", "Loading pt checkpoint shards", "Loading weights with"}},
}

// sharedFrames are torch's CUDA graph capture and the model loader both
// engines inherited. _dummy_run is missing on purpose: both the profile
// run and the graph capture call it, and the outer frame tells them apart.
var sharedFrames = []Frame{
	{Phase: PhaseCapture, Funcs: []string{"capture", "capture_begin", "capture_end", "graph_capture"}, Files: []string{"cuda/graphs.py"}},
	{Phase: PhaseWeights, Funcs: []string{"load_model", "load_weights", "weight_loader", "create_weights", "_init_model",
		"initialize_model", "_initialize_model", "make_layers", "process_weights_after_loading",
		"_process_weights_after_loading", "get_model"}},
}

// sharedOOMWhile: an out-of-memory message that says where it ran out
// ("Failed to create unquantized linear weights: CUDA out of memory...").
var sharedOOMWhile = []Stage{
	{PhaseWeights, []string{"weights"}},
	{PhaseCapture, []string{"capture"}},
}

// phases is what a classifier knows of the stages of a start.
type phases struct {
	progress []Stage // furthest phase first
	oomWhile []Stage // in the order they are tried
	frames   []Frame // Capture, then Weights, then Profile: the first that names a frame wins
}

func newPhases(kinds []Rules) phases {
	ph := phases{progress: slices.Clone(sharedProgress), oomWhile: slices.Clone(sharedOOMWhile)}
	frames := slices.Clone(sharedFrames)
	for _, k := range kinds {
		ph.progress = append(ph.progress, k.Progress...)
		ph.oomWhile = append(ph.oomWhile, k.OOMWhile...)
		frames = append(frames, k.Frames...)
	}
	// A line that shows two stages shows the further one.
	slices.SortStableFunc(ph.progress, func(a, b Stage) int { return int(b.Phase) - int(a.Phase) })
	// A frame named in two stages is capture's, else weights'.
	for _, want := range []Phase{PhaseCapture, PhaseWeights, PhaseProfile} {
		f := Frame{Phase: want}
		for _, fr := range frames {
			if fr.Phase == want {
				f.Funcs = append(f.Funcs, fr.Funcs...)
				f.Files = append(f.Files, fr.Files...)
			}
		}
		ph.frames = append(ph.frames, f)
	}
	return ph
}

func (c *Classifier) lineKeyPhase(m string) Phase {
	if isCodeLine(m) {
		return PhaseNone
	}
	for _, st := range c.phases.progress {
		if containsAny(m, st.Keys) {
			return st.Phase
		}
	}
	return PhaseNone
}

// framePhaseOf is the phase a frame of function fn in file names.
func (c *Classifier) framePhaseOf(file, fn string) Phase {
	for _, f := range c.phases.frames {
		if slices.Contains(f.Funcs, fn) {
			return f.Phase
		}
		for _, suffix := range f.Files {
			if strings.HasSuffix(file, suffix) {
				return f.Phase
			}
		}
	}
	return PhaseNone
}

var reFrame = regexp.MustCompile(`^\s*File "([^"]*)", line \d+, in (\S+)`)

// oomPhase decides what the process was doing when the out-of-memory error
// on lines[i] was raised, and returns the line that shows it (-1 if none).
func (c *Classifier) oomPhase(lines []line, i int) (Phase, int) {
	m := lines[i].msg
	for _, st := range c.phases.oomWhile {
		if containsAny(m, st.Keys) {
			return st.Phase, -1
		}
	}
	lp, lat := c.logPhase(lines, i)
	if p, at := c.framePhase(lines, i); p != PhaseNone {
		// The engine's own progress line reads better than a frame when
		// both say the same.
		if lp == p || (p == PhaseWeights && lp == PhaseNone) {
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
func (c *Classifier) framePhase(lines []line, i int) (Phase, int) {
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
		if p := c.framePhaseOf(file, fn); p != PhaseNone {
			return p, j
		}
	}
	return PhaseNone, -1
}

// logPhase returns the furthest phase the progress lines before lines[i]
// reached, from the same process (and unprefixed progress bars) when that
// process logged progress itself: the ranks of a tensor-parallel group do not
// finish loading together.
func (c *Classifier) logPhase(lines []line, i int) (Phase, int) {
	best, at := PhaseNone, -1
	sameBest, sameAt := PhaseNone, -1
	proc := lines[i].proc
	for j := 0; j < i; j++ {
		p := c.lineKeyPhase(lines[j].msg)
		if p == PhaseNone {
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
	if sameBest != PhaseNone {
		return sameBest, sameAt
	}
	return best, at
}

// furthestPhase is the phase the whole log reached.
func (c *Classifier) furthestPhase(lines []line) Phase {
	best := PhaseNone
	for i := range lines {
		best = max(best, c.lineKeyPhase(lines[i].msg))
	}
	return best
}

// weightsAfter looks at the few lines after an out-of-memory error for a
// weight-loading progress bar (tqdm flushes it after the error is printed).
func (c *Classifier) weightsAfter(lines []line, i int) (Phase, int) {
	for j := i + 1; j < len(lines) && j <= i+8; j++ {
		if c.lineKeyPhase(lines[j].msg) == PhaseWeights {
			return PhaseWeights, j
		}
	}
	return PhaseNone, -1
}
