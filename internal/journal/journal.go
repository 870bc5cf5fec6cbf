// Package journal is the append-only record of rollouts and benchmarks:
// one JSON object per line in <stateDir>/journal.jsonl, written after every
// rollout and every bench, so a later "why is it slower?" can be answered
// with the engine, driver, CUDA, image and bench figures of each run (the
// seed's profile journal). Of roofline it imports only fsx, the
// plan document's types (jsonplan), and state and gpu, whose records
// (a server's, a GPU snapshot's) entries are built from.
package journal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/roofline/roofline/internal/fsx"
	"github.com/roofline/roofline/internal/jsonplan"
)

// FileName is the journal's name inside the state directory.
const FileName = "journal.jsonl"

// Kinds of entries.
const (
	KindRollout = "rollout"
	KindBench   = "bench"
	// KindAgent is what roofline agent did to keep a server up.
	KindAgent = "agent"
	// KindMove records a rename (a moved block or state mv): Server is the
	// new name, From the old one. The server's earlier entries carry the old
	// name; ForServer and LastBench follow the move.
	KindMove = "move"
)

// Agent actions.
const (
	AgentRestarted     = "restarted"      // the server was started again and passed its health gate
	AgentRestartFailed = "restart_failed" // a restart failed; Class names the cause
	AgentGaveUp        = "gave_up"        // too many failed restarts: the agent stopped trying
	AgentRebooted      = "rebooted"       // the host rebooted since the agent last ran (Server is "")
	AgentRetired       = "retired"        // a previous instance kept for rollback was stopped
)

// maxLine bounds one entry; a real one is a few KiB.
const maxLine = 16 << 20

// Entry is one line of the journal.
type Entry struct {
	Time   time.Time `json:"time"`
	Kind   string    `json:"kind"`           // KindRollout or KindBench
	Server string    `json:"server"`         // server block name; "" for a bench of a bare URL
	From   string    `json:"from,omitempty"` // KindMove: the server's previous name
	URL    string    `json:"url,omitempty"`

	Engine EngineInfo `json:"engine"`
	Model  ModelInfo  `json:"model"`

	GPUs          []string `json:"gpus,omitempty"` // GPU names, in the server's order
	DriverVersion string   `json:"driver_version,omitempty"`
	CUDAVersion   string   `json:"cuda_version,omitempty"`
	Argv          []string `json:"argv,omitempty"`

	Gate *GateSummary `json:"gate,omitempty"`
	// Failure is set on a rollout that failed: where and why.
	Failure *Failure      `json:"failure,omitempty"`
	Bench   *BenchSummary `json:"bench,omitempty"`
	Agent   *AgentEvent   `json:"agent,omitempty"`

	// Line is the entry's line number in the file (1-based), set by Read.
	Line int `json:"-"`
}

// EngineInfo identifies the engine that served.
type EngineInfo struct {
	Kind     string `json:"kind,omitempty"`    // vllm or sglang
	Version  string `json:"version,omitempty"` // as the engine reports it
	Identity string `json:"identity,omitempty"`
	// Identity is the image digest (repo@sha256:…) or the executable's
	// identity (path and content hash), whatever the driver records.
}

// ModelInfo identifies the model that was served.
type ModelInfo struct {
	Name        string `json:"name,omitempty"` // served name
	Path        string `json:"path,omitempty"`
	Fingerprint string `json:"fingerprint,omitempty"`
}

// GateSummary is the outcome of a rollout's gates.
type GateSummary struct {
	Passed bool   `json:"passed"`
	Health string `json:"health,omitempty"` // "pass", "fail" or "skipped"
	Smoke  string `json:"smoke,omitempty"`
	Bench  string `json:"bench,omitempty"`
	// Failures are the failed checks and violated thresholds, one line each.
	Failures []string `json:"failures,omitempty"`
}

// Failure is why a rollout failed.
type Failure struct {
	Phase string `json:"phase"`           // start, health, gates, proxy, drain, stop
	Class string `json:"class,omitempty"` // the log classifier's class (oom_weights, ...)
	Error string `json:"error"`
	// KeptOld: a create-before-destroy rollout failed and the old instance
	// kept serving.
	KeptOld bool `json:"kept_old,omitempty"`
}

// AgentEvent is one action of roofline agent.
type AgentEvent struct {
	Action string `json:"action"` // AgentRestarted, ...
	// Reason says why the agent acted: "the process is gone (...)".
	Reason  string `json:"reason,omitempty"`
	Attempt int    `json:"attempt,omitempty"` // the restart's number since the server was last healthy
	// Class and Cause are the log classifier's verdict on a failed restart.
	Class string `json:"class,omitempty"`
	Cause string `json:"cause,omitempty"`
	PID   int    `json:"pid,omitempty"` // the new process of a restart
}

// BenchSummary is what the journal keeps of a benchmark: the load and the
// headline figures, with vllm bench serve's names.
type BenchSummary struct {
	Endpoint       string  `json:"endpoint,omitempty"`
	MaxConcurrency int     `json:"max_concurrency,omitempty"`
	RequestRate    float64 `json:"request_rate,omitempty"` // 0: as fast as the concurrency allows
	NumPrompts     int     `json:"num_prompts"`
	InputTokens    int     `json:"input_tokens"`
	OutputTokens   int     `json:"output_tokens"`

	Duration             float64 `json:"duration"`
	Completed            int     `json:"completed"`
	Failed               int     `json:"failed"`
	RequestThroughput    float64 `json:"request_throughput"`
	OutputThroughput     float64 `json:"output_throughput"`
	TotalTokenThroughput float64 `json:"total_token_throughput"`
	MedianTTFTMs         float64 `json:"median_ttft_ms"`
	P99TTFTMs            float64 `json:"p99_ttft_ms"`
	MedianTPOTMs         float64 `json:"median_tpot_ms"`
	P99TPOTMs            float64 `json:"p99_tpot_ms"`
	MedianITLMs          float64 `json:"median_itl_ms"`
	P99ITLMs             float64 `json:"p99_itl_ms"`
	MedianE2ELMs         float64 `json:"median_e2el_ms"`
	P99E2ELMs            float64 `json:"p99_e2el_ms"`

	// Passed is the threshold verdict when thresholds were checked.
	Passed     *bool    `json:"passed,omitempty"`
	Violations []string `json:"violations,omitempty"`
}

// Document is the summary as the documents show it (journal -json, the
// plan document, check -json): their own type, converted field by field,
// in one place.
func (b *BenchSummary) Document() *jsonplan.BenchResult {
	if b == nil {
		return nil
	}
	return &jsonplan.BenchResult{
		Endpoint: b.Endpoint, MaxConcurrency: b.MaxConcurrency, RequestRate: b.RequestRate, NumPrompts: b.NumPrompts,
		InputTokens: b.InputTokens, OutputTokens: b.OutputTokens, Duration: b.Duration, Completed: b.Completed, Failed: b.Failed,
		RequestThroughput: b.RequestThroughput, OutputThroughput: b.OutputThroughput, TotalTokenThroughput: b.TotalTokenThroughput,
		MedianTTFTMs: b.MedianTTFTMs, P99TTFTMs: b.P99TTFTMs, MedianTPOTMs: b.MedianTPOTMs, P99TPOTMs: b.P99TPOTMs,
		MedianITLMs: b.MedianITLMs, P99ITLMs: b.P99ITLMs, MedianE2ELMs: b.MedianE2ELMs, P99E2ELMs: b.P99E2ELMs,
		Passed: b.Passed, Violations: b.Violations,
	}
}

// Path is the journal file of a state directory.
func Path(stateDir string) string { return filepath.Join(stateDir, FileName) }

// Append adds e as one line. The line is written with a single write on an
// O_APPEND file and synced, so concurrent writers do not interleave and a
// crash loses at most the line being written. A torn last line left by an
// earlier crash is closed first, so it spoils only itself.
func Append(path string, e Entry) error {
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("journal entry: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	f, err := fsx.OpenAppend(path, 0o600)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	buf := make([]byte, 0, len(line)+2)
	if info, err := f.Stat(); err == nil && info.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, info.Size()-1); err == nil && last[0] != '\n' {
			buf = append(buf, '\n')
		}
	}
	buf = append(buf, line...)
	buf = append(buf, '\n')
	if _, err := f.Write(buf); err != nil {
		f.Close()
		return fmt.Errorf("journal: writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("journal: syncing %s: %w", path, err)
	}
	return f.Close()
}

// BadLine is a line Read could not use.
type BadLine struct {
	Line int
	Torn bool // the last line, without its newline: a write cut short
	Err  error
}

// BadLinesError lists the lines Read skipped; the entries of every other
// line are returned with it.
type BadLinesError struct {
	Path  string
	Lines []BadLine
}

func (e *BadLinesError) Error() string {
	parts := make([]string, len(e.Lines))
	for i, l := range e.Lines {
		if l.Torn {
			parts[i] = fmt.Sprintf("line %d is torn (a write was cut short)", l.Line)
		} else {
			parts[i] = fmt.Sprintf("line %d: %v", l.Line, l.Err)
		}
	}
	return fmt.Sprintf("journal %s: skipped %s", e.Path, strings.Join(parts, "; "))
}

// Read returns the journal's entries in file order. A missing file is an
// empty journal. Lines that do not decode are skipped and reported in a
// *BadLinesError returned together with the good entries; other errors
// (permissions, I/O) return no entries.
func Read(path string) ([]Entry, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	return read(path, f)
}

func read(path string, r io.Reader) ([]Entry, error) {
	br := bufio.NewReader(r)
	var out []Entry
	var bad []BadLine
	for n := 1; ; n++ {
		line, err := readLine(br)
		if err == io.EOF && len(line) == 0 {
			break
		}
		if err != nil && err != io.EOF {
			if errors.Is(err, errLineTooLong) {
				bad = append(bad, BadLine{Line: n, Err: err})
				continue
			}
			return nil, fmt.Errorf("journal: reading %s: %w", path, err)
		}
		torn := err == io.EOF // no newline at the end
		if len(bytes.TrimSpace(line)) == 0 {
			if torn {
				break
			}
			continue
		}
		var e Entry
		if derr := json.Unmarshal(line, &e); derr != nil {
			bad = append(bad, BadLine{Line: n, Torn: torn, Err: derr})
		} else {
			e.Line = n
			out = append(out, e)
		}
		if torn {
			break
		}
	}
	if len(bad) > 0 {
		return out, &BadLinesError{Path: path, Lines: bad}
	}
	return out, nil
}

var errLineTooLong = fmt.Errorf("line longer than %d bytes", maxLine)

// readLine reads one line without its newline; io.EOF with data means the
// last line had no newline. Over-long lines are skipped whole.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > maxLine {
			for err == bufio.ErrBufferFull {
				_, err = br.ReadSlice('\n')
			}
			if err != nil && err != io.EOF {
				return nil, err
			}
			return nil, errLineTooLong
		}
		line = append(line, chunk...)
		switch err {
		case nil:
			return line[:len(line)-1], nil
		case bufio.ErrBufferFull:
			continue
		default:
			return line, err
		}
	}
}

// MoveEntry is the entry of a rename of server from to to.
func MoveEntry(from, to string, now time.Time) Entry {
	return Entry{Time: now.UTC(), Kind: KindMove, Server: to, From: from}
}

// LastBench returns the newest entry of server that carries bench figures
// (a bench, or a rollout whose gate ran one), or nil.
func LastBench(entries []Entry, server string) *Entry {
	name := server
	for i := len(entries) - 1; i >= 0; i-- {
		e := &entries[i]
		if e.Kind == KindMove && e.Server == name && e.From != "" {
			name = e.From // before the move, the server had this name
			continue
		}
		if e.Server == name && e.Bench != nil {
			return e
		}
	}
	return nil
}

// ForServer returns the entries of one server, in order, following its
// renames back (entries before a move carry the previous name).
func ForServer(entries []Entry, server string) []Entry {
	var out []Entry
	name := server
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if e.Server != name {
			continue
		}
		out = append(out, e)
		if e.Kind == KindMove && e.From != "" {
			name = e.From
		}
	}
	slices.Reverse(out)
	return out
}
