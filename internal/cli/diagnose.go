package cli

import (
	"context"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/views"
)

func init() {
	register(&Command{
		Name:     "diagnose",
		Synopsis: "Name the cause of a failed start from its log",
		Usage:    views.UsageDiagnose,
		Run:      runDiagnose,
	})
}

func runDiagnose(m *Meta, args []string) int {
	fset := newFlags("diagnose")
	file := fset.String("file", "", "")
	jsonOut := fset.Bool("json", false, "")
	if !parseConfigFlags(m, fset, args) {
		return ExitError
	}
	switch {
	case *file != "" && fset.NArg() > 0:
		return usageError(m, "diagnose", "give either SERVER or -file LOG, not both")
	case fset.NArg() > 1:
		return usageError(m, "diagnose", "unexpected argument "+fset.Arg(1))
	case *file == "" && fset.NArg() == 0:
		return usageError(m, "diagnose", "name a SERVER, or give a log with -file LOG")
	}
	path, kind := *file, "" // no state record: every kind's rules
	if path == "" {
		name := fset.Arg(0)
		if !config.SafeServerName(name) { // a name that cannot leave the logs directory
			m.view().Errorf("%q is not a server name.\n\nGive the name of a server block (server \"NAME\"), or a log file with -file LOG.", name)
			return ExitError
		}
		cfg, ok := loadConfig(m)
		if !ok {
			m.view().DiagnoseNeedsConfig(name)
			return ExitError
		}
		var err error
		if path, err = cfg.ServerLogPath(name); err != nil {
			m.view().Errorf("%v", err)
			return ExitError
		}
		rec := stateServer(m, cfg, name)
		newDrivers().SyncLog(context.Background(), rec)
		if rec != nil {
			kind = rec.Engine.Kind
		}
	}
	d, err := engine.LogsOf(kind).ClassifyFile(path, m.In) // "-" is standard input
	if err != nil {
		m.view().Errorf("%v", err)
		return ExitError
	}
	views.NewDiagnose(views.TypeOf(*jsonOut), m.view()).Diagnosis(d, path)
	return ExitOK
}
