package cli

import (
	"context"
	"os"
	"strings"

	"github.com/roofline/roofline/internal/apply"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/proxy"
	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/suggest"
	"github.com/roofline/roofline/internal/views"
)

func init() {
	register(&Command{
		Name:     "status",
		Synopsis: "Show the servers that run, their health and footprint",
		Usage:    views.UsageStatus,
		Run:      runStatus,
	})
	register(&Command{
		Name:     "logs",
		Synopsis: "Show a server's log",
		Usage:    views.UsageLogs,
		Run:      runLogs,
	})
	register(&Command{
		Name:     "show",
		Synopsis: "Show a saved plan or the state",
		Usage:    views.UsageShow,
		Run:      runShow,
	})
}

func runStatus(m *Meta, args []string) int {
	fs := newFlags("status")
	jsonOut := fs.Bool("json", false, "")
	if !parseConfigFlags(m, fs, args) {
		return ExitError
	}
	b, st, ok := openStateFile(m)
	if !ok {
		return ExitError
	}
	obs := newObserver(b.drivers, b.stateDir)
	// GPU memory held by each server's processes, where NVML (or the
	// configured inventory) lists them; a failed snapshot only costs the
	// column.
	var snap *gpu.Snapshot
	if sn, err := b.inventory("").Snapshot(context.Background()); err == nil {
		snap = sn
	}
	cals, _ := state.ReadCalibrations(b.stateDir) // unreadable: no prediction column
	observe := func(s *state.Server) *plan.Observation { return obs.Observe(context.Background(), s) }
	serving := func(name string) int { return proxy.BackendPort(b.stateDir, name) }
	rows := views.StatusRows(st, observe, snap, cals, serving)
	code := ExitOK
	for _, r := range rows {
		if r.Unhealthy() {
			code = ExitUnhealthy
		}
	}
	views.NewStatus(views.TypeOf(*jsonOut), m.view()).Rows(rows)
	return code
}

// ExitUnhealthy: status found a server that is gone, failed or not healthy.
const ExitUnhealthy = 2

func runLogs(m *Meta, args []string) int {
	fs := newFlags("logs")
	n := fs.IntP("n", "n", 100, "")
	follow := fs.BoolP("follow", "f", false, "")
	if !parseConfigFlags(m, fs, args) {
		return ExitError
	}
	if fs.NArg() != 1 {
		return usageError(m, "logs", "give one server name")
	}
	name := strings.TrimPrefix(fs.Arg(0), "server.")
	cfg, ok := loadConfig(m)
	if !ok {
		return ExitError
	}
	dir := stateDir(cfg)
	path := apply.LogPath(dir, name)
	s := stateServer(m, cfg, name)
	if s == nil && cfg.Servers[name] == nil {
		m.view().Errorf("no server %q in the configuration or the state.%s", name, suggest.DidYouMean(name, cfg.ServerNames()))
		return ExitError
	}
	if s != nil && s.LogPath != "" {
		path = s.LogPath
		// A container's log lives in the daemon; bring the file up to date.
		newDrivers().SyncLog(context.Background(), s)
	}
	f, err := os.Open(path)
	if err != nil {
		m.view().Errorf("no log for server %q (%v). A server has a log once apply has started it.", name, err)
		return ExitError
	}
	defer f.Close()
	if apply.ShowLog(context.Background(), f, *n, *follow, views.NewLogs(m.view())) != nil {
		return ExitError // following ends only so
	}
	return ExitOK
}

// stateServer returns the named server's record, or nil.
func stateServer(m *Meta, cfg *config.Config, name string) *state.Server {
	st, err := newBackend(cfg).states.Read()
	if err != nil || st == nil {
		return nil
	}
	return st.Server(name)
}

func runShow(m *Meta, args []string) int {
	fs := newFlags("show")
	jsonOut := fs.Bool("json", false, "")
	format := fs.String("format", "human", "")
	if !parseConfigFlags(m, fs, args) {
		return ExitError
	}
	if fs.NArg() > 1 {
		return usageError(m, "show", "give at most one plan file")
	}
	if *format != "human" && (*format != "markdown" || fs.NArg() == 0) {
		return usageError(m, "show", "-format=markdown shows a plan file: roofline show -format=markdown PLANFILE")
	}
	vt := views.TypeOf(*jsonOut)
	if *format == "markdown" && !*jsonOut {
		vt = views.ViewMarkdown
	}
	view := views.NewShow(vt, m.view())
	if fs.NArg() == 1 {
		b, ok := openBackend(m)
		if !ok {
			return ExitError
		}
		p, err := plan.ReadFile(fs.Arg(0), b.states)
		if err != nil {
			m.view().Errorf("%v", err)
			return ExitError
		}
		view.Plan(p.ToJSON())
		return ExitOK
	}
	_, st, ok := openStateFile(m)
	if !ok {
		return ExitError
	}
	view.State(st)
	return ExitOK
}
