package plan

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/state"
)

// ImportedProcess is a running process an import block names, as refresh
// read it from /proc (plan itself reads nothing).
type ImportedProcess struct {
	// Instance is its identity as the driver that read it records one
	// (driver, id, pid, group, start time, boot id, command line); ID
	// below, the import id, hides its ID (Instance.ID).
	state.Instance
	ID      string // "port:8000"
	Session int
	Env     map[string]string
	Uptime  time.Duration
	// OwnGroup: the process leads its own session and group, so a stop
	// reaches it and its workers only; otherwise roofline refuses to stop it.
	OwnGroup bool
	Err      error // the process could not be found or read
}

// ImportInfo is what a change says about an import: shown as
// "# server.x will be imported (pid 1234, up 41 days)".
type ImportInfo struct {
	ID       string `json:"id"`
	PID      int    `json:"pid"`
	Uptime   string `json:"uptime,omitempty"`
	OwnGroup bool   `json:"own_group"`
	// Differences name what differs from the configuration: each forces a
	// restart (a replacement planned with the import).
	Differences []string `json:"differences,omitempty"`
}

// applyImports turns the import blocks whose server is not in the state
// into state records of the running processes, in (a copy of) the prior
// state: diff then compares them with the configuration like any server.
// Identical ones are imported with nothing else to do; others are imported
// and replaced, with each difference named.
func (pl *planner) applyImports() {
	cfg := pl.in.Config
	if cfg == nil || len(cfg.Imports) == 0 || pl.p.Mode == ModeDestroy {
		return
	}
	for _, im := range cfg.Imports {
		if pl.prior.Server(im.To) != nil || !pl.targeted(im.To) {
			continue // imported already
		}
		if pl.in.Review {
			pl.diag(hcl.DiagWarning, ptr(im.DeclRange), "Import not checked in review",
				"server.%s would be imported from %s on the GPU host; a review plan cannot read its processes.", im.To, im.ID)
			continue
		}
		var ip *ImportedProcess
		if pl.in.ReadImport != nil {
			ip = pl.in.ReadImport(im.ID)
		}
		if ip == nil || ip.Err != nil {
			err := fmt.Errorf("no process was read")
			if ip != nil {
				err = ip.Err
			}
			pl.diag(hcl.DiagError, ptr(im.IDRange), "Cannot import", "server.%s from %s: %v.", im.To, im.ID, err)
			continue
		}
		d := pl.desired[im.To]
		if d == nil {
			continue // its own errors say why
		}
		rec, diffs, later := importRecord(d, ip, pl.in.Now)
		if pl.imports == nil {
			pl.prior = pl.prior.Clone()
			pl.imports = map[string]*ImportInfo{}
		}
		pl.prior.Set(rec)
		info := &ImportInfo{ID: ip.ID, PID: ip.PID, Uptime: humanAge(ip.Uptime), OwnGroup: ip.OwnGroup, Differences: diffs}
		pl.imports[im.To] = info
		if len(later) > 0 && len(diffs) == 0 {
			pl.diag(hcl.DiagWarning, ptr(im.DeclRange), "Imported process lacks roofline's start settings",
				"pid %d runs without %s, which roofline gives every engine it starts (no model downloads, no usage reports). A running process's environment cannot change, so roofline takes it over as it runs, with no restart; they take effect at its next start by roofline (a rollout, or now with -replace=server.%s).", ip.PID, strings.Join(later, ", "), im.To)
		}
		if !ip.OwnGroup {
			pl.diag(hcl.DiagWarning, ptr(im.DeclRange), "Imported process shares its group",
				"pid %d is in process group %d (its shell's, say), not a group of its own: roofline will refuse to stop it, since signalling the group could reach other processes. Stop it by hand when it must go, or start it with setsid.", ip.PID, ip.Group)
		}
	}
}

// importRecord builds the state record of an imported process and names
// what differs from the desired server. later are roofline's air-gap
// variables the process lacks: they act when an engine starts, so their
// absence does not force a restart of one that runs (the record keeps the
// process's real environment).
func importRecord(d *Desired, ip *ImportedProcess, now time.Time) (rec *state.Server, diffs, later []string) {
	want, have := d.Argv[min(d.CommandLen, len(d.Argv)):], ip.Cmdline[min(d.CommandLen, len(ip.Cmdline)):]
	if !slices.Equal(want, have) {
		diffs = append(diffs, engine.ArgvDiffAttrs(have, want)...)
		if len(diffs) == 0 {
			diffs = append(diffs, "command line")
		}
	}
	env := map[string]string{}
	airGap := engine.AirGapEnv()
	for k, v := range d.Env {
		got, ok := ip.Env[k]
		if ok {
			env[k] = got
		}
		switch {
		case ok && got == v:
		case !ok && airGap[k] == v:
			later = append(later, k+"="+v)
		default:
			diffs = append(diffs, "env "+k)
		}
	}
	slices.Sort(later)
	if d.Proxy {
		diffs = append(diffs, "create_before_destroy (roofline's proxy goes in front)")
	}
	slices.Sort(diffs)
	diffs = slices.Compact(diffs)
	hash := d.ConfigHash
	if len(diffs) > 0 {
		hash = "imported:differs"
	}
	created := now.Add(-ip.Uptime).UTC()
	rec = &state.Server{
		Name: d.Name, Engine: d.Engine, Model: d.Model,
		Argv: state.RedactArgv(ip.Cmdline, nil), Env: state.RedactEnv(env, nil), CommandLen: d.CommandLen,
		GPUs: slices.Clone(d.GPUs), Host: d.Host, Port: d.Port,
		Instance: ip.Instance.Clone(),
		Status:   state.StatusReady, CreatedAt: created, ReadyAt: created,
		ConfigHash: hash, GateHash: d.GateHash,
	}
	return rec, diffs, later
}

// humanAge says how long a process has run: "41 days", "3h12m", "40s".
func humanAge(d time.Duration) string {
	switch {
	case d <= 0:
		return ""
	case d >= 48*time.Hour:
		return fmt.Sprintf("%d days", int(d.Hours()/24))
	case d >= time.Hour:
		return d.Truncate(time.Minute).String()
	}
	return d.Truncate(time.Second).String()
}

// importReasons words the replacement planned with an import: each
// difference from the configuration forces the restart.
func (pl *planner) importReasons() {
	for _, c := range pl.p.Changes {
		if c.Import == nil || c.Action == NoOp {
			continue
		}
		c.Reason = "the imported process differs from the configuration: " + strings.Join(c.Import.Differences, ", ")
	}
}
