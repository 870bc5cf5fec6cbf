package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

func init() {
	register(&Command{
		Name:     "help",
		Synopsis: "Show help for roofline or one command",
		Usage:    "Usage: roofline help [COMMAND [SUBCOMMAND]]\n",
		Run: func(m *Meta, args []string) int {
			if len(args) == 0 {
				printHelp(m.Out)
				return ExitOK
			}
			c, rest := lookup(args)
			if c == nil || len(rest) > 0 {
				fmt.Fprintf(m.Err, "Error: no help for %q: unknown command.\n", strings.Join(args, " "))
				return ExitError
			}
			fmt.Fprint(m.Out, strings.TrimRight(c.Usage, "\n")+"\n")
			return ExitOK
		},
	})
}

func printHelp(w io.Writer) {
	fmt.Fprint(w, `Usage: roofline [global options] <command> [args]

roofline declares vLLM and SGLang inference servers in HCL, plans them against
the GPUs, engines and files that exist, and applies them behind health, smoke
and benchmark gates.

Commands:
`)
	names := make([]string, 0, len(commands))
	for n, c := range commands {
		if !c.Hidden {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		c := commands[n]
		fmt.Fprintf(w, "  %-16s %s\n", n, c.Synopsis)
	}
	fmt.Fprint(w, `
Global options (before the command):
  -chdir=DIR   Switch to DIR before running the command.
  -no-color    Disable colour in the output (also NO_COLOR=1).

"roofline help COMMAND" or "roofline COMMAND -h" shows a command's options.
Flags take one dash or two: -json and --json are the same.
`)
}
