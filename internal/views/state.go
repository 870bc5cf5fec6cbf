package views

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/roofline/roofline/internal/apply"
	"github.com/roofline/roofline/internal/journal"
	"github.com/roofline/roofline/internal/jsonplan"
	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/state"
)

// StateList is roofline state list's view.
type StateList interface {
	// List prints the servers of f, the state at path.
	List(path string, f *state.File)
}

// NewStateList returns the state list view of type vt.
func NewStateList(vt ViewType, v *View) StateList {
	if vt == ViewJSON {
		return StateListJSON{v}
	}
	return StateListHuman{v}
}

// StateListHuman prints one address per line.
type StateListHuman struct{ view *View }

func (h StateListHuman) List(path string, f *state.File) {
	if len(f.Servers) == 0 {
		fmt.Fprintf(h.view.Err, "The state (%s) records no servers.\n", path)
		return
	}
	for _, n := range f.Names() {
		fmt.Fprintln(h.view.Out, f.Servers[n].Addr())
	}
}

// StateListJSON prints the state's serial, lineage and a summary per server.
type StateListJSON struct{ view *View }

// StateListDocument is state list -json.
type StateListDocument struct {
	FormatVersion int              `json:"format_version"`
	StatePath     string           `json:"state_path"`
	Serial        uint64           `json:"serial"`
	Lineage       string           `json:"lineage"`
	Servers       []StateListEntry `json:"servers"`
}

// StateListEntry is one server of state list -json.
type StateListEntry struct {
	Address string             `json:"address"`
	Name    string             `json:"name"`
	Status  string             `json:"status"`
	Driver  string             `json:"driver"`
	PID     int                `json:"pid"`
	Port    int                `json:"port"`
	GPUs    []int              `json:"gpus"`
	Engine  jsonplan.EngineRef `json:"engine"`
	Model   jsonplan.ModelRef  `json:"model"`
}

func (j StateListJSON) List(path string, f *state.File) {
	out := StateListDocument{StateFormatVersion, path, f.Serial, f.Lineage, []StateListEntry{}}
	for _, n := range f.Names() {
		s := f.Servers[n]
		gpus := s.GPUs
		if gpus == nil {
			gpus = []int{}
		}
		doc := plan.StateServerDocument(s)
		out.Servers = append(out.Servers, StateListEntry{s.Addr(), s.Name, s.Status, s.Driver, s.PID, s.Port, gpus, doc.Engine, doc.Model})
	}
	writeJSON(j.view.Out, out)
}

// StateShow is roofline state show's view.
type StateShow interface {
	Server(s *state.Server, ids Identifier)
}

// Identifier words an instance's identity row ("pid", "container") as its
// driver does (driver.Set): views names no driver.
type Identifier interface {
	Identity(i state.Instance) (label, value string)
}

// NewStateShow returns the state show view of type vt.
func NewStateShow(vt ViewType, v *View) StateShow {
	if vt == ViewJSON {
		return StateShowJSON{v}
	}
	return StateShowHuman{v}
}

// StateShowJSON prints the server as the plan document's "before" shows it.
type StateShowJSON struct{ view *View }

func (j StateShowJSON) Server(s *state.Server, _ Identifier) {
	writeJSON(j.view.Out, plan.StateServerDocument(s))
}

// StateShowHuman prints one row per recorded fact.
type StateShowHuman struct{ view *View }

func (h StateShowHuman) Server(s *state.Server, ids Identifier) {
	w := h.view.Out
	fmt.Fprintf(w, "# %s\n", s.Addr())
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(w, "  %-12s %s\n", k, v)
		}
	}
	status := s.Status
	if !s.ReadyAt.IsZero() && s.Status == state.StatusReady {
		status += " since " + s.ReadyAt.UTC().Format(time.RFC3339)
	}
	row("status", status)
	row("engine", fmt.Sprintf("engine.%s: %s %s (identity %s)", s.Engine.Name, s.Engine.Kind, s.Engine.Version, orNone(s.Engine.Identity)))
	row("model", fmt.Sprintf("model.%s: %s served as %q (fingerprint %s)", s.Model.Name, s.Model.Path, s.Model.ServedName, orNone(s.Model.Fingerprint)))
	host := s.Host
	if host == "" {
		host = "*"
	}
	listen := host + ":" + strconv.Itoa(s.Port)
	if s.BackendPort > 0 {
		listen += fmt.Sprintf(" (proxy; engine on port %d)", s.BackendPort)
	}
	row("listen", listen)
	row("gpus", JoinInts(s.GPUs))
	row("driver", s.Driver)
	if ids != nil {
		row(ids.Identity(s.Instance))
	}
	row("log", s.LogPath)
	if p := s.Proxy; p != nil {
		row("proxy", fmt.Sprintf("pid %d (process group %d, start time %d), log %s", p.PID, p.Group, p.StartTime, orNone(p.LogPath)))
	}
	row("launch id", s.LaunchID)
	if !s.CreatedAt.IsZero() {
		row("created", s.CreatedAt.UTC().Format(time.RFC3339))
	}
	row("config hash", s.ConfigHash)
	row("gate hash", s.GateHash)
	for i, line := range argvLines(s.Argv) {
		k := ""
		if i == 0 {
			k = "argv"
		}
		fmt.Fprintf(w, "  %-12s %s\n", k, line)
	}
	if len(s.Cmdline) > 0 && strings.Join(s.Cmdline, " ") != strings.Join(s.Argv, " ") {
		row("cmdline", strings.Join(quoteWords(s.Cmdline), " "))
	}
	first := true
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		key := ""
		if first {
			key, first = "env", false
		}
		fmt.Fprintf(w, "  %-12s %s=%s\n", key, k, s.Env[k])
	}
	if g := s.Gate; g != nil {
		verdict := "failed"
		if g.Passed {
			verdict = "passed"
		}
		if !g.CheckedAt.IsZero() {
			verdict += " at " + g.CheckedAt.UTC().Format(time.RFC3339)
		}
		row("gate", verdict)
		for _, part := range []struct {
			name string
			raw  json.RawMessage
		}{{"health", g.Health}, {"smoke", g.Smoke}, {"bench", g.Bench}} {
			if line := recordedGateLine(part.name, part.raw); line != "" {
				row("", line)
			}
		}
	}
	if s.Footprint != nil {
		row("measured", footprintText(s.Footprint))
	}
	if s.Predicted != nil {
		row("predicted", footprintText(s.Predicted))
	}
	if d := s.Deposed; d != nil {
		row("deposed", fmt.Sprintf("the previous instance, kept while its replacement starts: status %s, engine %s %s, pid %d, port %d, log %s",
			d.Status, d.Engine.Kind, d.Engine.Version, d.PID, d.Port, orNone(d.LogPath)))
	}
}

func footprintText(f *state.Footprint) string {
	return fmt.Sprintf("weights %.2f GiB, KV cache %.2f GiB = %d tokens, %.2fx full-context requests",
		f.WeightsGiB, f.KVCacheGiB, f.KVTokens, f.MaxConcurrency)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func JoinInts(v []int) string {
	parts := make([]string, len(v))
	for i, n := range v {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ", ")
}

// argvLines breaks a command line before each long flag, so each flag and
// its value read as one line.
func argvLines(argv []string) []string {
	var lines []string
	var cur []string
	for i, a := range quoteWords(argv) {
		if i > 0 && strings.HasPrefix(argv[i], "--") && len(cur) > 0 {
			lines = append(lines, strings.Join(cur, " "))
			cur = nil
		}
		cur = append(cur, a)
	}
	if len(cur) > 0 {
		lines = append(lines, strings.Join(cur, " "))
	}
	for i := 1; i < len(lines); i++ {
		lines[i] = "  " + lines[i]
	}
	return lines
}

// quoteWords quotes the words a shell would split or expand.
func quoteWords(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		if w == "" || strings.ContainsAny(w, " \t\n\"'\\$`|&;<>(){}*?[]#~") {
			w = strconv.Quote(w)
		}
		out[i] = w
	}
	return out
}

// StaleLockTakenOver notes that a command took over a lock left by a
// roofline that ended without releasing it.
func (v *View) StaleLockTakenOver(old *state.LockInfo) {
	fmt.Fprintf(v.Err, "Note: the previous lock (%s by %s, pid %d on %s, %s) was left by a roofline that ended without releasing it; taken over.\n",
		old.Operation, old.Who, old.PID, old.Host, old.Created.Local().Format(time.RFC3339))
}

// ProcessSeen is what state rm found of a forgotten instance's process.
type ProcessSeen = apply.Seen

// StateForgotten is a server state rm forgot and what still runs of it.
type StateForgotten = apply.Forgotten

// StateRm says what state rm forgot (or, dryRun, would forget) and how to
// stop what still runs by hand.
func (v *View) StateRm(forgotten []StateForgotten, dryRun bool, serial uint64) {
	verb := "Removed"
	if dryRun {
		verb = "Would remove"
	}
	for _, f := range forgotten {
		s := f.Server
		fmt.Fprintf(v.Out, "%s %s from the state; it was not stopped.\n", verb, s.Addr())
		fmt.Fprintf(v.Out, "  %s\n", forgottenHint(s, f.Main))
		if f.Proxy != nil {
			fmt.Fprintf(v.Out, "  Its front proxy: %s\n", f.Proxy.Hint)
		}
		if s.Deposed != nil {
			fmt.Fprintf(v.Out, "  Its previous instance, kept during a rollout: %s\n", forgottenHint(s.Deposed, f.Deposed))
		}
	}
	if !dryRun {
		fmt.Fprintf(v.Out, "State serial %d. roofline no longer manages the servers above; the next plan sees their ports and GPUs as taken.\n", serial)
	}
}

// forgottenHint says how to find and stop a forgotten server by hand, in
// the words of its driver (apply.Forget reads it through the driver).
func forgottenHint(s *state.Server, seen *ProcessSeen) string {
	if seen == nil || seen.Hint == "" {
		return fmt.Sprintf("No process is recorded for it (status %s).", s.Status)
	}
	return seen.Hint
}

// recordedGateLine says in words what one gate's recorded result was: "health:
// pass, 6 checks", the checks that failed, or the bench's figures
// (state show -json keeps the whole record).
func recordedGateLine(name string, raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if name == "bench" {
		var b journal.BenchSummary
		if json.Unmarshal(raw, &b) != nil || b.Completed+b.Failed == 0 {
			return "bench: " + journal.GateVerdict(raw)
		}
		return fmt.Sprintf("bench: %s; %d requests (%d failed) at concurrency %d: %.0f output tok/s, %.2f req/s, TTFT p99 %.0f ms, TPOT p99 %.1f ms, ITL p99 %.1f ms",
			journal.GateVerdict(raw), b.Completed+b.Failed, b.Failed, b.MaxConcurrency, b.OutputThroughput, b.RequestThroughput, b.P99TTFTMs, b.P99TPOTMs, b.P99ITLMs)
	}
	var r struct {
		Checks []struct {
			Name    string `json:"name"`
			OK      bool   `json:"ok"`
			Skipped bool   `json:"skipped"`
			Detail  string `json:"detail"`
		} `json:"checks"`
		Steps json.RawMessage `json:"steps"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return name + ": recorded (state show -json shows it)"
	}
	if len(r.Steps) > 0 {
		_ = json.Unmarshal(r.Steps, &r.Checks)
	}
	var failed []string
	for _, c := range r.Checks {
		if !c.OK && !c.Skipped {
			failed = append(failed, c.Name+" ("+c.Detail+")")
		}
	}
	line := name + ": " + journal.GateVerdict(raw)
	if len(r.Checks) > 0 {
		line += fmt.Sprintf(", %d checks", len(r.Checks))
	}
	if len(failed) > 0 {
		line += "; failed: " + strings.Join(failed, "; ")
	}
	return line
}
