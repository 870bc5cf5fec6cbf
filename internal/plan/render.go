package plan

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/roofline/roofline/internal/diagfmt"
	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/journal"
	"github.com/roofline/roofline/internal/secret"
	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/textdiff"
	"github.com/roofline/roofline/internal/vram"
)

// JSONPlan is the plan file's form (planfile.go) and what every rendering
// starts from, with its sensitive values masked: the human plan, the
// markdown review, the stream and, through Document, the plan document of
// plan -json and show -json (internal/jsonplan). It is roofline's internal
// record, made of other packages' structs; only the plan file stores it.
type JSONPlan struct {
	FormatVersion        string            `json:"format_version"`
	RooflineVersion      string            `json:"roofline_version"`
	CreatedAt            string            `json:"created_at"`
	Mode                 Mode              `json:"mode"`
	Review               bool              `json:"review,omitempty"`
	ConfigDir            string            `json:"config_dir"`
	Lineage              string            `json:"lineage"`
	PriorSerial          uint64            `json:"prior_serial"`
	InventoryFingerprint string            `json:"inventory_fingerprint"`
	InventorySource      string            `json:"inventory_source,omitempty"`
	SnapshotHost         string            `json:"snapshot_host,omitempty"`
	SnapshotCreatedAt    string            `json:"snapshot_created_at,omitempty"`
	Installs             map[string]string `json:"installs,omitempty"`
	Models               map[string]string `json:"models,omitempty"`
	Targets              []string          `json:"targets,omitempty"`
	ResourceChanges      []JSONChange      `json:"resource_changes"`
	ResourceDrift        []*Drift          `json:"resource_drift"`
	Diagnostics          []diagfmt.Diag    `json:"diagnostics"`
	Applyable            bool              `json:"applyable"`
	Errored              bool              `json:"errored"`
	Summary              map[string]int    `json:"summary"`
	// SealedSecrets and MAC are set in plan files only (seal.go).
	SealedSecrets string `json:"sealed_secrets,omitempty"`
	MAC           string `json:"mac,omitempty"`
}

// JSONChange is one server's change.
type JSONChange struct {
	Address string `json:"address"`
	// PreviousAddress is Terraform's field for a moved object.
	PreviousAddress string `json:"previous_address,omitempty"`
	// Importing is set for a server taken over from a running process.
	Importing    *ImportInfo   `json:"importing,omitempty"`
	Type         string        `json:"type"`
	Name         string        `json:"name"`
	Actions      []string      `json:"actions"`
	Reason       string        `json:"reason,omitempty"`
	ReplacePaths []string      `json:"replace_paths,omitempty"`
	Downtime     string        `json:"downtime,omitempty"`
	Before       *state.Server `json:"before"`
	After        *Desired      `json:"after"`
	// BeforeSensitive and AfterSensitive mirror argv and env with true
	// where the value is sensitive (Terraform's before_sensitive and
	// after_sensitive); those values are salted hashes.
	BeforeSensitive map[string]any   `json:"before_sensitive,omitempty"`
	AfterSensitive  map[string]any   `json:"after_sensitive,omitempty"`
	VRAM            *vram.Result     `json:"vram,omitempty"`
	Measured        *state.Footprint `json:"measured,omitempty"`
	LastBench       *journal.Entry   `json:"last_bench,omitempty"`
	EnvChanges      []EnvChange      `json:"env_changes,omitempty"`
	ModelFiles      []string         `json:"model_files,omitempty"`
	DefaultChanges  []DefaultChange  `json:"default_changes,omitempty"`
	// KeptInstance is the previous instance kept for rollback
	// (keep_previous): its window, the memory it holds, and whether apply
	// stops it.
	KeptInstance *KeptInstance `json:"kept_instance,omitempty"`
}

// ToJSON converts the plan.
func (p *Plan) ToJSON() *JSONPlan {
	add, change, destroy := p.Counts()
	j := &JSONPlan{
		FormatVersion:        p.FormatVersion,
		RooflineVersion:      p.RooflineVersion,
		CreatedAt:            p.CreatedAt.UTC().Format("2006-01-02T15:04:05Z"),
		Mode:                 p.Mode,
		Review:               p.Review,
		ConfigDir:            p.ConfigDir,
		Lineage:              p.Lineage,
		PriorSerial:          p.PriorSerial,
		InventoryFingerprint: p.InventoryFingerprint,
		InventorySource:      p.InventorySource,
		SnapshotHost:         p.SnapshotHost,
		Installs:             p.Installs,
		Models:               p.Models,
		Targets:              p.Targets,
		ResourceChanges:      []JSONChange{},
		ResourceDrift:        p.Drift,
		Diagnostics:          diagfmt.JSON(p.Files, p.Diagnostics),
		Applyable:            !p.HasErrors() && (p.HasChanges() || p.Mode == ModeRefreshOnly && len(p.Drift) > 0),
		Errored:              p.HasErrors(),
		Summary:              map[string]int{"add": add, "change": change, "destroy": destroy},
	}
	if j.ResourceDrift == nil {
		j.ResourceDrift = []*Drift{}
	}
	if !p.SnapshotCreatedAt.IsZero() {
		j.SnapshotCreatedAt = p.SnapshotCreatedAt.UTC().Format(time.RFC3339)
	}
	for _, c := range p.Changes {
		jc := JSONChange{
			Address: c.Addr, PreviousAddress: prevAddr(c.PreviousName), Importing: c.Import, Type: "server", Name: c.Name, Actions: c.Action.JSON(), Reason: p.Secrets.Mask(c.Reason),
			ReplacePaths: c.ReplacePaths, Downtime: c.Downtime, Before: c.Before, After: c.MaskedAfter(), VRAM: c.Fit, Measured: c.Measured,
			LastBench: c.LastBench, EnvChanges: c.EnvChanges, ModelFiles: c.ModelFiles, DefaultChanges: c.Defaults, KeptInstance: c.Kept,
		}
		if c.Before != nil {
			jc.BeforeSensitive = sensitiveMarks(beforePaths(c.Before), len(c.Before.Argv))
		}
		if c.After != nil {
			jc.AfterSensitive = sensitiveMarks(c.After.Sensitive, len(c.After.Argv))
		}
		j.ResourceChanges = append(j.ResourceChanges, jc)
	}
	for i, d := range j.Diagnostics {
		j.Diagnostics[i] = maskDiag(d, p.Secrets)
	}
	return j
}

// FromJSON rebuilds a plan from its JSON form (a saved plan file). The
// diagnostics are not restored: a plan with errors is never saved.
func FromJSON(j *JSONPlan) *Plan {
	p := &Plan{
		FormatVersion:        j.FormatVersion,
		RooflineVersion:      j.RooflineVersion,
		Mode:                 j.Mode,
		Review:               j.Review,
		ConfigDir:            j.ConfigDir,
		Lineage:              j.Lineage,
		PriorSerial:          j.PriorSerial,
		InventoryFingerprint: j.InventoryFingerprint,
		InventorySource:      j.InventorySource,
		SnapshotHost:         j.SnapshotHost,
		Installs:             j.Installs,
		Models:               j.Models,
		Targets:              j.Targets,
		Drift:                j.ResourceDrift,
	}
	p.CreatedAt, _ = time.Parse("2006-01-02T15:04:05Z", j.CreatedAt)
	p.SnapshotCreatedAt, _ = time.Parse(time.RFC3339, j.SnapshotCreatedAt)
	for _, c := range j.ResourceChanges {
		p.Changes = append(p.Changes, &Change{Addr: c.Address, Name: c.Name, PreviousName: state.ServerName(c.PreviousAddress), Import: c.Importing, Action: ActionFromJSON(c.Actions), Reason: c.Reason,
			ReplacePaths: c.ReplacePaths, Downtime: c.Downtime, Before: c.Before, After: c.After, Fit: c.VRAM, Measured: c.Measured,
			LastBench: c.LastBench, EnvChanges: c.EnvChanges, ModelFiles: c.ModelFiles, Defaults: c.DefaultChanges, Kept: c.KeptInstance})
	}
	return p
}

// Colorizer turns [green]-style markup into terminal codes, or strips it.
type Colorizer func(string) string

// RenderHuman writes the plan as Terraform does: drift first, then each
// change with its reason and a flag-by-flag argv diff, then the summary.
func RenderHuman(w io.Writer, j *JSONPlan, color Colorizer) {
	c := color
	if line := SnapshotLine(j); line != "" {
		fmt.Fprint(w, c("[bold]Host snapshot:[reset] "+line+"\n"))
	}
	if len(j.ResourceDrift) > 0 {
		fmt.Fprint(w, c("\n[bold][cyan]Note:[reset][bold] Objects have changed outside of roofline[reset]\n\n"))
		fmt.Fprintln(w, "roofline detected the following changes made outside of roofline since the last \"roofline apply\":")
		for _, d := range j.ResourceDrift {
			fmt.Fprintf(w, "\n  # %s: %s\n", d.Addr, d.Summary)
			if d.Detail != "" {
				fmt.Fprintf(w, "    %s\n", d.Detail)
			}
		}
		fmt.Fprintln(w)
	}
	if j.Mode == ModeRefreshOnly {
		if len(j.ResourceDrift) == 0 {
			fmt.Fprint(w, c("\n[green][bold]No changes.[reset][bold] Your servers still match the state.[reset]\n"))
			if tail := warningTail(j); tail != "" {
				fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(tail))
			}
		} else {
			fmt.Fprintln(w, "This is a refresh-only plan: applying it records these changes in the state; it starts and stops nothing.")
		}
		return
	}
	changed, moved, imported := 0, 0, 0
	for _, ch := range j.ResourceChanges {
		if ch.Importing != nil {
			imported++
		}
		if ActionFromJSON(ch.Actions) != NoOp {
			changed++
		} else if ch.PreviousAddress != "" {
			moved++
		}
	}
	if changed == 0 && moved == 0 && imported == 0 && len(j.ResourceDrift) > 0 {
		// A server that runs but is not healthy is not "no changes": apply
		// would leave it as it is, and someone must look at it.
		fmt.Fprint(w, c("\n[yellow][bold]No changes to apply, but the servers drifted.[reset]\n\n"))
		fmt.Fprintln(w, "apply does not restart a server that runs but fails its health check: read its log (roofline logs NAME, roofline diagnose NAME), or replace it with roofline apply -replace=server.NAME.")
		renderKept(w, j, c)
		renderVRAM(w, j, c)
		fmt.Fprintf(w, "\n%s 0 to add, 0 to change, 0 to destroy; %d drifted.%s\n", c("[bold]Plan:[reset]"), len(j.ResourceDrift), warningTail(j))
		return
	}
	if changed == 0 && moved == 0 && imported == 0 {
		fmt.Fprint(w, c("\n[green][bold]No changes.[reset][bold] Your servers match the configuration.[reset]\n\n"))
		fmt.Fprintln(w, "roofline found no differences, so no changes are needed.")
		renderKept(w, j, c)
		renderVRAM(w, j, c)
		if tail := warningTail(j); tail != "" {
			fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(tail))
		}
		return
	}
	fmt.Fprintln(w, "\nroofline used the selected engines and GPUs to generate the following execution plan.")
	fmt.Fprintln(w, "Actions are indicated with the following symbols:")
	seen := map[Action]bool{}
	for _, ch := range j.ResourceChanges {
		seen[ActionFromJSON(ch.Actions)] = true
	}
	for _, a := range []struct {
		act  Action
		text string
	}{{Create, "[green]+[reset] create"}, {Update, "[yellow]~[reset] update in-place"}, {Delete, "[red]-[reset] destroy"},
		{DeleteThenCreate, "[red]-[reset]/[green]+[reset] destroy and then create replacement (downtime)"},
		{CreateThenDelete, "[green]+[reset]/[red]-[reset] create replacement and then destroy (no downtime)"}} {
		if seen[a.act] {
			fmt.Fprintf(w, "  %s\n", c(a.text))
		}
	}
	fmt.Fprintln(w, "\nroofline will perform the following actions:")
	for _, ch := range j.ResourceChanges {
		act := ActionFromJSON(ch.Actions)
		if im := ch.Importing; im != nil {
			up := ""
			if im.Uptime != "" {
				up = ", up " + im.Uptime
			}
			fmt.Fprintf(w, "\n  # %s will be imported (pid %d%s)\n", ch.Address, im.PID, up)
			if len(im.Differences) == 0 {
				fmt.Fprintf(w, "    %s\n", c("[dim](it runs as the configuration says: roofline records it and leaves it running)[reset]"))
			} else {
				fmt.Fprintf(w, "    differences from the configuration, each forcing a restart:\n")
				for _, d := range im.Differences {
					fmt.Fprintf(w, "      ~ %s\n", d)
				}
			}
			if !im.OwnGroup {
				fmt.Fprintf(w, "    %s\n", c("[yellow]it shares its shell's process group: roofline refuses to stop it (stop it by hand, or start it with setsid)[reset]"))
			}
		}
		if act == NoOp {
			if ch.PreviousAddress != "" {
				// As Terraform: a move alone changes nothing that runs.
				fmt.Fprintf(w, "\n  # %s has moved to %s\n", ch.PreviousAddress, ch.Address)
				fmt.Fprintf(w, "    %s\n", c("[dim](the process, its port and its log stay; the state, log file and proxy take the new name)[reset]"))
			}
			continue
		}
		if ch.PreviousAddress != "" {
			fmt.Fprintf(w, "\n  # %s has moved to %s", ch.PreviousAddress, ch.Address)
		}
		renderChange(w, ch, act, c, j.CreatedAt)
	}
	renderKept(w, j, c)
	renderVRAM(w, j, c)
	moves, imports := "", ""
	if moved > 0 {
		moves = fmt.Sprintf(", %d to move", moved)
	}
	if imported > 0 {
		imports = fmt.Sprintf("%d to import, ", imported) // Terraform's order
	}
	fmt.Fprintf(w, "\n%s %s%d to add, %d to change, %d to destroy%s.%s\n", c("[bold]Plan:[reset]"), imports, j.Summary["add"], j.Summary["change"], j.Summary["destroy"], moves, warningTail(j))
}

func prevAddr(name string) string {
	if name == "" {
		return ""
	}
	return state.ServerAddr(name)
}

// warningTail counts the plan's warnings for the summary line; they are
// printed after the plan.
func warningTail(j *JSONPlan) string {
	n := 0
	for _, d := range j.Diagnostics {
		if d.Severity == "warning" {
			n++
		}
	}
	switch n {
	case 0:
		return ""
	case 1:
		return " 1 warning, shown below."
	}
	return fmt.Sprintf(" %d warnings, shown below.", n)
}

func actionColor(a Action) string {
	switch a {
	case Create:
		return "[green]"
	case Update:
		return "[yellow]"
	case Delete:
		return "[red]"
	}
	return "[magenta]"
}

func renderChange(w io.Writer, ch JSONChange, act Action, c Colorizer, createdAt string) {
	var what string
	switch act {
	case Create:
		what = "will be created"
	case Update:
		what = "will be updated in-place"
	case Delete:
		what = "will be destroyed"
	case DeleteThenCreate:
		what = "must be replaced (destroy, then create)"
	case CreateThenDelete:
		what = "must be replaced (create the new one beside the old, then destroy the old)"
	}
	fmt.Fprintf(w, "\n  %s\n", c(fmt.Sprintf("[bold]# %s[reset] %s", ch.Address, what)))
	if ch.Reason != "" {
		fmt.Fprintf(w, "  # (%s)\n", ch.Reason)
	}
	sym := act.Symbol()
	fmt.Fprintf(w, "%s server %q {\n", c(fmt.Sprintf("%s%*s[reset]", actionColor(act), 3, sym)), ch.Name)
	attr := func(mark, name, val string) {
		color := ""
		switch mark {
		case "+":
			color = "[green]"
		case "-":
			color = "[red]"
		case "~":
			color = "[yellow]"
		}
		if mark == "" {
			mark = " "
		}
		fmt.Fprintf(w, "      %s %-8s = %s\n", c(color+mark+"[reset]"), name, val)
	}
	b, a := ch.Before, ch.After
	switch {
	case a != nil && b == nil:
		attr("+", "engine", fmt.Sprintf("%q (%s %s)", a.Engine.Name, a.Engine.Kind, a.Engine.Version))
		if a.Image != "" {
			attr("+", "image", fmt.Sprintf("%q", a.Image))
		}
		attr("+", "model", fmt.Sprintf("%q (served as %q)", a.Model.Path, a.Model.ServedName))
		attr("+", "gpus", intList(a.GPUs))
		attr("+", "port", portText(a))
		attr("+", "listen", ListenText(a))
		if a.ProxyLimits != nil {
			attr("+", "proxy", ProxyLimitsText(a.ProxyLimits))
		}
		if a.Keyed {
			attr("+", "api_key", apiKeyText(a))
		}
		fmt.Fprintf(w, "      %s argv     = [\n", c("[green]+[reset]"))
		for _, l := range engine.ArgvLines(argsOnly(a.Argv, a)) {
			fmt.Fprintf(w, "          %s %q,\n", c("[green]+[reset]"), showLine(l))
		}
		fmt.Fprintln(w, "        ]")
		renderEnvFrom(w, a, c)
	case a == nil && b != nil:
		attr("-", "engine", fmt.Sprintf("%q (%s %s)", b.Engine.Name, b.Engine.Kind, b.Engine.Version))
		attr("-", "model", fmt.Sprintf("%q", b.Model.Path))
		attr("-", "gpus", intList(b.GPUs))
		attr("-", "port", fmt.Sprint(b.Port))
		if b.PID != 0 {
			attr("-", "pid", fmt.Sprint(b.PID))
		}
		if k := ch.KeptInstance; k != nil {
			made, _ := time.Parse("2006-01-02T15:04:05Z", createdAt)
			attr("-", "kept instance", keptText(k, made))
		}
	default:
		diffAttr := func(name, before, after string) {
			if before == after {
				attr("", name, after)
			} else {
				attr("~", name, before+" -> "+after)
			}
		}
		diffAttr("engine", fmt.Sprintf("%q (%s %s)", b.Engine.Name, b.Engine.Kind, b.Engine.Version), fmt.Sprintf("%q (%s %s)", a.Engine.Name, a.Engine.Kind, a.Engine.Version))
		if a.Image != "" || b.Image != "" {
			diffAttr("image", fmt.Sprintf("%q", imageOf(b)), fmt.Sprintf("%q", a.Image))
		}
		diffAttr("model", fmt.Sprintf("%q", b.Model.Path), fmt.Sprintf("%q", a.Model.Path))
		diffAttr("gpus", intList(b.GPUs), intList(a.GPUs))
		if b.Port == a.Port {
			attr("", "port", portText(a))
		} else {
			text := fmt.Sprint(b.Port) + " -> " + portText(a)
			if a.Proxy && b.Proxy != nil {
				text = fmt.Sprintf("%d -> %d (a new endpoint: a new proxy listens on %d; the one on %d stops after the old instance drained)", b.Port, a.Port, a.Port, b.Port)
			}
			attr("~", "port", text)
		}
		attr("", "listen", ListenText(a))
		if a.Proxy && b.Proxy != nil && !b.ProxyLimits.Equal(a.ProxyLimits) {
			attr("~", "proxy", strings.Join(ProxyLimitsDiff(b.ProxyLimits, a.ProxyLimits), ", ")+" (the running proxy takes them: no restart, no connection cut)")
		} else if a.ProxyLimits != nil {
			attr("", "proxy", ProxyLimitsText(a.ProxyLimits))
		}
		if a.Keyed {
			attr("", "api_key", apiKeyText(a))
		}
		ops := foldRotations(textdiff.Lines(engine.ArgvLines(argsOnlyState(b)), engine.ArgvLines(argsOnly(a.Argv, a))))
		changedArgv := false
		for _, op := range ops {
			if op.Kind != ' ' {
				changedArgv = true
			}
		}
		if changedArgv {
			fmt.Fprintf(w, "      %s argv     = [\n", c("[yellow]~[reset]"))
			for _, op := range ops {
				switch op.Kind {
				case '-':
					fmt.Fprintf(w, "          %s %q,\n", c("[red]-[reset]"), op.Text)
				case '+':
					fmt.Fprintf(w, "          %s %q,\n", c("[green]+[reset]"), op.Text)
				case '~':
					fmt.Fprintf(w, "          %s %q,\n", c("[yellow]~[reset]"), op.Text)
				default:
					fmt.Fprintf(w, "            %q,\n", op.Text)
				}
			}
			fmt.Fprintln(w, "        ]")
		}
		if envChanged(b, a) {
			changes := ch.EnvChanges
			if changes == nil {
				changes = maskEnvChanges(EnvDiff(b.Env, effectiveEnv(b, a)), a.Sensitive)
			}
			fmt.Fprintf(w, "      %s env      = {\n", c("[yellow]~[reset]"))
			for _, e := range changes {
				val := func(v string) string {
					if e.Sensitive {
						return "(sensitive value)"
					}
					return fmt.Sprintf("%q", v)
				}
				switch e.Action {
				case "create":
					fmt.Fprintf(w, "          %s %s = %s\n", c("[green]+[reset]"), e.Key, val(e.After))
				case "delete":
					fmt.Fprintf(w, "          %s %s = %s\n", c("[red]-[reset]"), e.Key, val(e.Before))
				default:
					if e.Sensitive {
						fmt.Fprintf(w, "          %s %s = %s\n", c("[yellow]~[reset]"), e.Key, secret.ShownChanged)
						continue
					}
					fmt.Fprintf(w, "          %s %s = %s -> %s\n", c("[yellow]~[reset]"), e.Key, val(e.Before), val(e.After))
				}
			}
			fmt.Fprintln(w, "        }")
		}
		if len(ch.ModelFiles) > 0 {
			fmt.Fprintf(w, "      %s model files = [\n", c("[yellow]~[reset]"))
			for _, f := range ch.ModelFiles {
				sign, name, _ := strings.Cut(f, " ")
				col := map[string]string{"+": "[green]", "-": "[red]"}[sign]
				if col == "" {
					col = "[yellow]"
				}
				fmt.Fprintf(w, "          %s %q,\n", c(col+sign+"[reset]"), name)
			}
			fmt.Fprintln(w, "        ]")
		}
		if len(ch.DefaultChanges) > 0 {
			renderDefaults(w, ch.DefaultChanges, c)
		}
		if k := ch.KeptInstance; k != nil && (k.Stop != "" || k.Gone) {
			made, _ := time.Parse("2006-01-02T15:04:05Z", createdAt)
			attr("-", "kept instance", keptText(k, made))
		}
		switch {
		case act == Update && b.Deposed != nil && b.Deposed.Status == state.StatusKept:
			if b.GateHash != a.GateHash {
				attr("~", "gate", "(settings changed; applied without a restart)")
			}
		case act == Update && b.Deposed != nil:
			attr("-", "old pid", fmt.Sprint(b.Deposed.PID))
		case act == Update && b.GateHash == a.GateHash:
		case act == Update:
			attr("~", "gate", "(settings changed; applied without a restart)")
		}
	}
	fmt.Fprintln(w, "    }")
	if act.IsReplace() {
		renderBenchBeside(w, ch, c)
	}
	if ch.Downtime != "" && act == DeleteThenCreate {
		fmt.Fprintf(w, "    %s %s\n", c("[yellow][bold]Downtime:[reset]"), ch.Downtime)
	}
	if KeepsPrevious(act, ch.Before, ch.After) {
		fmt.Fprintf(w, "    Rollback: the old instance (pid %d) is kept, drained, for %s after the switch (keep_previous); roofline rollback %s switches back to it\n", ch.Before.PID, ch.After.KeepPrevious, ch.Address)
	}
}

// renderBenchBeside shows the running server's last bench next to the
// thresholds its replacement must meet.
func renderBenchBeside(w io.Writer, ch JSONChange, c Colorizer) {
	if lb := ch.LastBench; lb != nil && lb.Bench != nil {
		b := lb.Bench
		fmt.Fprintf(w, "    last bench of the running server (%s, %s %s): %.0f output tok/s, %.2f req/s, TTFT p99 %.0f ms, TPOT p99 %.1f ms, ITL p99 %.1f ms\n",
			lb.Time.UTC().Format("2006-01-02 15:04"), lb.Engine.Kind, lb.Engine.Version, b.OutputThroughput, b.RequestThroughput, b.P99TTFTMs, b.P99TPOTMs, b.P99ITLMs)
	}
	if ch.After == nil || ch.After.Gate == nil || ch.After.Gate.Bench == nil {
		return
	}
	g := ch.After.Gate.Bench
	var parts []string
	if g.MinOutputTokensPerSecond > 0 {
		parts = append(parts, fmt.Sprintf("≥ %.0f output tok/s", g.MinOutputTokensPerSecond))
	}
	if g.MinRequestsPerSecond > 0 {
		parts = append(parts, fmt.Sprintf("≥ %.2f req/s", g.MinRequestsPerSecond))
	}
	if g.MaxTTFTP99 > 0 {
		parts = append(parts, fmt.Sprintf("TTFT p99 ≤ %s", g.MaxTTFTP99))
	}
	if g.MaxTPOTP99 > 0 {
		parts = append(parts, fmt.Sprintf("TPOT p99 ≤ %s", g.MaxTPOTP99))
	}
	if g.MaxITLP99 > 0 {
		parts = append(parts, fmt.Sprintf("ITL p99 ≤ %s", g.MaxITLP99))
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "    the replacement must pass its bench gate (%d requests at concurrency %d): %s\n", g.Requests, g.Concurrency, strings.Join(parts, ", "))
	}
}

func envChanged(b *state.Server, a *Desired) bool { return !state.EnvEqual(b.Env, effectiveEnv(b, a)) }

// ListenText names every socket a server listens on, with its bind
// address: the proxy's on the server's host, and the engine's behind it on
// loopback; or the engine's own. An empty host is the engine's default
// (vLLM: all interfaces; SGLang: 127.0.0.1).
func ListenText(a *Desired) string {
	host := ListenHost(a)
	if a.Proxy {
		r := a.BackendPorts
		if r[0] == 0 {
			r = DefaultBackendPorts
		}
		return fmt.Sprintf("%s (roofline's proxy), engine on 127.0.0.1:%d-%d", net.JoinHostPort(host, fmt.Sprint(a.Port)), r[0], r[1])
	}
	return net.JoinHostPort(host, fmt.Sprint(a.Port)) + " (the engine)"
}

// ListenHost is the address the server's public socket binds: its host, or
// the engine's default (vLLM: all interfaces; SGLang: 127.0.0.1).
func ListenHost(a *Desired) string {
	if a.Host != "" {
		return a.Host
	}
	return engine.LookupOrDefault(a.Engine.Kind).DefaultHost
}

// loopbackOnly reports whether host is a loopback address.
func loopbackOnly(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

func apiKeyText(a *Desired) string {
	via := engine.LookupOrDefault(a.Engine.Kind).APIKeyVia
	if a.APIKeyFile != "" {
		return fmt.Sprintf("(from %s, read at apply; %s)", a.APIKeyFile, via)
	}
	return fmt.Sprintf("(sensitive value; %s)", via)
}

func portText(a *Desired) string {
	if a.Proxy {
		return fmt.Sprintf("%d (through roofline's proxy; the engine's own port is known after apply)", a.Port)
	}
	return fmt.Sprint(a.Port)
}

// argsOnly strips the engine's command prefix (which holds install paths that
// say nothing about the server) from an argv.
func argsOnly(argv []string, a *Desired) []string {
	return argv[min(a.CommandLen, len(argv)):]
}

func argsOnlyState(b *state.Server) []string {
	argv := publicArgv(b)
	return argv[min(b.CommandLen, len(argv)):]
}

// publicArgv is the argv a server was started with, with the proxy's
// backend port put back to the public one the configuration names.
func publicArgv(b *state.Server) []string {
	argv := b.Argv
	if b.BackendPort != 0 {
		// The engine listens on its backend port behind the proxy; compare
		// with the public port the configuration names.
		out := make([]string, len(argv))
		copy(out, argv)
		for i := 0; i+1 < len(out); i++ {
			if out[i] == "--port" && out[i+1] == fmt.Sprint(b.BackendPort) {
				out[i+1] = fmt.Sprint(b.Port)
			}
		}
		// It binds 127.0.0.1 there; the configuration's host is the
		// proxy's.
		for i := 0; i+1 < len(out); i++ {
			if out[i] == "--host" && out[i+1] == "127.0.0.1" && b.Host != "127.0.0.1" {
				if b.Host == "" {
					out = append(out[:i], out[i+2:]...)
				} else {
					out[i+1] = b.Host
				}
				break
			}
		}
		return out
	}
	return argv
}

func renderVRAM(w io.Writer, j *JSONPlan, c Colorizer) {
	var rows []JSONChange
	for _, ch := range j.ResourceChanges {
		if ch.VRAM != nil {
			rows = append(rows, ch)
		}
	}
	if len(rows) == 0 {
		return
	}
	sort.Slice(rows, func(a, b int) bool { return rows[a].Name < rows[b].Name })
	fmt.Fprint(w, c("\n[bold]VRAM[reset] (the engine's own rules, per GPU rank):\n"))
	for _, ch := range rows {
		v := ch.VRAM
		verdict := c("[green]fits[reset]")
		if !v.Fits {
			verdict = c("[red]does not fit[reset]")
		}
		fmt.Fprintf(w, "\n  server.%s: %s; KV cache %d tokens (%s per token), %.2f× max_model_len\n", ch.Name, verdict, v.KVTokens, byteText(v.KVBytesPerToken), v.MaxConcurrency)
		fmt.Fprint(w, FitTable(v))
		if ch.After != nil && ch.After.Calibration != nil {
			fmt.Fprintf(w, "      prediction: %s\n", ch.After.Calibration.Label())
		}
		if ch.After != nil && ch.After.AutoMaxModelLen > 0 {
			fmt.Fprintf(w, "      max_model_len = \"auto\": the engine picks %d tokens (the longest context one request fits in)\n", ch.After.AutoMaxModelLen)
		}
		if m := ch.Measured; m != nil && m.KVTokens > 0 {
			fmt.Fprintf(w, "      measured at the last start: weights %.2f GiB, KV %.2f GiB, %d tokens\n", m.WeightsGiB, m.KVCacheGiB, m.KVTokens)
		}
	}
}

func byteText(b uint64) string {
	switch {
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}

// WriteJSON writes the plan document (Document) as indented JSON.
func WriteJSON(w io.Writer, j *JSONPlan) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(Document(j))
}

// ReasonLine is a one-line summary of a change for apply's progress output.
func ReasonLine(c *Change) string {
	s := strings.TrimSpace(c.Action.Symbol()) + " " + c.Addr
	if c.Reason != "" {
		s += " (" + c.Reason + ")"
	}
	return s
}

// intList renders [0, 1] as HCL writes it.
func intList(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// imageOf is the image a running server was started from.
func imageOf(b *state.Server) string { return b.Image }

// SnapshotLine names the host snapshot a review plan was made from and its
// age when the plan was made: "gpu-01, taken 2026-12-01T10:00:00Z (14m
// before this plan)".
func SnapshotLine(j *JSONPlan) string {
	if j.SnapshotHost == "" {
		return ""
	}
	line := j.SnapshotHost
	taken, err := time.Parse(time.RFC3339, j.SnapshotCreatedAt)
	if err != nil {
		return line
	}
	line += ", taken " + j.SnapshotCreatedAt
	if made, err := time.Parse("2006-01-02T15:04:05Z", j.CreatedAt); err == nil && !made.Before(taken) {
		line += fmt.Sprintf(" (%s before this plan)", made.Sub(taken).Round(time.Second))
	}
	return line
}

// renderDefaults lists the settings the new engine version changes although
// the configuration does not set them: the engine rules and the memory- or
// batching-related flag defaults; the other flag defaults are counted
// (plan -json lists them).
func renderDefaults(w io.Writer, ds []DefaultChange, c Colorizer) {
	fmt.Fprintf(w, "      %s defaults = { # not set in the configuration; the engine version changes them\n", c("[yellow]~[reset]"))
	others := 0
	for _, d := range ds {
		if d.Source == "flag default" && !memoryFlags[d.Setting] {
			others++
			continue
		}
		line := fmt.Sprintf("          %s %s = %s -> %s", c("[yellow]~[reset]"), d.Setting, d.Before, d.After)
		if d.Memory != "" {
			line += "  # " + d.Memory
		}
		fmt.Fprintln(w, line)
	}
	if others > 0 {
		fmt.Fprintf(w, "          # and %d other flag defaults differ (plan -json: default_changes)\n", others)
	}
	fmt.Fprintln(w, "        }")
}

// ArgvOp is one line of an argument diff: Kind is ' ', '-', '+' or '~'
// (a sensitive value that changed).
type ArgvOp = shownOp

// ArgvDiff is a change's argument diff, without the command prefix, with
// sensitive values masked: what the human plan shows under argv.
func ArgvDiff(ch JSONChange) []ArgvOp {
	var before, after []string
	if ch.Before != nil {
		before = engine.ArgvLines(argsOnlyState(ch.Before))
	}
	if ch.After != nil {
		after = engine.ArgvLines(argsOnly(ch.After.Argv, ch.After))
	}
	return foldRotations(textdiff.Lines(before, after))
}
