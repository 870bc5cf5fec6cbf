package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/driver/process"
	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/fsx"
	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/rehearsal"
	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/views"
)

func init() {
	register(&Command{
		Name:     "import",
		Synopsis: "Take over a server that already runs",
		Usage:    views.UsageImport,
		Run:      runImport,
	})
}

func runImport(m *Meta, args []string) int {
	fs := newFlags("import")
	var o planOptions
	o.vars = varFlags(fs)
	genOut := fs.String("generate-config-out", "", "")
	fs.StringVar(&o.inventory, "inventory", "", "")
	fs.DurationVar(&o.lockTimeout, "lock-timeout", 0, "")
	if !parseFlags(m, fs, args) {
		return ExitError
	}
	if fs.NArg() != 2 {
		return usageError(m, "import", "expected ADDRESS and ID, such as: roofline import server.qwen3 port:8000")
	}
	name, err := config.ParseServerAddr(fs.Arg(0))
	if err != nil {
		return usageError(m, "import", err.Error())
	}
	id, err := config.ParseImportID(fs.Arg(1))
	if err != nil {
		return usageError(m, "import", err.Error())
	}
	if *genOut != "" {
		return generateConfig(m, o, name, id, *genOut)
	}
	o.targets = []string{state.ServerAddr(name)}
	o.addImport = &config.Import{To: name, ID: id}
	p, b, st, unlock, ok := makePlan(m, &o, plan.ModeNormal, "import")
	if !ok {
		return ExitError
	}
	defer unlock()
	if declared := b.cfg.Servers[name] != nil; !declared || st.Server(name) != nil {
		m.view().ImportRefused(name, fs.Arg(0), id.String(), declared)
		return ExitError
	}
	if p.HasErrors() {
		printDiags(m, b.cfg, p.Diagnostics)
		return ExitError
	}
	c := p.Change(name)
	if c == nil || c.Import == nil || c.Before == nil {
		printDiags(m, b.cfg, p.Diagnostics)
		m.view().NotImported(name)
		return ExitError
	}
	st.Set(c.Before.Clone())
	if err := b.states.Write(st); err != nil {
		fmt.Fprintf(m.Err, "Error: %v. Nothing was imported.\n", err)
		return ExitError
	}
	m.view().Imported(name, id.String(), c.Import)
	return ExitOK
}

// describeImport reads the process an import id names (plan's ReadImport).
func describeImport(id config.ImportID) *plan.ImportedProcess {
	d := process.New()
	ip := &plan.ImportedProcess{ID: id.String()}
	describe, n := d.Describe, id.PID
	if id.Port > 0 {
		describe, n = d.DescribeListener, id.Port
	}
	desc, err := describe(n)
	if err != nil {
		ip.Err = err
		return ip
	}
	ip.Instance, ip.Session, ip.Env, ip.Uptime, ip.OwnGroup = desc.Instance, desc.Session, desc.Env, desc.Uptime, desc.OwnGroup
	return ip
}

// generateConfig writes a server block for the process id to path.
func generateConfig(m *Meta, o planOptions, name string, id config.ImportID, path string) int {
	if !setVars(m, "import", *o.vars) {
		return ExitError
	}
	if _, err := os.Lstat(path); err == nil {
		m.view().GenerateRefused(name, path, true)
		return ExitError
	}
	cfg, ok := loadConfig(m)
	if !ok {
		return ExitError
	}
	if cfg.Servers[name] != nil {
		m.view().GenerateRefused(name, path, false)
		return ExitError
	}
	ip := describeImport(id)
	if ip.Err != nil {
		fmt.Fprintf(m.Err, "Error: Cannot import: %v\n", ip.Err)
		return ExitError
	}
	src, notes, err := engine.GenerateServer(cfg, strings.SplitN(name, "[", 2)[0], ip.Cmdline, ip.Env, rehearsal.Recognize)
	if err != nil {
		fmt.Fprintf(m.Err, "Error: %v\n", err)
		return ExitError
	}
	if created, err := fsx.CreateOnce(path, src, 0o644); err != nil || !created {
		if err != nil {
			fmt.Fprintf(m.Err, "Error: %v\n", err)
		} else {
			m.view().GenerateRefused(name, path, true)
		}
		return ExitError
	}
	m.view().ConfigGenerated(name, state.ServerAddr(name), ip.PID, path, notes, id.String())
	return ExitOK
}
