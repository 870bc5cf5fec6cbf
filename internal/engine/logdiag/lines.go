package logdiag

import (
	"bytes"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Limits of the part of a log that Classify reads: a failed start puts its
// cause near the end, and reading only the tail keeps a diagnosis fast on a
// log of many gigabytes.
const (
	TailBytes = 2 << 20
	TailLines = 4000

	// maxEvidence caps one evidence line (a tqdm progress line or a dumped
	// config can be megabytes long).
	maxEvidence = 600
)

// line is one line of the log: raw is the text as written (ANSI colour codes
// removed), msg the same text with the engine's and the container runtime's
// prefixes removed.
type line struct {
	no    int    // 1-based line number in the whole log
	raw   string // original text, without ANSI codes
	msg   string // raw without prefixes: what the rules match
	level string // "ERROR", "INFO", ... when a prefix carried one
	proc  string // process tag from a prefix ("EngineCore_DP0 pid=7", "TP1", "rank0"), "" if none
}

// tail returns the part of log that is classified and the 1-based line
// number of its first line.
func tail(log []byte) ([]byte, int) {
	first := 1
	if len(log) > TailBytes {
		cut := len(log) - TailBytes
		// Start at a line boundary unless the tail is one giant line.
		if i := bytes.IndexByte(log[cut:], '\n'); i >= 0 && cut+i+1 < len(log) {
			cut += i + 1
		}
		first += bytes.Count(log[:cut], []byte{'\n'})
		log = log[cut:]
	}
	body := bytes.TrimSuffix(log, []byte{'\n'})
	end := len(body)
	for n := 0; n < TailLines; n++ {
		i := bytes.LastIndexByte(body[:end], '\n')
		if i < 0 {
			return log, first
		}
		end = i
	}
	first += bytes.Count(log[:end+1], []byte{'\n'})
	return log[end+1:], first
}

// splitLines cuts b into lines. A carriage return inside a line (tqdm
// progress bars redraw with \r) starts a new segment with the same line
// number, so a log line glued to a progress bar is still seen.
func splitLines(b []byte, first int) []line {
	out := make([]line, 0, bytes.Count(b, []byte{'\n'})+1)
	no := first - 1
	for len(b) > 0 {
		no++
		var l []byte
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			l, b = b[:i], b[i+1:]
		} else {
			l, b = b, nil
		}
		s := stripANSI(string(l))
		for seg := range strings.SplitSeq(s, "\r") {
			if strings.TrimSpace(seg) == "" {
				continue
			}
			msg, level, proc := stripPrefixes(seg)
			out = append(out, line{no: no, raw: seg, msg: msg, level: level, proc: proc})
		}
	}
	return out
}

// stripANSI removes CSI escape sequences (colours) and stray escape bytes.
func stripANSI(s string) string {
	if strings.IndexByte(s, 0x1b) < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != 0x1b {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == ';' || s[j] == '?') {
				j++
			}
			if j < len(s) && (s[j] >= '@' && s[j] <= '~') {
				i = j
				continue
			}
			i = j - 1
		}
	}
	return b.String()
}

var (
	// docker compose: "server-1  | ", older "server_1  | ".
	reCompose = regexp.MustCompile(`^[A-Za-z0-9][\w.\-]*\s+\| ?`)
	// docker logs -t / kubectl --timestamps / journald-like ISO stamps.
	reISO = regexp.MustCompile(`^\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)? (?:\| )?`)
	// "[2026-08-21T19:42:40Z] " (CI) and SGLang "[2025-10-01 12:00:00 DP0 TP0] ".
	reBracketTime = regexp.MustCompile(`^\[\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?((?: [A-Z]{1,4}\d+)*)\] ?`)
	// Older SGLang: "[TP0] ", "[gpu_id=0] ".
	reOldSGLang = regexp.MustCompile(`^\[((?:[A-Z]{2,4}\d+ ?)+|gpu(?:_id)?=\d+)\] ?`)
	// torch elastic / V0 workers: "[rank0]: ".
	reRank = regexp.MustCompile(`^\[(rank\d+)\]: ?`)
	// vLLM: "INFO 05-29 10:00:00 [file.py:123] " (V1) and "INFO 08-19 07:51:03 model_runner.py:732] " (V0).
	reVLLMLevel = regexp.MustCompile(`^(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? (?:\[[^\]]*\]|[\w.\-]+:\d+\]) ?`)
	// uvicorn: "ERROR:    [Errno 98] ...".
	reUvicornLevel = regexp.MustCompile(`^(DEBUG|INFO|WARNING|ERROR|CRITICAL):\s+`)
	// Ray: "... [repeated 30x across cluster]".
	reRepeated = regexp.MustCompile(`\s*\[repeated \d+x across cluster\]\s*$`)
)

// stripPrefixes removes, in any nesting, the prefixes engines and container
// runtimes put before a message. It keeps the message's own indentation
// (traceback frames are indented) and returns the log level and process tag
// it found on the way.
func stripPrefixes(s string) (msg, level, proc string) {
	for iter := 0; iter < 10 && s != ""; iter++ {
		before := len(s)
		c := s[0]
		switch {
		case c == '(':
			// "(EngineCore_DP0 pid=123) ", "(VllmWorker rank=0 pid=9) ", "(RayWorkerWrapper pid=1, ip=10.0.0.1) ".
			if j := strings.IndexByte(s, ')'); j > 1 && j < 160 && isLetter(s[1]) && strings.Contains(s[1:j], "pid=") {
				proc = s[1:j]
				s = trimOneSpace(s[j+1:])
			}
		case c == '[':
			if m := reBracketTime.FindStringSubmatch(s); m != nil {
				if tags := strings.TrimSpace(m[1]); tags != "" {
					proc = tags
				}
				s = s[len(m[0]):]
			} else if m := reRank.FindStringSubmatch(s); m != nil {
				proc = m[1]
				s = s[len(m[0]):]
			} else if m := reOldSGLang.FindStringSubmatch(s); m != nil {
				proc = strings.TrimSpace(m[1])
				s = s[len(m[0]):]
			}
		case c >= '0' && c <= '9':
			if m := reISO.FindString(s); m != "" {
				s = s[len(m):]
			}
		case c >= 'A' && c <= 'Z':
			if m := reVLLMLevel.FindStringSubmatch(s); m != nil {
				level = normLevel(m[1])
				s = s[len(m[0]):]
			} else if m := reUvicornLevel.FindStringSubmatch(s); m != nil {
				level = normLevel(m[1])
				s = s[len(m[0]):]
			}
		}
		// A compose prefix comes first of all, so only look for one while
		// nothing else was stripped (a message may contain " | ").
		if iter == 0 && len(s) == before && isAlnum(c) {
			if i := strings.IndexByte(s, '|'); i > 0 && i < 100 {
				if m := reCompose.FindString(s); m != "" {
					s = s[len(m):]
				}
			}
		}
		if len(s) == before {
			break
		}
	}
	if strings.HasSuffix(s, "across cluster]") {
		s = reRepeated.ReplaceAllString(s, "")
	}
	return s, level, proc
}

func normLevel(l string) string {
	if l == "WARN" {
		return "WARNING"
	}
	return l
}

func trimOneSpace(s string) string {
	if strings.HasPrefix(s, " ") {
		return s[1:]
	}
	return s
}

func isLetter(c byte) bool { return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '_' }
func isAlnum(c byte) bool  { return isLetter(c) || c >= '0' && c <= '9' }

// evidenceText is what a diagnosis shows of a line: the original text with
// its prefixes, valid UTF-8, at most maxEvidence bytes (cut around the match
// when the line is longer).
func evidenceText(l line, match string) string {
	s := strings.ToValidUTF8(l.raw, "\uFFFD")
	if len(s) <= maxEvidence {
		return s
	}
	start := 0
	if match != "" {
		if i := strings.Index(s, match); i > maxEvidence/3 {
			start = i - maxEvidence/3
		}
	}
	end := min(len(s), start+maxEvidence)
	for start > 0 && !utf8.RuneStart(s[start]) {
		start++
	}
	for end < len(s) && !utf8.RuneStart(s[end]) {
		end--
	}
	out := s[start:end]
	if start > 0 {
		out = "…" + out
	}
	if end < len(s) {
		out += "…"
	}
	return out
}
