package cli

import (
	"context"
	"os"
	"strings"

	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/suggest"
	"github.com/roofline/roofline/internal/views"
)

func init() {
	register(&Command{
		Name:     "flags",
		Synopsis: "List the flags of an installed engine",
		Usage:    views.UsageFlags,
		Run:      runFlags,
	})
}

// selfExecutable is roofline's own path: the rehearsal engine runs it.
var selfExecutable = os.Executable

func runFlags(m *Meta, args []string) int {
	fs := newFlags("flags")
	jsonOut := fs.Bool("json", false, "")
	refresh := fs.Bool("refresh", false, "")
	// A query is often a flag itself ("--max-model-len"): only -json and
	// -refresh are options here, everything else is an argument.
	var opts, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case strings.HasPrefix(a, "-") && (name == "json" || name == "refresh"):
			opts = append(opts, a)
		case strings.HasPrefix(a, "-") && (name == "var" || name == "var-file"):
			opts = append(opts, a)
			if !hasValue && i+1 < len(args) {
				i++
				opts = append(opts, args[i])
			}
		case a != "--":
			pos = append(pos, a)
		}
	}
	if !parseConfigFlags(m, fs, opts) {
		return ExitError
	}
	if len(pos) < 1 || len(pos) > 2 {
		return usageError(m, "flags", "expected an engine block name and at most one query, such as: roofline flags vllm_016 max-model-len")
	}
	name, query := pos[0], ""
	if len(pos) == 2 {
		query = pos[1]
	}
	cfg, ok := loadConfig(m)
	if !ok {
		return ExitError
	}
	e, err := cfg.EngineNamed(name)
	if err != nil {
		m.view().Errorf("%v", err)
		return ExitError
	}
	self, err := selfExecutable()
	if err != nil {
		m.view().Errorf("cannot find roofline's own executable: %v", err)
		return ExitError
	}
	inst, err := newProber(self, stateDir(cfg), *refresh).Probe(context.Background(), e)
	if err != nil {
		m.view().Errorf("%v", err)
		return ExitError
	}
	if !engine.SameVersion(e.Version, inst.Version) {
		m.view().Warnf("engine %q pins %s %s, but %s is installed; these are the flags of %s.\n",
			e.Name, engine.KindName(e.Kind), e.Version, inst.Version, inst.Name())
	}
	found := inst.Flags.Filter(query)
	if len(found) == 0 && !*jsonOut {
		m.view().Errorf("no flag of %s matches %q.%s\n\nRun \"roofline flags %s\" for the full list.",
			inst.Name(), query, suggest.DidYouMean("--"+strings.TrimLeft(query, "-"), inst.Flags.OptionStrings()), e.Name)
		return ExitError
	}
	if err := views.NewFlags(views.TypeOf(*jsonOut), m.view()).Flags(inst, found, query); err != nil {
		m.view().Errorf("%v", err)
		return ExitError
	}
	return ExitOK
}
