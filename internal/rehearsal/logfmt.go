package rehearsal

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// logger writes log lines in the emulated engine's format:
//
//	vLLM 0.16: (APIServer pid=7) INFO 02-12 10:00:00 [api_server.py:1839] message
//	vLLM 0.8:  INFO 04-28 10:00:00 [api_server.py:1043] message
//	SGLang:    [2025-12-11 10:00:00 TP0] message
//
// vLLM writes its log to stdout and tracebacks to stderr; SGLang writes
// everything to stderr.
type logger struct {
	kind string
	out  io.Writer // log lines
	err  io.Writer // tracebacks and uvicorn errors
	proc string    // vLLM process prefix ("APIServer pid=7") or SGLang tag ("TP0")
	mu   *sync.Mutex
}

func newLogger(kind, version string, stdout, stderr io.Writer, proc string) *logger {
	l := &logger{kind: kind, out: stdout, err: stderr, mu: &sync.Mutex{}}
	if kind == KindSGLang {
		l.out = stderr
	}
	if kind == KindSGLang || !versionLess(version, "0.10") {
		l.proc = proc
	}
	return l
}

func (l *logger) prefix() string {
	if l.kind == KindVLLM && l.proc != "" {
		return "(" + l.proc + ") "
	}
	return ""
}

func (l *logger) write(w io.Writer, lines ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, line := range lines {
		for _, s := range strings.Split(line, "\n") {
			b.WriteString(l.prefix())
			b.WriteString(s)
			b.WriteByte('\n')
		}
	}
	_, _ = io.WriteString(w, b.String())
}

func (l *logger) stamp(level, src string) string {
	now := time.Now()
	if l.kind == KindSGLang {
		tag := ""
		if l.proc != "" {
			tag = " " + l.proc
		}
		return "[" + now.Format("2006-01-02 15:04:05") + tag + "] "
	}
	return fmt.Sprintf("%s %s [%s] ", level, now.Format("01-02 15:04:05"), src)
}

// info writes one INFO line (each line of msg gets the stamp).
func (l *logger) info(src, msg string) { l.level(l.out, "INFO", src, msg) }

// errorLines writes ERROR lines; vLLM's EngineCore logs its traceback this way.
func (l *logger) errorLines(src string, lines ...string) {
	for _, line := range lines {
		l.level(l.err, "ERROR", src, line)
	}
}

func (l *logger) level(w io.Writer, level, src, msg string) {
	var lines []string
	for _, s := range strings.Split(msg, "\n") {
		lines = append(lines, l.stamp(level, src)+s)
	}
	l.write(w, lines...)
}

// raw writes lines as Python prints them (tracebacks), with the process prefix only.
func (l *logger) raw(lines ...string) { l.write(l.err, lines...) }

// uvicorn writes a uvicorn line ("INFO:     Started server process [7]").
func (l *logger) uvicorn(level, msg string) {
	w := l.out
	if level == "ERROR" {
		w = l.err
	}
	l.write(w, fmt.Sprintf("%-9s %s", level+":", msg))
}

// traceback renders a Python traceback: frames are "file:line:function:code".
func traceback(frames []string, exc string) []string {
	out := []string{"Traceback (most recent call last):"}
	for _, f := range frames {
		parts := strings.SplitN(f, ":", 4)
		if len(parts) != 4 {
			continue
		}
		out = append(out, fmt.Sprintf(`  File "%s", line %s, in %s`, parts[0], parts[1], parts[2]),
			"    "+parts[3])
	}
	return append(out, strings.Split(exc, "\n")...)
}
