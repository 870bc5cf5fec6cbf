package cli

import (
	"strings"

	"github.com/roofline/roofline/internal/views"
)

func init() {
	register(&Command{
		Name:     "help",
		Synopsis: "Show help for roofline or one command",
		Usage:    views.UsageHelp,
		Run: func(m *Meta, args []string) int {
			if len(args) == 0 {
				printHelp(m)
				return ExitOK
			}
			c, rest := lookup(args)
			if c == nil || len(rest) > 0 {
				m.view().Errorf("no help for %q: unknown command.", strings.Join(args, " "))
				return ExitError
			}
			m.view().Usage(c.Usage)
			return ExitOK
		},
	})
}

// printHelp lists the commands that are not hidden.
func printHelp(m *Meta) {
	var list []views.HelpCommand
	for _, n := range visibleNames() {
		list = append(list, views.HelpCommand{Name: n, Synopsis: commands[n].Synopsis})
	}
	m.view().Help(list)
}
