package cli

import (
	"errors"
	"strings"

	"github.com/roofline/roofline/internal/journal"
	"github.com/roofline/roofline/internal/views"
)

func init() {
	register(&Command{
		Name:     "journal",
		Synopsis: "Show the journal of rollouts and benchmarks",
		Usage:    views.UsageJournal,
		Run:      runJournal,
	})
}

func runJournal(m *Meta, args []string) int {
	fs := newFlags("journal")
	jsonOut := fs.Bool("json", false, "")
	if !parseConfigFlags(m, fs, args) {
		return ExitError
	}
	if fs.NArg() > 1 {
		return usageError(m, "journal", "unexpected argument "+fs.Arg(1))
	}
	cfg, ok := loadConfig(m)
	if !ok {
		return ExitError
	}
	path := journal.Path(stateDir(cfg))
	entries, err := journal.Read(path)
	var bad *journal.BadLinesError
	switch {
	case errors.As(err, &bad):
		m.view().Warnf("%v", err)
	case err != nil:
		m.view().Errorf("%v", err)
		return ExitError
	}
	if fs.NArg() == 1 {
		name := strings.TrimPrefix(fs.Arg(0), "server.")
		entries = journal.ForServer(entries, name)
		if len(entries) == 0 && cfg.Servers[name] == nil {
			m.view().Errorf("no server %q in the configuration or the journal.", name)
			return ExitError
		}
	}
	views.NewJournal(views.TypeOf(*jsonOut), m.view()).Entries(path, entries)
	return ExitOK
}
