package apply

import (
	"bytes"
	"io"
	"os"
	"regexp"
	"strings"
)

// readTail returns at most max bytes from the end of the file at path.
func readTail(path string, max int64) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil
	}
	off := info.Size() - max
	if off < 0 {
		off = 0
	}
	b, _ := io.ReadAll(io.NewSectionReader(f, off, info.Size()-off))
	return b
}

var ansi = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)

// lastLines returns the last n non-empty lines of b, colour codes removed.
func lastLines(b []byte, n int) []string {
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	var out []string
	for i := len(lines) - 1; i >= 0 && len(out) < n; i-- {
		l := strings.TrimRight(ansi.ReplaceAllString(string(lines[i]), ""), "\r ")
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// accessLog matches a uvicorn access-log line: `127.0.0.1:5 - "GET /health
// HTTP/1.1" 200 OK`. They say nothing about why an engine failed.
var accessLog = regexp.MustCompile(`"(GET|POST|PUT|DELETE|HEAD|OPTIONS|PATCH) \S* HTTP/[0-9.]+" [0-9]{3}`)

// engineLines are the last n lines of b that are not access-log lines: the
// engine's own messages, which explain a failure.
func engineLines(b []byte, n int) []string {
	all := lastLines(b, 400)
	var out []string
	for i := len(all) - 1; i >= 0 && len(out) < n; i-- {
		if !accessLog.MatchString(all[i]) {
			out = append(out, all[i])
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// lastLine is the last log line, for the live progress line.
func lastLine(path string) string {
	l := lastLines(readTail(path, 16<<10), 1)
	if len(l) == 0 {
		return ""
	}
	if len(l[0]) > 160 {
		return l[0][:157] + "..."
	}
	return l[0]
}

// LastLines exposes lastLines for the CLI's logs and diagnose commands.
func LastLines(path string, n int) []string { return lastLines(readTail(path, 4<<20), n) }
