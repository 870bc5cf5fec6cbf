package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/roofline/roofline/internal/fsx"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/enginelock"
	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/journal"
	"github.com/roofline/roofline/internal/model"
	"github.com/roofline/roofline/internal/secret"
	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/version"
	"github.com/roofline/roofline/internal/vram"
)

// EngineResult is what refresh learned about one engine block.
type EngineResult struct {
	Installed *engine.Installed
	Err       error
}

// ModelResult is what refresh learned about one model folder.
type ModelResult struct {
	Info        *model.Info
	Fingerprint string
	// Files is the folder's manifest (ModelManifest); LegacyFingerprint
	// the fingerprint older roofline versions recorded.
	Files             map[string]string
	LegacyFingerprint string
	// Spec is the model as the memory model needs it; a host snapshot
	// carries it instead of the folder (Info is then nil).
	Spec *vram.ModelSpec
	// Problems are the folder's problems when Info is absent.
	Problems []model.Problem
	Err      error
}

// Observation is what refresh saw of one server in the state.
type Observation struct {
	// Alive: the recorded process (pid + start time + boot id) still runs.
	Alive bool
	// Detail says what was seen, for drift output ("pid 123 exited").
	Detail string
	// Healthy is the quick probe's answer; nil when not probed.
	Healthy *bool
	// GPUPids are the pids of the server's process group, to tell its GPU
	// memory from foreign processes.
	GPUPids []int
	// ProxyPort is the backend port the server's proxy forwards to (read
	// from its target file, which the proxy follows within 100 ms); 0 when
	// there is no proxy or it cannot be read. It decides which instance of
	// an interrupted rollout serves.
	ProxyPort int
	// ProxyGone: the engine runs, but the proxy in front of it (the
	// server's public endpoint) is gone. Healthy is then false: nothing
	// answers on the server's port. Apply starts a new proxy in front of
	// the running engine; the engine is not restarted.
	ProxyGone bool
	// Kept is the previous instance kept for rollback (keep_previous),
	// observed like the server; nil when it keeps none.
	Kept *Observation
	// Found is an instance the state does not record but the driver found
	// by the server's launch id: started by a run that was killed before
	// it wrote the id. Plan only reports it; apply records it first thing
	// (and then stops or keeps it as the plan says).
	Found *state.Instance
}

// KeptExpired reports whether the previous instance kept beside s (for
// keep_previous) has outlived its window: the server's keep_previous, from
// the rollout's end (state.Server.WindowStart). No desired server, or no keep_previous, ends it.
func KeptExpired(s *state.Server, d *Desired, now time.Time) bool {
	if d == nil || d.KeepPrevious <= 0 {
		return true
	}
	return now.After(s.WindowStart().Add(d.KeepPrevious))
}

// Recovery is what an interrupted create-before-destroy rollout (a state
// with a deposed instance) needs. Plan describes it and apply does it, both
// through RecoveryOf, so they agree.
type Recovery int

const (
	// RecoverForward: the new instance passed its gates (or the proxy
	// already points at it): it becomes the server; the proxy is pointed at
	// it, the old instance drains and stops.
	RecoverForward Recovery = iota + 1
	// RecoverBack: the new instance never passed its gates or is gone: the
	// proxy is pointed back at the old instance (when it is not already)
	// before the new one is stopped.
	RecoverBack
)

// RecoveryOf decides an interrupted rollout of s (s.Deposed != nil): s is the
// new instance, newAlive whether its process runs, proxyPort where the proxy
// points (0 unknown). The instance that serves is never the one stopped.
func RecoveryOf(s *state.Server, proxyPort int, newAlive bool) Recovery {
	if !newAlive {
		return RecoverBack
	}
	if s.Status == state.StatusReady || (proxyPort != 0 && proxyPort == s.BackendPort) || (s.Gate != nil && s.Gate.Passed) {
		return RecoverForward
	}
	return RecoverBack
}

// PortChecker says whether a port is held, and by whom.
type PortChecker interface {
	Holder(host string, port int) (held bool, who string)
}

// Listener is a socket listening on a port: its address, its owner's pid
// (0 when not visible) and a description of the owner.
type Listener struct {
	Addr string
	PID  int
	Who  string
}

// ListenerLister lists every socket listening on a port, IPv4 and IPv6,
// one per socket (two SO_REUSEPORT sockets on one address are two). A
// PortChecker that implements it lets plan find foreign listeners beside
// running servers.
type ListenerLister interface {
	Listeners(port int) []Listener
}

// Inputs is everything the planner needs; refresh gathers it.
type Inputs struct {
	Config      *config.Config
	Prior       *state.File
	Snapshot    *gpu.Snapshot
	SnapshotErr error
	Engines     map[string]EngineResult
	Models      map[string]ModelResult
	Observed    map[string]*Observation
	// LastBench is the newest journal entry with bench figures, per server.
	LastBench map[string]*journal.Entry
	// Calibrations are the engines' measured figures of past starts.
	Calibrations *state.Calibrations
	Ports        PortChecker
	Mode         Mode
	// Review is plan in code review: the GPUs come from a recorded
	// snapshot and the engines and model folders may not exist on this
	// machine. A missing engine is then checked against roofline's built-in
	// flag list of its pinned version, and a missing model folder skips the
	// VRAM check; both are warnings instead of errors. apply never reviews.
	Review bool
	// ReadHostFile and Getenv read host secrets (env_from_file,
	// env_from_host) for the rotation check only; nil: not read (review).
	ReadHostFile func(path string) (string, error)
	Getenv       func(name string) (string, bool)
	Targets      []string // server names; empty = all
	Replace      []string // server names to replace even if unchanged
	// ReadImport reads the process an import block names, for the blocks
	// plan imports (imports.go); nil: none is read.
	ReadImport func(id config.ImportID) *ImportedProcess
	// Drivers chooses each server's driver: the driver set cli fills,
	// where each driver says which servers it runs. plan names no driver.
	Drivers DriverChooser
	Now     time.Time
	// LockFile is the lock file (roofline.lock.hcl) the probed engines are
	// checked against once planned; "": not checked (a -review plan, whose
	// engines may be stand-ins, and the agent's plans).
	LockFile string
}

// DriverChooser names the driver that runs server s, whose engine block is
// e (driver.Set.Choose), or says why none does.
type DriverChooser interface {
	Choose(s *config.Server, e *config.Engine) (string, error)
}

// Make plans. It never fails: problems are diagnostics in the plan.
func Make(in *Inputs) *Plan {
	p := makePlan(in)
	if in.LockFile != "" && in.Config != nil {
		// After planning: a review plan's stand-in installs are in
		// in.Engines by now, and are checked as the probed ones are.
		p.Diagnostics = append(p.Diagnostics, enginelock.Check(in.LockFile, in.Config, InstalledOf(in.Engines))...)
	}
	return p
}

func makePlan(in *Inputs) *Plan {
	cfg := in.Config
	prior := in.Prior
	if prior == nil {
		prior = state.NewFile()
	}
	p := &Plan{
		FormatVersion:   FormatVersion,
		RooflineVersion: version.Version,
		CreatedAt:       in.Now,
		Mode:            in.Mode,
		Lineage:         prior.Lineage,
		PriorSerial:     prior.Serial,
		Targets:         in.Targets,
	}
	if p.Mode == "" {
		p.Mode = ModeNormal
	}
	p.Secrets = secret.NewSet()
	if cfg != nil {
		p.ConfigDir = cfg.Dir
		p.Files = cfg.Files
		p.Secrets = cfg.Secrets()
	}
	if in.Snapshot != nil {
		p.InventoryFingerprint = in.Snapshot.Fingerprint()
		p.InventorySource = in.Snapshot.Source
		p.Snapshot = in.Snapshot
	}
	pl := &planner{in: in, p: p, prior: prior, desired: map[string]*Desired{}, fits: map[string]*vram.Result{}, fitIn: map[string]*sizing{}, host: map[string]map[string]string{}}
	p.Installs, p.Models = InstallIDs(cfg, in.Engines), map[string]string{}
	for name, m := range in.Models {
		if m.Fingerprint != "" {
			p.Models[name] = m.Fingerprint
		}
	}
	if len(in.Targets) > 0 {
		pl.diag(hcl.DiagWarning, nil, "Resource targeting is in effect",
			"You are creating a plan with the -target option, which means that the result of this plan may not represent all of the changes requested by the current configuration.\n\nThe -target option is not for routine use, and is provided only for exceptional situations such as recovering from errors or mistakes.")
	}
	pl.applyMoves()
	pl.drift()
	if p.Mode == ModeRefreshOnly {
		return p
	}
	if p.Mode != ModeDestroy {
		// No server on this host (all on clusters, docs/kubernetes.md): no
		// GPU of this host is needed.
		if in.SnapshotErr != nil && (cfg == nil || len(cfg.Servers) > 0) {
			detail := in.SnapshotErr.Error()
			if errors.Is(in.SnapshotErr, gpu.ErrNVMLUnavailable) {
				detail += "\n\nOn a machine without the GPUs (code review, CI), plan against the GPU host's snapshot: run roofline snapshot -out=host.json there, then roofline plan -review -snapshot=host.json here (docs/apply.md)."
			}
			p.Diagnostics = append(p.Diagnostics, &hcl.Diagnostic{Severity: hcl.DiagError,
				Summary: "No GPU inventory", Detail: detail})
		}
		pl.engineAndModelChecks()
		for _, name := range cfg.ServerNames() {
			pl.desire(cfg.Servers[name])
		}
		pl.applyImports()
	}
	pl.diff()
	pl.importReasons()
	pl.lifecycleRules()
	pl.renameHints()
	if p.Mode != ModeDestroy {
		pl.crossChecks()
	}
	pl.keptStops()
	sortDiags(p.Diagnostics)
	return p
}

type planner struct {
	in      *Inputs
	p       *Plan
	prior   *state.File
	desired map[string]*Desired
	fits    map[string]*vram.Result
	fitIn   map[string]*sizing         // how each server was sized
	specs   map[*model.Info]specResult // per model, see modelSpec
	moved   map[string]string          // new name → name in the state (moved blocks)
	imports map[string]*ImportInfo     // servers imported by this plan (imports.go)
	// host holds the host secrets plan could read, per server, for the
	// rotation check; never stored or shown.
	host map[string]map[string]string
}

// applyMoves renames servers in (a copy of) the prior state as the moved
// blocks say, so the rest of the plan compares the new names; each change
// remembers its previous name and apply re-keys it first.
func (pl *planner) applyMoves() {
	cfg := pl.in.Config
	if cfg == nil || len(cfg.Moved) == 0 {
		return
	}
	cloned := false
	for _, m := range cfg.Moved {
		if pl.prior.Server(m.From) == nil {
			continue // moved already, or never applied
		}
		if pl.prior.Server(m.To) != nil {
			pl.diag(hcl.DiagWarning, ptr(m.DeclRange), "Moved object already exists",
				"Both server.%s and server.%s are in the state, so this moved block is ignored: server.%s is planned on its own. Remove one of them (roofline state rm) or this block.", m.From, m.To, m.From)
			continue
		}
		if !cloned {
			cloned = true
			pl.prior = pl.prior.Clone()
			in := *pl.in
			in.Observed = maps.Clone(in.Observed)
			in.LastBench = maps.Clone(in.LastBench)
			pl.in = &in
			pl.moved = map[string]string{}
		}
		_ = pl.prior.Move(m.From, m.To)
		if o, ok := pl.in.Observed[m.From]; ok {
			delete(pl.in.Observed, m.From)
			pl.in.Observed[m.To] = o
		}
		if b, ok := pl.in.LastBench[m.From]; ok {
			delete(pl.in.LastBench, m.From)
			pl.in.LastBench[m.To] = b
		}
		pl.moved[m.To] = m.From
	}
}

// triggerFiles hashes the files of a server's replace_triggered_by (a chat
// template the engine reads at start, say); "" when it has none. A file
// that cannot be read is an error: the plan could not tell a change.
func (pl *planner) triggerFiles(s *config.Server) string {
	var parts []string
	for _, t := range s.Lifecycle.ReplaceTriggeredBy {
		if t.File == "" {
			continue
		}
		b, err := fsx.ReadFile(t.File, 64<<20)
		if err != nil {
			pl.diag(hcl.DiagError, ptr(t.Range), "Cannot read a replace_triggered_by file", "%s: %v. plan hashes the file to tell when it changes.", t.File, err)
			parts = append(parts, t.File+":unreadable")
			continue
		}
		sum := sha256.Sum256(b)
		parts = append(parts, t.File+":"+hex.EncodeToString(sum[:]))
	}
	return strings.Join(parts, "\n")
}

// lifecycleRules applies prevent_destroy, ignore_changes and server
// triggers of replace_triggered_by to the changes diff made.
func (pl *planner) lifecycleRules() {
	cfg := pl.in.Config
	if cfg == nil {
		return
	}
	replaced := map[string]bool{}
	for _, c := range pl.p.Changes {
		s := cfg.Servers[c.Name]
		if s == nil || pl.p.Mode == ModeDestroy {
			continue
		}
		if (c.Action == DeleteThenCreate || c.Action == CreateThenDelete) && !slices.Contains(pl.in.Replace, c.Name) &&
			c.Before != nil && c.Before.Status == state.StatusReady && len(c.ReplacePaths) > 0 {
			ignored := true
			for _, p := range c.ReplacePaths {
				ignored = ignored && s.Lifecycle.Ignores(p)
			}
			if ignored {
				c.Action, c.Reason = NoOp, ""
				pl.diag(hcl.DiagWarning, ptr(s.Lifecycle.DeclRange), "Changes ignored",
					"%s differs from the configuration in %s, which lifecycle.ignore_changes ignores: it keeps running as it is.", c.Addr, strings.Join(c.ReplacePaths, ", "))
				continue
			}
		}
		if c.Action == Create || c.Action == DeleteThenCreate || c.Action == CreateThenDelete {
			replaced[c.Name] = true
		}
	}
	// Server triggers: replace a running server when one it names is
	// created or replaced in this plan (one level, as Terraform).
	for _, c := range pl.p.Changes {
		s := cfg.Servers[c.Name]
		if s == nil || c.Before == nil || c.After == nil || (c.Action != NoOp && c.Action != Update) {
			continue
		}
		for _, t := range s.Lifecycle.ReplaceTriggeredBy {
			if t.Server == "" || !replaced[t.Server] {
				continue
			}
			c.Action = DeleteThenCreate
			if s.Lifecycle.CreateBeforeDestroy {
				c.Action = CreateThenDelete
			}
			c.ReplacePaths = []string{"replace_triggered_by"}
			c.Reason = fmt.Sprintf("replace_triggered_by: server.%s is replaced", t.Server)
			break
		}
	}
	for _, c := range pl.p.Changes {
		var s *config.Server
		if cfg != nil {
			s = cfg.Servers[c.Name]
		}
		if s == nil || !s.Lifecycle.PreventDestroy {
			continue
		}
		if c.Action == Delete || c.Action == DeleteThenCreate || c.Action == CreateThenDelete {
			if c.Action != Delete && c.Before == nil {
				continue
			}
			pl.diag(hcl.DiagError, ptr(s.Lifecycle.Ranges.Get("prevent_destroy", s.Lifecycle.DeclRange)), "Instance cannot be destroyed",
				"%s has lifecycle.prevent_destroy set, but the plan would %s it (%s). To go ahead, set prevent_destroy = false first; or undo the change, or use -target to leave it out.",
				c.Addr, map[bool]string{true: "destroy", false: "replace"}[c.Action == Delete], c.Reason)
		}
	}
}

// renameHints suggests a moved block for a server destroyed under one name
// and created, unchanged, under another: the rename costs a restart.
func (pl *planner) renameHints() {
	creates := map[string]*Change{}
	for _, c := range pl.p.Changes {
		if c.Action == Create && c.After != nil {
			creates[c.After.ConfigHash] = c
		}
	}
	for _, c := range pl.p.Changes {
		if c.Action != Delete || c.Before == nil || pl.p.Mode == ModeDestroy {
			continue
		}
		if n, ok := creates[c.Before.ConfigHash]; ok {
			pl.diag(hcl.DiagWarning, nil, "Rename with a restart",
				"%s would be destroyed and %s created with the same settings: a full stop and model load. If this is a rename, add\n\n  moved {\n    from = %s\n    to   = %s\n  }\n\nand roofline re-keys the running server instead (no restart), or run roofline state mv %s %s.",
				c.Addr, n.Addr, c.Addr, n.Addr, quoteAddr(c.Addr), quoteAddr(n.Addr))
		}
	}
}

func hasTriggerFiles(s *config.Server) bool { return triggerFileNames(s) != "" }

func triggerFileNames(s *config.Server) string {
	if s == nil {
		return ""
	}
	var out []string
	for _, t := range s.Lifecycle.ReplaceTriggeredBy {
		if t.File != "" {
			out = append(out, filepath.Base(t.File))
		}
	}
	return strings.Join(out, ", ")
}

// quoteAddr quotes an address with an instance key for the shell.
func quoteAddr(a string) string {
	if strings.ContainsAny(a, "[\"") {
		return "'" + a + "'"
	}
	return a
}

func (pl *planner) diag(sev hcl.DiagnosticSeverity, rng *hcl.Range, summary, detail string, args ...any) {
	var subj *hcl.Range
	if rng != nil {
		r := *rng
		subj = &r
	}
	pl.p.Diagnostics = append(pl.p.Diagnostics, &hcl.Diagnostic{Severity: sev, Summary: summary, Detail: fmt.Sprintf(detail, args...), Subject: subj})
}

func ptr(r hcl.Range) *hcl.Range { return &r }

func (pl *planner) targeted(name string) bool {
	return len(pl.in.Targets) == 0 || slices.Contains(pl.in.Targets, name)
}

// drift reports what changed outside roofline.
func (pl *planner) drift() {
	for _, name := range pl.prior.Names() {
		s := pl.prior.Servers[name]
		o := pl.in.Observed[name]
		if o == nil || s.Status == state.StatusFailed {
			continue // a failed start is roofline's own record, not drift
		}
		switch {
		case !o.Alive:
			pl.p.Drift = append(pl.p.Drift, &Drift{Addr: s.Addr(), Summary: "the process is gone", Detail: o.Detail})
		case o.ProxyGone:
			pl.p.Drift = append(pl.p.Drift, &Drift{Addr: s.Addr(), Summary: "the proxy is gone", Detail: o.Detail})
		case o.Healthy != nil && !*o.Healthy:
			pl.p.Drift = append(pl.p.Drift, &Drift{Addr: s.Addr(), Summary: "running but not healthy", Detail: o.Detail})
		}
		// max_model_len = "auto": the running start picked another context
		// than the previous start with the same settings.
		if c := pl.in.Calibrations.Latest(name); c != nil && o.Alive && (c.LaunchID == "" || c.LaunchID == s.LaunchID) &&
			c.PreviousPickedMaxModelLen > 0 && c.PickedMaxModelLen > 0 && c.PreviousPickedMaxModelLen != c.PickedMaxModelLen {
			pl.p.Drift = append(pl.p.Drift, &Drift{Addr: s.Addr(), Summary: "max_model_len = \"auto\" picked another context",
				Detail: fmt.Sprintf("the engine picked %d tokens at this start, %d at the previous start with the same settings: what it measures has changed (other processes on the GPU, another build); requests longer than %d now fail", c.PickedMaxModelLen, c.PreviousPickedMaxModelLen, c.PickedMaxModelLen)})
		}
	}
}

func (pl *planner) engineAndModelChecks() {
	cfg := pl.in.Config
	used := map[string]bool{}
	usedModels := map[string]bool{}
	for _, s := range cfg.Servers {
		if pl.targeted(s.Name) {
			used[s.Engine] = true
			usedModels[s.Model] = true
		}
	}
	for _, name := range cfg.EngineNames() {
		if !used[name] {
			continue
		}
		e := cfg.Engines[name]
		r := pl.in.Engines[name]
		if r.Err != nil && pl.in.Review {
			if ref, ok := engine.Reference(e.Kind, e.Version); ok {
				pl.diag(hcl.DiagWarning, ptr(e.DeclRange), "Engine not installed here",
					"%v. This is a review plan (GPUs from a recorded inventory), so flags and parsers were checked against roofline's built-in flag list of %s; on the GPU host, plan probes the install itself.", r.Err, ref.Name())
				pl.in.Engines[name] = EngineResult{Installed: ref}
				pl.p.Review = true
				continue
			}
			pl.diag(hcl.DiagWarning, ptr(e.DeclRange), "Engine not installed here",
				"%v. roofline has no built-in flag list of %s %s, so the servers of this engine are not rendered or checked in this review plan; run plan on the GPU host.", r.Err, e.Kind, e.Version)
			pl.p.Review = true
			continue
		}
		if r.Err != nil {
			pl.diag(hcl.DiagError, ptr(e.DeclRange), "Engine not usable", "%v", r.Err)
			continue
		}
		if r.Installed != nil {
			pl.p.Diagnostics = append(pl.p.Diagnostics, engine.CheckVersion(e, r.Installed)...)
		}
	}
	for _, name := range cfg.ModelNames() {
		if !usedModels[name] {
			continue
		}
		m := cfg.Models[name]
		r := pl.in.Models[name]
		if r.Err != nil && pl.in.Review {
			pl.diag(hcl.DiagWarning, ptr(m.Range("path")), "Model folder not here",
				"Model %q: %v. In this review plan the VRAM fit of its servers is not checked; on the GPU host, plan reads the folder.", m.Name, r.Err)
			pl.p.Review = true
			continue
		}
		if r.Err != nil {
			pl.diag(hcl.DiagError, ptr(m.Range("path")), "Model folder not usable", "Model %q: %v", m.Name, r.Err)
			continue
		}
		problems := r.Problems
		if r.Info != nil {
			problems = r.Info.Problems
		}
		for _, pr := range problems {
			sev := hcl.DiagError
			if pr.Severity == "warning" {
				sev = hcl.DiagWarning
			}
			detail := pr.Detail
			if pr.File != "" && !strings.HasPrefix(detail, pr.File+":") {
				detail = pr.File + ": " + detail
			}
			pl.diag(sev, ptr(m.Range("path")), pr.Summary, "Model %q: %s", m.Name, strings.TrimPrefix(detail, ": "))
		}
	}
}

// secretsKnown: in a review plan a sensitive variable has no value (CI
// has no secrets), which only a server's api_key may come from: plan needs
// to know that a key is set, never the key. Anything else cannot be
// rendered without it, and is an error that says where to keep the secret
// instead (an engine or a model from one is an error of config's already).
// Outside a review plan every value is known (cli asks for it).
func (pl *planner) secretsKnown(s *config.Server) bool {
	ok := true
	for _, attr := range slices.Sorted(maps.Keys(s.Unknown)) {
		if attr == "api_key" {
			continue
		}
		pl.diag(hcl.DiagError, ptr(s.DeclRange), "Sensitive value not known in a review plan",
			"%s of %s comes from a sensitive variable that has no value here: a review plan runs without secrets, so it cannot render this server. Keep the secret on the GPU host instead: env_from_file or env_from_host for the engine's environment, api_key or api_key_file for the server's key (docs/security.md); or pass the variable to this plan.", attr, s.Addr())
		ok = false
	}
	if ok && s.Unknown["api_key"] {
		pl.p.Review = true
	}
	return ok
}

// desire renders one server and runs its own checks (flags, VRAM).
func (pl *planner) desire(s *config.Server) {
	if !pl.targeted(s.Name) {
		return
	}
	cfg := pl.in.Config
	e, m := cfg.Engines[s.Engine], cfg.Models[s.Model]
	if e == nil || m == nil {
		return
	}
	er, mr := pl.in.Engines[e.Name], pl.in.Models[m.Name]
	if er.Installed == nil || !pl.secretsKnown(s) {
		return
	}
	launch, diags := engine.Render(s, m, e, er.Installed)
	pl.p.Diagnostics = append(pl.p.Diagnostics, diags...)
	if launch == nil {
		return
	}
	d := &Desired{
		Name:   s.Name,
		Engine: state.EngineRef{Name: e.Name, Kind: e.Kind, Version: er.Installed.Version, Identity: engineIdentity(e, er.Installed)},
		Model:  state.ModelRef{Name: m.Name, Path: m.Path, ServedName: m.ServedName, Fingerprint: mr.Fingerprint, Files: mr.Files},
		Argv:   launch.Argv,
		Env:    launch.Env,
		GPUs:   slices.Clone(s.GPUs),
		Host:   s.Host,
		Port:   s.Port,
		Image:  e.Image,
		Gate: &GateSpec{HealthTimeout: s.Gate.HealthTimeout, SmokeToolcall: s.Gate.SmokeToolcall,
			Reasoning: s.SmokesReasoning(), Bench: s.Gate.Bench},
	}
	var err error
	if pl.in.Drivers == nil {
		err = errors.New("this plan was made without the driver set (a bug in roofline)")
	} else {
		d.Driver, err = pl.in.Drivers.Choose(s, e)
	}
	if err != nil {
		pl.diag(hcl.DiagError, ptr(s.DeclRange), "No driver runs this server", "Server %q: %v.", s.Name, err)
		return
	}
	if prev := pl.prior.Servers[s.Name]; prev != nil && prev.Model.Files == nil && prev.Model.Fingerprint != "" &&
		prev.Model.Fingerprint == mr.LegacyFingerprint && prev.Model.Path == m.Path {
		// Recorded by a roofline that fingerprinted modification times:
		// the folder is unchanged, so keep its fingerprint and restart
		// nothing; the next start records the manifest.
		d.Model.Fingerprint, d.Model.Files = prev.Model.Fingerprint, nil
	}
	if d.Gate.Bench != nil {
		// Source ranges are where a value was written, not what it is: a
		// comment or a reordered attribute must not change the gate hash.
		b := *d.Gate.Bench
		b.DeclRange, b.Ranges = hcl.Range{}, nil
		d.Gate.Bench = &b
	}
	prefix := len(engine.Command(e))
	d.Sources = flagSources(s, m, launch, prefix)
	d.CommandLen = prefix
	d.APIKey, d.APIKeyFile = s.APIKey, s.APIKeyFile
	// An api_key from a sensitive variable without a value (a review
	// plan: CI has no secret) is set, and the key itself is not needed.
	d.Keyed = s.APIKey != "" || s.APIKeyFile != "" || s.Unknown["api_key"]
	// An engine that takes its key only on its command line, where every
	// local user can read it, gets roofline's proxy to enforce the key.
	d.Proxy = s.Lifecycle.CreateBeforeDestroy || (d.Keyed && engine.LookupOrDefault(e.Kind).APIKeyEnv == "")
	if s.Proxy != nil && !d.Proxy {
		pl.diag(hcl.DiagError, ptr(s.Proxy.DeclRange), "Proxy block without a proxy",
			"Server %q has a proxy block, but no roofline proxy runs in front of it: the proxy fronts servers with lifecycle { create_before_destroy = true } (and SGLang servers with an API key). Set create_before_destroy, or remove the block.", s.Name)
	}
	if d.Proxy {
		if l := s.Proxy; l != nil {
			d.ProxyLimits = &state.ProxyLimits{MaxBody: l.MaxBody, MaxBuffered: l.MaxBuffered, MaxConnections: l.MaxConnections,
				HeaderTimeout: l.HeaderTimeout, BodyTimeout: l.BodyTimeout, IdleTimeout: l.IdleTimeout}
			if *d.ProxyLimits == (state.ProxyLimits{}) {
				d.ProxyLimits = nil
			}
		}
		d.BackendPorts = pl.in.Config.BackendPortRange()
		d.KeepPrevious = s.Lifecycle.KeepPrevious
		d.DrainTimeout = s.Lifecycle.DrainTimeout
		if d.DrainTimeout <= 0 {
			d.DrainTimeout = config.DefaultDrainTimeout
		}
	}
	d.EnvFrom = hostEnvFrom(s)
	markSensitive(d, s, pl.p.Secrets)
	if _, onArgv := state.SensitivePaths(d.Sensitive); len(onArgv) > 0 {
		pl.diag(hcl.DiagWarning, ptr(s.Range("extra_args")), "Sensitive value on the engine's command line",
			"Server %q passes a sensitive value as an argument. roofline masks it in plans, state and logs, but the engine's command line is readable by every user of the host (ps, /proc/PID/cmdline). Pass it through env, env_from_file or env_from_host if the engine reads it from there.", s.Name)
	}
	var unreadable map[string]error
	pl.host[s.Name], unreadable = planHostSecrets(s, pl.in.ReadHostFile, pl.in.Getenv, pl.p.Secrets)
	// Secrets enter the hash as a placeholder: see hashable.
	hashArgv, hashEnv := hashable(d)
	d.ConfigHash = hashOf(struct {
		Args   []string
		Env    map[string]string
		GPUs   []int
		Host   string
		Port   int
		Engine state.EngineRef
		Model  state.ModelRef
		Driver string
		Image  string
		Proxy  bool
	}{hashArgv[min(prefix, len(hashArgv)):], hashEnv, d.GPUs, d.Host, d.Port, d.Engine, modelIdentity(d.Model), d.Driver, d.Image, d.Proxy})
	if d.Keyed {
		// Keyed or not, and where the key comes from, need a restart; the
		// key itself stays out of the hash (an unsalted digest of it could
		// be guessed offline): a new key is found against the state's
		// salted hash of it (secretChanges). Unkeyed servers keep the hash
		// they had.
		d.ConfigHash = hashOf(struct{ Base, KeyFile string }{d.ConfigHash, d.APIKeyFile})
		if d.APIKeyFile != "" && pl.in.ReadHostFile != nil {
			if k, err := pl.in.ReadHostFile(d.APIKeyFile); err == nil {
				pl.host[s.Name][apiKeyPath] = strings.TrimSpace(k)
				pl.p.Secrets.Add(strings.TrimSpace(k))
			} else {
				unreadable[d.APIKeyFile] = err
			}
		}
	}
	if t := pl.triggerFiles(s); t != "" {
		// Only servers with trigger files hash them: the others' hashes
		// stay what they were.
		d.ConfigHash = hashOf([]string{d.ConfigHash, t})
	}
	pl.warnUnreadable(s, unreadable)
	d.GateHash = hashOf(d.Gate)
	pl.desired[s.Name] = d

	if (mr.Info != nil || mr.Spec != nil) && pl.in.Snapshot != nil {
		pl.fit(s, e, mr, d, er.Installed)
	}
}

// engineIdentity fingerprints the install, or is the identity pinned for
// an install whose executable changes with every build.
func engineIdentity(e *config.Engine, inst *engine.Installed) string {
	if e.PinnedIdentity != "" {
		return e.PinnedIdentity
	}
	return hashOf(inst.Identity)
}

// modelIdentity is what of a model reference the config hash covers: the
// manifest is summed up by the fingerprint.
func modelIdentity(m state.ModelRef) state.ModelRef {
	m.Files = nil
	return m
}

func hashOf(v any) string {
	b, _ := json.Marshal(v)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// diff compares desired servers with the state.
func (pl *planner) diff() {
	names := map[string]bool{}
	for n := range pl.desired {
		names[n] = true
	}
	for n := range pl.prior.Servers {
		if pl.targeted(n) {
			names[n] = true
		}
	}
	if pl.p.Mode != ModeDestroy {
		// Servers that failed to render still exist in the config: never plan
		// their deletion because of an unrelated error.
		for n := range pl.in.Config.Servers {
			if pl.desired[n] == nil {
				delete(names, n)
			}
		}
	}
	sorted := slices.Sorted(maps.Keys(names))
	for _, name := range sorted {
		before := pl.prior.Servers[name]
		after := pl.desired[name]
		if pl.p.Mode == ModeDestroy {
			after = nil
		}
		obs := pl.in.Observed[name]
		kept := before != nil && before.Deposed != nil && before.Deposed.Status == state.StatusKept
		if before != nil && before.Deposed != nil && !kept {
			proxyPort, alive := 0, obs == nil || obs.Alive
			if obs != nil {
				proxyPort = obs.ProxyPort
			}
			switch RecoveryOf(before, proxyPort, alive) {
			case RecoverBack:
				// The old instance still serves (or will, once the proxy is
				// pointed back at it); apply stops the new one and starts
				// over from the old.
				why := fmt.Sprintf("the new instance (pid %d) never passed its gates", before.PID)
				if !alive {
					why = fmt.Sprintf("the new instance (pid %d) is gone", before.PID)
				}
				pl.p.Drift = append(pl.p.Drift, &Drift{Addr: state.ServerAddr(name), Summary: "a rollout was interrupted",
					Detail: why + fmt.Sprintf("; apply points the proxy at the old one (pid %d), which keeps serving, and then stops the new one", before.Deposed.PID)})
				restored := before.Deposed.Clone()
				restored.Proxy = before.Proxy
				before = restored
				obs = nil
			case RecoverForward:
				if before.Status != state.StatusReady {
					pl.p.Drift = append(pl.p.Drift, &Drift{Addr: state.ServerAddr(name), Summary: "a rollout was interrupted after its gates",
						Detail: fmt.Sprintf("the new instance (pid %d) passed its gates; apply finishes the rollout: the proxy points at it, the old one (pid %d) drains and stops", before.PID, before.Deposed.PID)})
					promoted := before.Clone()
					promoted.Status = state.StatusReady
					before = promoted
				}
			}
		}
		c := &Change{Addr: state.ServerAddr(name), Name: name, PreviousName: pl.moved[name], Import: pl.imports[name], Before: before, After: after, Fit: pl.fits[name]}
		if before != nil {
			c.Measured = before.Footprint
			c.LastBench = pl.in.LastBench[name]
			c.Kept = pl.keptOf(name, before, after)
		}
		if before != nil && after != nil && pl.in.Config != nil {
			if s := pl.in.Config.Servers[name]; s != nil {
				c.Defaults = pl.defaultDrift(s, before, after, pl.fitIn[name], pl.fits[name])
			}
		}
		gone := before != nil && obs != nil && !obs.Alive
		var rotated []string
		if before != nil && after != nil {
			rotated = secretChanges(before, after, pl.host[name])
		}
		switch {
		case before == nil && after != nil:
			c.Action = Create
		case before != nil && after == nil:
			c.Action = Delete
			if gone {
				c.Reason = "the process is already gone; roofline forgets it"
			} else if pl.p.Mode == ModeDestroy {
				c.Reason = "destroy requested"
			} else {
				c.Reason = "no longer in the configuration"
			}
		case gone && before.Status == state.StatusFailed:
			c.Action = Create
			c.Reason = "the last start failed; roofline tries again"
		case gone:
			c.Action = Create
			c.Reason = "the process is gone (" + obs.Detail + "); roofline starts it again"
		case before.ConfigHash != after.ConfigHash || len(rotated) > 0 || slices.Contains(pl.in.Replace, name) || before.Status == state.StatusFailed || before.Status == state.StatusStarting:
			c.ReplacePaths = replacePaths(before, after)
			for _, r := range rotated {
				c.ReplacePaths = append(c.ReplacePaths, r+" (sensitive value)")
			}
			sort.Strings(c.ReplacePaths)
			c.ReplacePaths = slices.Compact(c.ReplacePaths)
			c.EnvChanges = maskEnvChanges(EnvDiff(before.Env, effectiveEnv(before, after)), after.Sensitive)
			if before.Model.Fingerprint != after.Model.Fingerprint && before.Model.Path == after.Model.Path {
				c.ModelFiles = ModelFileChanges(before.Model.Files, after.Model.Files)
			}
			switch {
			case slices.Contains(pl.in.Replace, name) && len(c.ReplacePaths) == 0:
				c.Reason = "replacement requested with -replace"
			case before.Status == state.StatusFailed && len(c.ReplacePaths) == 0:
				c.Reason = "the last start failed its gates"
			case before.Status == state.StatusStarting && len(c.ReplacePaths) == 0:
				c.Reason = "an interrupted apply never finished its gates"
			case len(c.ReplacePaths) == 0 && hasTriggerFiles(pl.in.Config.Servers[name]):
				c.ReplacePaths = []string{"replace_triggered_by"}
				c.Reason = "a file of replace_triggered_by changed (" + triggerFileNames(pl.in.Config.Servers[name]) + ")"
			case len(c.ReplacePaths) == 0:
				// The configuration hash differs in what the state does not
				// record by name (where the API key is read from).
				c.Reason = "the configuration changed (such as api_key_file)"
			default:
				c.Reason = strings.Join(c.ReplacePaths, ", ") + " changed"
				if len(c.ModelFiles) > 0 {
					c.Reason += "; model files: " + strings.Join(c.ModelFiles, ", ")
				}
			}
			c.Action = DeleteThenCreate
			if cs := pl.in.Config.Servers[name]; cs != nil && cs.Lifecycle.CreateBeforeDestroy {
				c.Action = CreateThenDelete
			}
		case obs != nil && obs.ProxyGone:
			c.Action, c.ProxyGone = Update, true
			c.Reason = fmt.Sprintf("the proxy on port %d is gone: apply starts a new one in front of the engine that runs (pid %d), which is not restarted", before.Port, before.PID)
		case kept && obs != nil && obs.Kept != nil && !obs.Kept.Alive:
			c.Action = Update
			c.Reason = fmt.Sprintf("the previous instance kept for rollback (pid %d) is gone; roofline forgets it", before.Deposed.PID)
		case kept && KeptExpired(before, after, pl.in.Now):
			c.Action = Update
			c.Reason = fmt.Sprintf("the rollback window ended: stop the previous instance (pid %d)", before.Deposed.PID)
		case before.Status == state.StatusStopping && obs != nil && obs.Alive && after != nil:
			// A destroy was interrupted after it recorded "stopping": the
			// process still runs, and refresh found it is still ours (same
			// pid, start time and boot id). Apply records it as running.
			c.Action = Update
			c.Reason = fmt.Sprintf("a stop was interrupted: pid %d still runs and is still the one roofline started; apply records it as ready again", before.PID)
			pl.p.Drift = append(pl.p.Drift, &Drift{Addr: "server." + name, Summary: "recorded as stopping, but still running",
				Detail: fmt.Sprintf("pid %d (same start time and boot id) survived an interrupted stop", before.PID)})
		case before.Deposed != nil && !kept:
			// The rollout switched over but was killed before it stopped
			// the old instance: apply stops it (nothing else changes).
			c.Action = Update
			c.Reason = fmt.Sprintf("finish an interrupted rollout: stop the old instance (pid %d)", before.Deposed.PID)
		case before.GateHash != after.GateHash || proxyLimitsChanged(before, after):
			c.Action = Update
			var what []string
			if before.GateHash != after.GateHash {
				what = append(what, "gate settings changed")
			}
			if proxyLimitsChanged(before, after) {
				what = append(what, "proxy limits changed ("+strings.Join(ProxyLimitsDiff(before.ProxyLimits, after.ProxyLimits), ", ")+"): the running proxy takes them")
			}
			c.Reason = strings.Join(what, "; ") + "; no restart"
		default:
			c.Action = NoOp
		}
		pl.p.Changes = append(pl.p.Changes, c)
	}
}

// replacePaths names what differs between the running server and the
// desired one, in the words of the configuration.
func replacePaths(before *state.Server, after *Desired) []string {
	var out []string
	if before.Engine.Version != after.Engine.Version || before.Engine.Name != after.Engine.Name {
		out = append(out, "engine")
	} else if before.Engine.Identity != after.Engine.Identity {
		out = append(out, "engine install")
	}
	if before.Model.Path != after.Model.Path || before.Model.Name != after.Model.Name {
		out = append(out, "model")
	} else if before.Model.Fingerprint != after.Model.Fingerprint {
		out = append(out, "model files")
	}
	if !slices.Equal(before.GPUs, after.GPUs) {
		out = append(out, "gpus")
	}
	if before.Port != after.Port {
		out = append(out, "port")
	}
	if before.Host != after.Host {
		out = append(out, "host")
	}
	// apply records the hash of the key of every keyed server.
	if (before.APIKeyHash != "") != after.Keyed {
		out = append(out, "api_key")
	}
	if env := effectiveEnv(before, after); !state.EnvEqual(before.Env, env) {
		for _, k := range envDiffKeys(before.Env, env) {
			if !slices.Contains(after.Sensitive, "env."+k) {
				out = append(out, "env") // the keys are in EnvChanges
				break
			}
		}
	}
	_, sensArgv := state.SensitivePaths(after.Sensitive)
	for _, f := range engine.ArgvDiffAttrs(unmaskEqual(publicArgv(before), after.Argv), after.Argv) {
		if sensitiveFlag(after.Argv, sensArgv, f) {
			continue // named by secretChanges, without its value
		}
		out = append(out, f)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// sortDiags orders diagnostics by file and position.
func sortDiags(diags hcl.Diagnostics) {
	sort.SliceStable(diags, func(i, j int) bool {
		a, b := diags[i].Subject, diags[j].Subject
		switch {
		case a == nil || b == nil:
			return a != nil && b == nil
		case a.Filename != b.Filename:
			return a.Filename < b.Filename
		default:
			return a.Start.Byte < b.Start.Byte
		}
	})
}

// EnvDiff compares a recorded env (secrets redacted) with the desired one,
// key by key, in key order.
func EnvDiff(before, after map[string]string) []EnvChange {
	var out []EnvChange
	keys := map[string]bool{}
	for k := range before {
		keys[k] = true
	}
	for k := range after {
		keys[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		b, inB := before[k]
		a, inA := after[k]
		c := EnvChange{Key: k, Sensitive: state.IsSecretName(k) || state.IsRedacted(b)}
		switch {
		case inB && inA && state.Matches(b, a):
			continue
		case !inB:
			c.Action = "create"
		case !inA:
			c.Action = "delete"
		default:
			c.Action = "update"
		}
		if !c.Sensitive {
			c.Before, c.After = b, a
		}
		out = append(out, c)
	}
	return out
}

// InstallIDs identifies each probed engine install: its lock identity and
// the hash of its flag list.
func InstallIDs(cfg *config.Config, engines map[string]EngineResult) map[string]string {
	out := map[string]string{}
	if cfg == nil {
		return out
	}
	for name, r := range engines {
		if e := cfg.Engines[name]; e != nil && r.Installed != nil && r.Installed.Flags != nil {
			out[name] = engine.LockIdentity(e, r.Installed) + " " + r.Installed.Flags.Hash()
		}
	}
	return out
}

// flagSources maps each flag of the launch to the attribute that produced
// it (as the renderer recorded it) and where that attribute is written.
func flagSources(s *config.Server, m *config.Model, launch *engine.Launch, prefix int) map[string]string {
	out := map[string]string{}
	_, flags := engine.ParseArgv(launch.Argv[min(prefix, len(launch.Argv)):])
	for _, f := range flags {
		attr, rendered := launch.Attrs[f.Name]
		if !rendered {
			attr = "extra_args " + f.Name
		}
		var rng hcl.Range
		switch {
		case strings.HasPrefix(attr, "extra_args"):
			if !s.Ranges.Has("extra_args") {
				continue
			}
			attr, rng = "extra_args", s.Range("extra_args")
		case attr == "served_name" && m != nil && m.Ranges.Has("served_name"):
			rng = m.Range("served_name")
		case s.Ranges.Has(attr):
			rng = s.Range(attr)
		default:
			continue
		}
		out[f.Name] = fmt.Sprintf("%s:%d %s", filepath.Base(rng.Filename), rng.Start.Line, attr)
	}
	return out
}
