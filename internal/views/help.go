package views

import (
	"fmt"
	"strings"
)

// HelpCommand is one line of roofline help's list.
type HelpCommand struct{ Name, Synopsis string }

// Help prints roofline's usage and its commands, sorted by the caller.
func (v *View) Help(cmds []HelpCommand) {
	w := v.Out
	fmt.Fprint(w, `Usage: roofline [global options] <command> [args]

roofline declares vLLM and SGLang inference servers in HCL, plans them against
the GPUs, engines and files that exist, and applies them behind health, smoke
and benchmark gates.

Commands:
`)
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-16s %s\n", c.Name, c.Synopsis)
	}
	fmt.Fprint(w, `
Global options (before the command):
  -chdir=DIR   Switch to DIR before running the command.
  -no-color    Disable colour in the output (also NO_COLOR=1).

"roofline help COMMAND" or "roofline COMMAND -h" shows a command's options.
Flags take one dash or two: -json and --json are the same.
`)
}

// Usage prints a command's help text.
func (v *View) Usage(text string) {
	fmt.Fprint(v.Out, strings.TrimRight(text, "\n")+"\n")
}
