package views

import (
	"fmt"
	"io"
)

// Logs is roofline logs' view: the engine's log, as written (no -json).
type Logs struct{ view *View }

// NewLogs returns logs' view.
func NewLogs(v *View) *Logs { return &Logs{v} }

// Lines prints the last lines of the log.
func (l *Logs) Lines(lines []string) {
	for _, s := range lines {
		fmt.Fprintln(l.view.Out, s)
	}
}

// Copy prints the whole log from r.
func (l *Logs) Copy(r io.Reader) error {
	_, err := io.Copy(l.view.Out, r)
	return err
}

// Follow prints what the log gained since.
func (l *Logs) Follow(b []byte) { _, _ = l.view.Out.Write(b) }
