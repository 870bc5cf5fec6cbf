// Package logdiag reads an inference engine's log (plain,
// multiprocess-prefixed or docker-compose-prefixed) and names the cause of a
// failed start, or extracts the memory footprint of a successful one. It
// never fails: a log it does not understand is "unknown". It holds the
// machinery and the rules every engine shares; each engine kind adds its own
// lines (Rules, supplied by engine.Kind: vLLM V0 and V1, SGLang).
package logdiag

import (
	"bufio"
	"bytes"
	"io"
	"regexp"
	"strings"
)

// Diagnosis is the classified cause of a failed start.
type Diagnosis struct {
	Class   string `json:"class"` // one of the class ids (Classes)
	Title   string `json:"title"` // the class's title
	Summary string `json:"summary"`
	Cause   string `json:"cause"`
	Action  string `json:"action"`
	// Evidence holds the log lines that show the cause, as written (prefixes
	// kept; colour codes removed; very long lines cut around the match), in
	// log order; EvidenceLines their 1-based line numbers in the whole log.
	Evidence      []string `json:"evidence"`
	EvidenceLines []int    `json:"evidence_lines"`
}

// Classify names the cause of a failed start from the tail of log (the last
// TailBytes and at most TailLines lines). It prefers the root cause over its
// consequences: the earliest recognised line of the last launch wins, and a
// CUDA out-of-memory error is placed by what the engine was doing when it
// was raised. It says unknown rather than guess.
func (c *Classifier) Classify(log []byte) Diagnosis {
	t, first := tail(log)
	return c.classify(splitLines(t, first))
}

// ClassifyReader is Classify for a stream: it keeps only the tail in memory
// and still numbers lines from the start of the stream.
func (c *Classifier) ClassifyReader(r io.Reader) (Diagnosis, error) {
	t, first, err := readTail(r)
	if err != nil {
		return Diagnosis{}, err
	}
	t2, first2 := tail(t)
	return c.classify(splitLines(t2, first+first2-1)), nil
}

// readTail reads r to the end, keeping the last TailBytes (from a line
// start when possible) and counting the lines dropped before them.
func readTail(r io.Reader) ([]byte, int, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	buf := make([]byte, 0, 2*TailBytes)
	dropped := 0
	chunk := make([]byte, 1<<20)
	for {
		n, err := br.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if len(buf) > 2*TailBytes {
			cut := len(buf) - TailBytes
			if i := bytes.IndexByte(buf[cut:], '\n'); i >= 0 {
				cut += i + 1
			}
			dropped += bytes.Count(buf[:cut], []byte{'\n'})
			buf = append(buf[:0], buf[cut:]...)
		}
		if err == io.EOF {
			return buf, dropped + 1, nil
		}
		if err != nil {
			return nil, 0, err
		}
	}
}

type hit struct {
	i    int
	r    *Rule
	key  string
	weak bool
}

func (c *Classifier) classify(all []line) Diagnosis {
	lines := c.lastLaunch(all)
	var hits []hit
	for i := range lines {
		r, key := c.match(&lines[i])
		if r == nil {
			continue
		}
		weak := r.Weak
		switch lines[i].level {
		case "INFO", "DEBUG", "WARNING":
			// A warning or a retried condition ("port in use, trying the
			// next one"); real failures come as exceptions or ERROR lines.
			weak = true
		}
		hits = append(hits, hit{i: i, r: r, key: key, weak: weak})
	}
	var d Diagnosis
	if h := pickRoot(hits); h != nil && !(h.weak && c.unexplainedAfter(lines, h.i)) {
		d = c.diagnose(lines, *h)
	} else {
		d = c.unknown(lines)
	}
	// JSON readers get [] rather than null.
	if d.Evidence == nil {
		d.Evidence, d.EvidenceLines = []string{}, []int{}
	}
	return d
}

// lastLaunch returns the lines from the last launch banner on.
func (c *Classifier) lastLaunch(lines []line) []line {
	for i := len(lines) - 1; i > 0; i-- {
		if containsAny(lines[i].msg, c.starts) {
			return lines[i:]
		}
	}
	return lines
}

// pickRoot returns the earliest strong hit that is not secondary, else the
// earliest strong hit, else the same among weak hits.
// reRaised is a Python exception message line ("ValueError: ...",
// "torch.OutOfMemoryError: ...", "Exception: ...") or the detail line of a
// pydantic validation error ("  Value error, ...").
var reRaised = regexp.MustCompile(`^(?:[A-Za-z_][\w.]*(?:Error|Exception)(?:\([\w.]+\))?|Exception): |^\s*Value error, `)

// unexplainedAfter reports an exception after lines[i] that no rule
// recognises and that is not a consequence of an earlier failure: a weak
// hint (a warning, a generic validation error) is then not the cause, and
// "unknown" is the honest answer.
func (c *Classifier) unexplainedAfter(lines []line, i int) bool {
	for j := i + 1; j < len(lines); j++ {
		m := lines[j].msg
		if isCodeLine(m) && !strings.HasPrefix(strings.TrimLeft(m, " "), "Value error, ") {
			continue
		}
		if !reRaised.MatchString(m) || containsAny(m, c.consequence) {
			continue
		}
		if r, _ := c.match(&lines[j]); r == nil {
			return true
		}
	}
	return false
}

func pickRoot(hits []hit) *hit {
	for _, weak := range []bool{false, true} {
		var first *hit
		for k := range hits {
			h := &hits[k]
			if h.weak != weak {
				continue
			}
			if !h.r.Secondary {
				return h
			}
			if first == nil {
				first = h
			}
		}
		if first != nil {
			return first
		}
	}
	return nil
}

func (c *Classifier) diagnose(lines []line, h hit) Diagnosis {
	root := lines[h.i]
	class := h.r.Class
	ctx := -1
	var p Phase
	if class == classOOM {
		p, ctx = c.oomPhase(lines, h.i)
		if p == PhaseNone {
			// No progress line or frame says what ran out: a progress bar
			// flushed after the error may still show the weights loading.
			p, ctx = c.weightsAfter(lines, h.i)
		}
		switch p {
		case PhaseWeights:
			class = OOMWeights
		case PhaseCapture:
			class = OOMCUDAGraph
		case PhaseNone:
			// Nothing tells the stage: "unknown" with the line, rather than a
			// guess at the weights.
			d := c.unknown(lines)
			d.Summary = "CUDA ran out of memory" + oomDetail(root.msg) + "; the log does not show at which stage of the start, so roofline names no cause."
			d.Cause = "The out-of-memory error is there, but no progress line or traceback frame says whether the weights, the profile run, the KV cache or the CUDA graphs ran out."
			d.Action = "Read the lines before it in `roofline logs`, check `roofline gpu` for other processes and compare with " + vramCmd + "."
			d.Evidence, d.EvidenceLines = nil, nil
			addEvidence(&d, lines, h.i, h.key)
			return d
		default:
			d := c.unknown(lines)
			d.Summary = "CUDA ran out of memory while " + p.String() + oomDetail(root.msg) +
				"; roofline has no class for an out-of-memory error at this stage."
			d.Cause = "The weights were loaded; what ran out is the activation peak, the KV cache allocation or a later allocation, often because another process took GPU memory meanwhile."
			d.Action = "Check `roofline gpu` for other processes, lower gpu_memory_utilization or max_num_batched_tokens / max_num_seqs, and compare with " + vramCmd + "."
			d.Evidence, d.EvidenceLines = nil, nil
			addEvidence(&d, lines, ctx, "")
			addEvidence(&d, lines, h.i, h.key)
			return d
		}
	}
	info := Info(class)
	d := Diagnosis{Class: class, Title: info.Title, Cause: info.Cause, Action: info.Action}
	d.Summary = summary(h.r, class, root.msg)
	if len(h.r.Context) > 0 {
		ctx = lastBefore(lines, h.i, h.r.Context...)
	}
	if ctx > h.i { // a progress bar flushed after the error
		addEvidence(&d, lines, h.i, h.key)
		addEvidence(&d, lines, ctx, "")
		return d
	}
	addEvidence(&d, lines, ctx, "")
	addEvidence(&d, lines, h.i, h.key)
	return d
}

func lastBefore(lines []line, i int, keys ...string) int {
	for j := i - 1; j >= 0 && i-j <= 2000; j-- {
		if containsAny(lines[j].msg, keys) {
			return j
		}
	}
	return -1
}

func addEvidence(d *Diagnosis, lines []line, i int, key string) {
	if i < 0 {
		return
	}
	d.Evidence = append(d.Evidence, evidenceText(lines[i], key))
	d.EvidenceLines = append(d.EvidenceLines, lines[i].no)
}

// unknown builds the diagnosis for a log with no recognised cause: the
// evidence is the last error-looking lines.
func (c *Classifier) unknown(lines []line) Diagnosis {
	info := Info(Unknown)
	d := Diagnosis{Class: Unknown, Title: info.Title, Cause: info.Cause, Action: info.Action}
	var idx []int
	seen := map[string]bool{}
	for i := len(lines) - 1; i >= 0 && len(idx) < 5; i-- {
		if errorish(&lines[i]) && !seen[lines[i].msg] {
			seen[lines[i].msg] = true
			idx = append(idx, i)
		}
	}
	for k := len(idx) - 1; k >= 0; k-- {
		addEvidence(&d, lines, idx[k], "")
	}
	failed := false
	for i := range lines {
		if containsAny(lines[i].msg, c.consequence) {
			failed = true
			break
		}
	}
	p := c.furthestPhase(lines)
	switch {
	case len(lines) == 0:
		d.Summary = "The log is empty."
	case failed:
		d.Summary = "The engine failed to start (it got as far as " + p.String() + "), but the root cause is not one roofline knows."
	case len(idx) > 0:
		d.Summary = "The log shows errors but none roofline knows; the engine got as far as " + p.String() + "."
	default:
		d.Summary = "The log shows no error; the engine got as far as " + p.String() + "."
		d.Action = "If the server never became healthy, the engine may still be working or hung at this stage: compare the log's last progress line with the health timeout, and read the whole log (`roofline logs SERVER`)."
	}
	return d
}

var reException = regexp.MustCompile(`^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Failure)\b`)

// errorish reports a line that looks like an error worth showing when no
// rule matched: an exception line, an ERROR line that is not part of a
// traceback's frames, or a line that says it failed.
func errorish(l *line) bool {
	m := strings.TrimRight(l.msg, " ")
	if m == "" || isCodeLine(m) || strings.HasPrefix(strings.TrimLeft(m, " "), "^") ||
		strings.Contains(m, "Traceback (most recent call last)") {
		return false
	}
	if reException.MatchString(m) {
		return true
	}
	switch l.level {
	case "INFO", "DEBUG", "WARNING":
		return false
	case "ERROR", "CRITICAL":
		return !strings.HasPrefix(m, "  ")
	}
	lm := strings.ToLower(m)
	return containsAny(lm, []string{"error", "failed", "fatal", "killed", "segmentation fault", "core dumped", "aborted", "exception"})
}
