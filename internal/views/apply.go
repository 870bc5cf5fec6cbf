package views

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-multierror"
	"github.com/roofline/roofline/internal/apply"
	"github.com/roofline/roofline/internal/diagfmt"
)

// Confirm asks whether to go on, as Terraform does: only "yes" approves.
func (v *View) Confirm(in io.Reader, destroy bool) bool {
	if destroy {
		fmt.Fprint(v.Out, v.Colorize("\n[bold]Do you really want to destroy all servers?[reset]\n  roofline will stop every server shown above.\n  Only 'yes' will be accepted to confirm.\n\n  Enter a value: "))
	} else {
		fmt.Fprint(v.Out, v.Colorize("\n[bold]Do you want to perform these actions?[reset]\n  roofline will perform the actions described above.\n  Only 'yes' will be accepted to approve.\n\n  Enter a value: "))
	}
	line, _ := bufio.NewReader(in).ReadString('\n')
	return strings.TrimSpace(line) == "yes"
}

// serverErrors lists the errors of an apply: one per server that failed.
func serverErrors(err error) []error {
	var me *multierror.Error
	if errors.As(err, &me) {
		return me.Errors
	}
	return []error{err}
}

// ApplyFailed prints every server's failure, then how many failed.
func (v *View) ApplyFailed(err error) {
	v.ApplyErrors(err)
	fmt.Fprint(v.Err, v.Colorize("\n[red][bold]Apply failed.[reset] "))
	fmt.Fprintf(v.Err, "%d server(s) failed; the others went on. Run roofline status to see what runs.\n", len(serverErrors(err)))
}

// ApplyErrors prints every server's failure with the classified cause, the
// action and the log tail.
func (v *View) ApplyErrors(err error) {
	errs := serverErrors(err)
	for _, e := range errs {
		var se *apply.ServerError
		if !errors.As(e, &se) {
			fmt.Fprintf(v.Err, "%s %v\n", v.Colorize("\n[red][bold]Error:[reset]"), e)
			continue
		}
		fmt.Fprintf(v.Err, "%s %s failed (%s): %v\n", v.Colorize("\n[red][bold]Error:[reset]"), se.Addr, se.Phase, se.Err)
		if se.KeptOld {
			fmt.Fprintln(v.Err, "  The old server was not touched and keeps serving.")
		}
		if d := se.Diagnosis; d != nil && d.Class != "" && (d.Class != "unknown" || se.Phase != "gates") {
			fmt.Fprintf(v.Err, "\n  Cause (%s): %s\n", d.Class, d.Summary)
			if d.Cause != "" {
				fmt.Fprintf(v.Err, "  %s\n", d.Cause)
			}
			for _, ev := range d.Evidence {
				fmt.Fprintf(v.Err, "    > %s\n", ev)
			}
			if d.Action != "" {
				fmt.Fprintf(v.Err, "  Action: %s\n", d.Action)
			}
		}
		if len(se.LogTail) > 0 {
			fmt.Fprintf(v.Err, "\n  Last lines of the log (roofline logs %s):\n", strings.TrimPrefix(se.Addr, "server."))
			for _, l := range se.LogTail {
				fmt.Fprintf(v.Err, "    %s\n", l)
			}
		}
	}
}

// ApplyInterrupted prints what an interrupted apply left, per server.
func (v *View) ApplyInterrupted(outs []apply.Outcome) {
	fmt.Fprint(v.Err, v.Colorize("\n[yellow][bold]Apply interrupted.[reset] What each server was left as:\n"))
	for _, o := range outs {
		state := "not in the state"
		if o.Status != "" {
			state = "state: " + o.Status
			if o.PID != 0 {
				state += fmt.Sprintf(", pid %d", o.PID)
			}
		}
		fmt.Fprintf(v.Err, "  %-28s %-12s %s\n", o.Addr, o.What, state)
	}
	fmt.Fprintln(v.Err, "Run roofline plan to see what is left to do, roofline apply to do it.")
}

// ApplyErrorDiags are apply's per-server failures as diagnostics (apply
// -json): the phase, the error, the classified cause and the action.
func ApplyErrorDiags(err error) []diagfmt.Diag {
	errs := serverErrors(err)
	var out []diagfmt.Diag
	for _, e := range errs {
		var se *apply.ServerError
		if !errors.As(e, &se) {
			out = append(out, diagfmt.Diag{Severity: "error", Summary: "Apply failed", Detail: e.Error()})
			continue
		}
		detail := se.Err.Error()
		if se.KeptOld {
			detail += ". The old server was not touched and keeps serving."
		}
		if d := se.Diagnosis; d != nil && d.Class != "" && d.Class != "unknown" {
			detail += fmt.Sprintf("\n\nCause (%s): %s", d.Class, d.Summary)
			if d.Action != "" {
				detail += "\nAction: " + d.Action
			}
		}
		out = append(out, diagfmt.Diag{Severity: "error", Summary: fmt.Sprintf("%s failed (%s)", se.Addr, se.Phase), Detail: detail})
	}
	return out
}

// NewApplyUI returns the human progress of apply; terminal says whether
// stdout is one (a live line is drawn there, width columns wide).
func NewApplyUI(v *View, terminal bool, width func() int) *ApplyUI {
	return &ApplyUI{view: v, terminal: terminal, width: width, started: map[string]time.Time{}, last: map[string]time.Duration{}}
}

// ApplyUI (apply's Hooks) prints Terraform-style progress lines. Off a terminal it prints a
// "Still starting..." line every 10 s per server; on a terminal it keeps one
// live line at the bottom, redrawn in place, with every starting server's
// elapsed time and the last line of its log.
type ApplyUI struct {
	view     *View
	terminal bool
	width    func() int
	mu       sync.Mutex
	started  map[string]time.Time
	last     map[string]time.Duration
	live     map[string]liveEntry
	drawn    bool
	drawAt   time.Time
}

type liveEntry struct {
	elapsed time.Duration
	log     string
}

// clearLive erases the live line so a permanent line can be printed.
func (u *ApplyUI) clearLive() {
	if u.drawn {
		fmt.Fprint(u.view.Out, "\r\x1b[K")
		u.drawn = false
	}
}

func (u *ApplyUI) drawLive() {
	if !u.terminal || len(u.live) == 0 {
		return
	}
	names := make([]string, 0, len(u.live))
	for n := range u.live {
		names = append(names, n)
	}
	sort.Strings(names)
	width := u.width()
	var parts []string
	for _, n := range names {
		e := u.live[n]
		part := fmt.Sprintf("%s %s", strings.TrimPrefix(n, "server."), e.elapsed.Round(time.Second))
		if len(names) == 1 && e.log != "" {
			part += ": " + e.log
		}
		parts = append(parts, part)
	}
	line := "starting: " + strings.Join(parts, " | ")
	if len(names) > 1 {
		// The last log line of the most recently active server.
		if e := u.live[names[0]]; e.log != "" {
			line += " | " + e.log
		}
	}
	if r := []rune(line); len(r) > width-1 {
		line = string(r[:width-2]) + "…"
	}
	fmt.Fprint(u.view.Out, "\r\x1b[K"+u.view.Colorize("[dim]"+line+"[reset]"))
	u.drawn = true
	u.drawAt = time.Now()
}

func (u *ApplyUI) Begin(addr, verb string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.started[addr] = time.Now()
	slog.Info("apply: begin", "server", addr, "step", verb)
	u.clearLive()
	fmt.Fprintf(u.view.Out, "%s: %s\n", u.view.Colorize("[bold]"+addr+"[reset]"), verb)
	u.drawLive()
}

func (u *ApplyUI) Progress(addr string, elapsed time.Duration, lastLog string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.terminal {
		if u.live == nil {
			u.live = map[string]liveEntry{}
		}
		u.live[addr] = liveEntry{elapsed, lastLog}
		if time.Since(u.drawAt) >= 250*time.Millisecond {
			u.drawLive()
		}
		return
	}
	if elapsed-u.last[addr] < 10*time.Second {
		return
	}
	u.last[addr] = elapsed
	line := fmt.Sprintf("%s: Still starting... [%s elapsed]", u.view.Colorize("[bold]"+addr+"[reset]"), elapsed.Round(time.Second))
	if lastLog != "" {
		line += " " + u.view.Colorize("[dim]"+lastLog+"[reset]")
	}
	fmt.Fprintln(u.view.Out, line)
}

// Note prints a step of a rollout ("Gates passed; the proxy ... switched").
func (u *ApplyUI) Note(addr, msg string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.clearLive()
	fmt.Fprintf(u.view.Out, "%s: %s\n", u.view.Colorize("[bold]"+addr+"[reset]"), msg)
	u.drawLive()
}

func (u *ApplyUI) End(addr, verb string, elapsed time.Duration, detail string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if elapsed == 0 {
		if t, ok := u.started[addr]; ok {
			elapsed = time.Since(t)
		}
	}
	delete(u.live, addr)
	slog.Info("apply: end", "server", addr, "step", verb, "elapsed", elapsed, "detail", detail)
	u.clearLive()
	line := fmt.Sprintf("%s: %s after %s", u.view.Colorize("[bold]"+addr+"[reset]"), verb, elapsed.Round(100*time.Millisecond))
	if detail != "" {
		line += " [" + detail + "]"
	}
	fmt.Fprintln(u.view.Out, line)
	u.drawLive()
}
