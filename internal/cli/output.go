package cli

import (
	"github.com/roofline/roofline/internal/suggest"
	"github.com/roofline/roofline/internal/views"
)

func init() {
	register(&Command{
		Name:     "output",
		Synopsis: "Show the values of output blocks",
		Usage:    views.UsageOutput,
		Run:      runOutput,
	})
}

func runOutput(m *Meta, args []string) int {
	fs := newFlags("output")
	jsonOut := fs.Bool("json", false, "")
	raw := fs.Bool("raw", false, "")
	if !parseConfigFlags(m, fs, args) {
		return ExitError
	}
	if fs.NArg() > 1 {
		return usageError(m, "output", "expected at most one output name")
	}
	if *jsonOut && *raw {
		return usageError(m, "output", "-json and -raw exclude each other")
	}
	if *raw && fs.NArg() == 0 {
		return usageError(m, "output", "-raw needs an output NAME")
	}
	cfg, ok := loadConfig(m)
	if !ok {
		return ExitError
	}
	vt := views.TypeOf(*jsonOut)
	if *raw {
		vt = views.ViewRaw
	}
	plain := m.plainOut
	if plain == nil {
		plain = m.Out
	}
	view := views.NewOutput(vt, m.view(), plain)
	ok = true
	if fs.NArg() == 1 {
		name := fs.Arg(0)
		o, found := cfg.Outputs[name]
		if !found {
			m.view().Errorf("Output %q not found\n\nThe configuration has no output block named %q.%s", name, name, suggest.DidYouMean(name, cfg.OutputNames()))
			return ExitError
		}
		ok = view.Output(views.OutputValue{Name: o.Name, Value: o.Value, Sensitive: o.Sensitive})
	} else {
		var outs []views.OutputValue
		for _, n := range cfg.OutputNames() {
			o := cfg.Outputs[n]
			outs = append(outs, views.OutputValue{Name: n, Value: o.Value, Sensitive: o.Sensitive})
		}
		ok = view.Outputs(outs)
	}
	if !ok {
		return ExitError
	}
	return ExitOK
}
