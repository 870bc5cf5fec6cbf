package cli

import (
	"context"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/engine/logdiag"
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
		if !validServerName(name) {
			m.view().Errorf("%q is not a server name.\n\nGive the name of a server block (server \"NAME\"), or a log file with -file LOG.", name)
			return ExitError
		}
		cfg, ok := loadConfig(m)
		if !ok {
			m.view().DiagnoseNeedsConfig(name)
			return ExitError
		}
		if path, ok = serverLogPath(m, cfg, name); !ok {
			return ExitError
		}
		rec := stateServer(m, cfg, name)
		syncContainerLog(context.Background(), newDrivers(), rec)
		if rec != nil {
			kind = rec.Engine.Kind
		}
	}
	d, err := diagnoseLog(m, path, kind)
	if err != nil {
		m.view().Errorf("%v", err)
		return ExitError
	}
	views.NewDiagnose(views.TypeOf(*jsonOut), m.view()).Diagnosis(d, path)
	return ExitOK
}

// validServerName: a name that cannot leave the logs directory.
func validServerName(s string) bool { return config.SafeServerName(s) }

// serverLogPath returns the log apply writes for server name, or prints why
// there is none.
func serverLogPath(m *Meta, cfg *config.Config, name string) (string, bool) {
	path, err := cfg.ServerLogPath(name)
	if err != nil {
		m.view().Errorf("%v", err)
		return "", false
	}
	return path, true
}

// diagnoseLog classifies the log at path ("-" is standard input) of an
// engine of kind ("" when not known).
func diagnoseLog(m *Meta, path, kind string) (logdiag.Diagnosis, error) {
	return engine.LogsOf(kind).ClassifyFile(path, m.In)
}
