package views

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/roofline/roofline/internal/gate"
)

// Checks is the view of roofline health and roofline smoke: name is the
// server's address (server.NAME) or the URL checked.
type Checks interface {
	Health(name string, t gate.Target, res *gate.HealthResult, err error)
	Smoke(name string, t gate.Target, res *gate.SmokeResult, err error)
}

// NewChecks returns the human or JSON view of the gate commands.
func NewChecks(vt ViewType, v *View) Checks {
	if vt == ViewJSON {
		return checksJSON{v}
	}
	return checksHuman{v}
}

type checksJSON struct{ view *View }

func (c checksJSON) Health(_ string, _ gate.Target, res *gate.HealthResult, _ error) {
	WriteReport(c.view.Out, HealthDocument(res))
}

func (c checksJSON) Smoke(_ string, _ gate.Target, res *gate.SmokeResult, _ error) {
	WriteReport(c.view.Out, SmokeDocument(res))
}

type checksHuman struct{ view *View }

func (c checksHuman) Health(name string, t gate.Target, res *gate.HealthResult, err error) {
	w := c.view.Out
	engine := res.Engine
	if res.Version != "" {
		engine += " " + res.Version
	}
	if engine == "" {
		engine = "engine unknown"
	}
	fmt.Fprintf(w, "Health of %s at %s (%s), model %q\n", name, t.BaseURL, strings.TrimSpace(engine), res.Target.Model)
	writeChecks(w, res.Checks)
	if err == nil {
		fmt.Fprintln(w, "Healthy.")
	} else {
		fmt.Fprintf(w, "Not healthy: %d of %d checks failed.\n", len(res.Failed()), len(res.Checks))
	}
}

func (c checksHuman) Smoke(name string, t gate.Target, res *gate.SmokeResult, err error) {
	w := c.view.Out
	fmt.Fprintf(w, "Smoke test of %s at %s, model %q\n", name, t.BaseURL, t.Model)
	writeChecks(w, res.Steps)
	if err == nil {
		fmt.Fprintln(w, "Tool calls work.")
	} else {
		fmt.Fprintf(w, "Smoke test failed: %d of %d steps.\n", len(res.Failed()), len(res.Steps))
	}
}

// writeChecks prints one line per check: ok, FAIL or skip, the name, the
// detail.
func writeChecks(w io.Writer, checks []gate.Check) {
	width := 0
	for _, c := range checks {
		width = max(width, len(c.Name))
	}
	for _, c := range checks {
		mark := "ok  "
		switch {
		case c.Skipped:
			mark = "skip"
		case !c.OK:
			mark = "FAIL"
		}
		fmt.Fprintf(w, "  %s  %-*s  %s\n", mark, width, c.Name, c.Detail)
	}
}

// WriteReport writes a report (a gate's, the agent's check) as indented
// JSON without HTML escapes: model output quoted in it stays readable.
func WriteReport(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// Bench is the view of roofline bench.
type Bench interface {
	// Started is called as a run begins; the progress function it returns
	// (nil for none) is handed to the load generator, and done ends it.
	Started(name, url string) (progress func(done, total int), done func())
	// Failed reports a run that did not finish.
	Failed(name string, err error)
	// Result shows one run and, for a server with a gate.bench block
	// (addr not ""), its thresholds: checked false when the load differs
	// from the block's.
	Result(res *gate.BenchResult, addr string, checked bool, checks []gate.ThresholdCheck)
	// Compare shows two runs of the same load side by side.
	Compare(nameA, nameB string, a, b *gate.BenchResult)
}

// NewBench returns the bench view; terminal says whether stderr is one
// (a progress bar is drawn there).
func NewBench(vt ViewType, v *View, terminal bool) Bench {
	if vt == ViewJSON {
		return benchJSON{view: v, terminal: terminal}
	}
	return benchHuman{view: v, terminal: terminal}
}

type benchJSON struct {
	view     *View
	terminal bool
}

func (b benchJSON) Started(name, _ string) (func(done, total int), func()) {
	return startBar(b.view.Err, name, b.terminal)
}

func (b benchJSON) Failed(name string, err error) { b.view.Errorf("benchmark of %s: %v", name, err) }

func (b benchJSON) Result(res *gate.BenchResult, _ string, _ bool, _ []gate.ThresholdCheck) {
	_ = writeEscaped(b.view.Out, BenchDocument(res))
}

func (b benchJSON) Compare(_, _ string, a, c *gate.BenchResult) {
	_ = writeEscaped(b.view.Out, BenchComparison{A: BenchDocument(a), B: BenchDocument(c)})
}

type benchHuman struct {
	view     *View
	terminal bool
}

func (b benchHuman) Started(name, url string) (func(done, total int), func()) {
	switch {
	case b.terminal:
	case name == url: // bench -url: the URL is the name
		fmt.Fprintf(b.view.Err, "Benchmarking %s...\n", url)
	default:
		fmt.Fprintf(b.view.Err, "Benchmarking %s at %s...\n", name, url)
	}
	return startBar(b.view.Err, name, b.terminal)
}

func (b benchHuman) Failed(name string, err error) { b.view.Errorf("benchmark of %s: %v", name, err) }

func (b benchHuman) Result(res *gate.BenchResult, addr string, checked bool, checks []gate.ThresholdCheck) {
	w := b.view.Out
	res.Render(w)
	if addr == "" {
		return
	}
	if !checked {
		fmt.Fprintf(w, "Thresholds of %s gate.bench not checked: the load differs from the block's.\n", addr)
		return
	}
	fmt.Fprintf(w, "Thresholds of %s gate.bench:\n", addr)
	for _, c := range checks {
		mark := "pass"
		if !c.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "  %s  %s\n", mark, c.Message)
	}
}

func (b benchHuman) Compare(nameA, nameB string, a, c *gate.BenchResult) {
	w := b.view.Out
	gate.RenderCompare(w, nameA, nameB, a, c)
	for _, side := range []struct {
		name string
		r    *gate.BenchResult
	}{{"A", a}, {"B", c}} {
		for _, n := range side.r.Notes() {
			fmt.Fprintf(w, "%s: %s\n", side.name, n)
		}
	}
	if !gate.SameWork(a, c) {
		fmt.Fprintln(w, "Warning: the two servers did not do the same work (token totals differ); compare the throughputs with care.")
	}
}

// startBar draws a progress bar on a terminal; nothing elsewhere.
func startBar(w io.Writer, name string, terminal bool) (func(done, total int), func()) {
	if !terminal {
		return nil, func() {}
	}
	bar := &benchBar{w: w, label: "Benchmarking " + name}
	return bar.update, bar.finish
}

// benchBar draws "label [=====>    ] 45/100" on one terminal line.
type benchBar struct {
	w     io.Writer
	label string
	mu    sync.Mutex
	last  time.Time
	drawn bool
}

func (p *benchBar) update(done, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Since(p.last) < 100*time.Millisecond && done != total {
		return
	}
	p.last = time.Now()
	p.drawn = true
	if total <= 0 {
		fmt.Fprintf(p.w, "\r%s: %d requests done", p.label, done)
		return
	}
	const width = 30
	fill := width * done / total
	line := strings.Repeat("=", fill)
	if fill < width {
		line += ">" + strings.Repeat(" ", width-fill-1)
	}
	fmt.Fprintf(p.w, "\r%s [%s] %d/%d", p.label, line, done, total)
}

func (p *benchBar) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
