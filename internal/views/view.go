package views

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// ViewType picks a command's view: for people or for machines.
type ViewType int

const (
	ViewHuman ViewType = iota
	ViewJSON
	// ViewMarkdown: a plan for a pull request comment (plan, show).
	ViewMarkdown
	// ViewRaw: a value as it is, for shell scripts (output -raw).
	ViewRaw
)

// TypeOf is ViewJSON when a command's -json flag is set.
func TypeOf(jsonOut bool) ViewType {
	if jsonOut {
		return ViewJSON
	}
	return ViewHuman
}

// View is what every command's view writes through: the (masked) standard
// streams and the colour setting. cli builds one per command after parsing
// its flags (-no-color is per command too).
type View struct {
	Out io.Writer
	Err io.Writer
	// Color: markup turns into ANSI codes; otherwise it is dropped.
	Color bool
	// CompactWarnings (-compact-warnings): one line per warning.
	CompactWarnings bool
}

var colorCodes = []struct{ tag, code string }{
	{"[reset]", "\x1b[0m"}, {"[bold]", "\x1b[1m"}, {"[dim]", "\x1b[2m"},
	{"[red]", "\x1b[31m"}, {"[green]", "\x1b[32m"}, {"[yellow]", "\x1b[33m"},
	{"[blue]", "\x1b[34m"}, {"[magenta]", "\x1b[35m"}, {"[cyan]", "\x1b[36m"},
}

// Colorize turns [green]...[reset] markup into ANSI codes when color is on,
// and strips it otherwise (Terraform's colorstring convention).
func Colorize(s string, color bool) string {
	for _, c := range colorCodes {
		repl := ""
		if color {
			repl = c.code
		}
		s = strings.ReplaceAll(s, c.tag, repl)
	}
	return s
}

// Colorize is Colorize with the view's colour setting.
func (v *View) Colorize(s string) string { return Colorize(s, v.Color) }

// Errorf writes "Error: ..." to stderr.
func (v *View) Errorf(format string, a ...any) {
	fmt.Fprintf(v.Err, "Error: "+format+"\n", a...)
}

// Warnf writes "Warning: ..." to stderr.
func (v *View) Warnf(format string, a ...any) {
	fmt.Fprintf(v.Err, "Warning: "+format+"\n", a...)
}

// UsageError says what is wrong with a command's arguments and where its
// usage is.
func (v *View) UsageError(cmd, msg string) {
	fmt.Fprintf(v.Err, "Error: %s\n\nRun \"roofline %s -h\" for its usage.\n", msg, cmd)
}

// writeJSON writes v indented, as every -json object and array is.
func writeJSON(w io.Writer, v any) {
	b, _ := json.MarshalIndent(v, "", "  ")
	fmt.Fprintln(w, string(b))
}
