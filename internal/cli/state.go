package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/roofline/roofline/internal/journal"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/roofline/roofline/internal/driver/process"
	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/suggest"
	"github.com/spf13/pflag"
)

func init() {
	register(&Command{
		Name:     "state",
		Hidden:   true, // its subcommands are listed instead
		Synopsis: "Inspect and change the state",
		Usage:    stateUsage,
		Run:      runState,
	})
	register(&Command{
		Name:     "state list",
		Synopsis: "List the servers in the state",
		Usage: `Usage: roofline state list [options]

  Lists the address of every server recorded in the state, one per line.

Options:
  -json             Print the state's serial, lineage and a summary per server as JSON.
  -state-dir=DIR    Use the state in DIR instead of the configuration's state_dir
                    (works when the configuration does not load).
` + varsUsage,
		Run: runStateList,
	})
	register(&Command{
		Name:     "state show",
		Synopsis: "Show one server in the state",
		Usage: `Usage: roofline state show [options] ADDRESS

  Shows everything the state records about one server: its engine, model,
  command line, process identity, log file, gate results and footprint.
  ADDRESS is server.NAME (or just NAME).

Options:
  -json             Print the server's record exactly as stored.
  -state-dir=DIR    Use the state in DIR instead of the configuration's state_dir.
` + varsUsage,
		Run: runStateShow,
	})
	register(&Command{
		Name:     "state rm",
		Synopsis: "Forget a server without stopping it",
		Usage: `Usage: roofline state rm [options] ADDRESS...

  Removes servers from the state without stopping them. Their processes keep
  running and roofline no longer manages them: the next plan sees their
  ports and GPUs as taken by foreign processes. Prints each one's pid so you
  can stop it yourself. Takes the state lock.

Options:
  -dry-run          Say what would be removed; change nothing.
  -lock-timeout=DUR How long to wait for the state lock (default 0s: fail at once).
  -state-dir=DIR    Use the state in DIR instead of the configuration's state_dir.
` + varsUsage,
		Run: runStateRm,
	})
}

const stateUsage = `Usage: roofline state <subcommand> [options] [args]

  Inspects and changes roofline's record of the servers it started. The
  state file is state.json in the state directory; docs/state.md describes it.

Subcommands:
  list    List the servers in the state
  show    Show one server in the state
  mv      Rename a server without restarting it
  rm      Forget a server without stopping it

Related: "roofline force-unlock ID" releases a stuck state lock.
`

func runState(m *Meta, args []string) int {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(m.Err, "Error: unknown command \"state %s\".%s\n\n", args[0],
			suggest.DidYouMean(args[0], []string{"list", "show", "mv", "rm"}))
	}
	fmt.Fprint(m.Err, stateUsage)
	return ExitError
}

// stateDirFlag adds -state-dir to fs.
func stateDirFlag(fs *pflag.FlagSet) *string {
	return fs.String("state-dir", "", "")
}

// openState returns the state manager for -state-dir, or else for the
// configuration's state_dir. ok is false (and the reason printed) when the
// configuration is needed and does not load.
func openState(m *Meta, dir string) (*state.Filesystem, bool) {
	if dir == "" {
		cfg, ok := loadConfig(m)
		if !ok {
			fmt.Fprintln(m.Err, "Error: the state directory is set in the configuration, which did not load (see above). "+
				"Fix it, or name the directory: -state-dir=DIR (the default is .roofline next to the configuration).")
			return nil, false
		}
		dir = stateDir(cfg)
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return state.NewFilesystem(dir), true
}

// staleLockNote prints a note when a command takes over a lock left by a
// roofline that ended without releasing it.
func staleLockNote(m *Meta) func(*state.LockInfo) {
	return func(old *state.LockInfo) {
		fmt.Fprintf(m.Err, "Note: the previous lock (%s by %s, pid %d on %s, %s) was left by a roofline that ended without releasing it; taken over.\n",
			old.Operation, old.Who, old.PID, old.Host, old.Created.Local().Format(time.RFC3339))
	}
}

// parseServerAddr accepts "server.NAME" or "NAME".
func parseServerAddr(arg string) (string, error) {
	if strings.HasPrefix(arg, "module.") {
		return arg, nil
	}
	kind, name, dotted := strings.Cut(arg, ".")
	switch {
	case !dotted:
		name = arg
	case kind != "server":
		return "", fmt.Errorf("%q is not a server address: the state records servers only; write server.NAME", arg)
	}
	if name == "" {
		return "", fmt.Errorf("%q has no server name; write server.NAME", arg)
	}
	return name, nil
}

// lookupServers resolves addresses against f; an unknown one is an error
// with a suggestion.
func lookupServers(f *state.File, args []string) ([]*state.Server, error) {
	var out []*state.Server
	for _, a := range args {
		name, err := parseServerAddr(a)
		if err != nil {
			return nil, err
		}
		s := f.Server(name)
		if s == nil {
			hint := suggest.DidYouMean(name, f.Names())
			if len(f.Servers) == 0 {
				hint = " The state records no servers."
			}
			return nil, fmt.Errorf("server.%s is not in the state.%s Run \"roofline state list\" to see what is", name, hint)
		}
		out = append(out, s)
	}
	return out, nil
}

// lockState takes the state lock for op (waiting up to timeout) for a
// command that rewrites the state; the returned func releases it.
func lockState(m *Meta, sm *state.Filesystem, op string, timeout time.Duration) (func(), bool) {
	sm.OnStaleLock = staleLockNote(m)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	id, err := sm.Lock(ctx, state.NewLockInfo(op))
	cancel()
	if err != nil {
		fmt.Fprintf(m.Err, "Error: %v\n", err)
		return nil, false
	}
	return func() {
		if err := sm.Unlock(id); err != nil {
			fmt.Fprintf(m.Err, "Error: %v\n", err)
		}
	}, true
}

func readState(m *Meta, sm *state.Filesystem) (*state.File, bool) {
	f, err := sm.Read()
	if err != nil {
		fmt.Fprintf(m.Err, "Error: %v\n", err)
		return nil, false
	}
	return f, true
}

func runStateList(m *Meta, args []string) int {
	fs := newFlags("state list")
	jsonOut := fs.Bool("json", false, "")
	dir := stateDirFlag(fs)
	if !parseConfigFlags(m, fs, args) {
		return ExitError
	}
	if fs.NArg() > 0 {
		return usageError(m, "state list", "unexpected argument "+fs.Arg(0))
	}
	sm, ok := openState(m, *dir)
	if !ok {
		return ExitError
	}
	f, ok := readState(m, sm)
	if !ok {
		return ExitError
	}
	if *jsonOut {
		type entry struct {
			Address string          `json:"address"`
			Name    string          `json:"name"`
			Status  string          `json:"status"`
			Driver  string          `json:"driver"`
			PID     int             `json:"pid"`
			Port    int             `json:"port"`
			GPUs    []int           `json:"gpus"`
			Engine  state.EngineRef `json:"engine"`
			Model   state.ModelRef  `json:"model"`
		}
		out := struct {
			FormatVersion int     `json:"format_version"`
			StatePath     string  `json:"state_path"`
			Serial        uint64  `json:"serial"`
			Lineage       string  `json:"lineage"`
			Servers       []entry `json:"servers"`
		}{state.CurrentFormat, sm.StatePath(), f.Serial, f.Lineage, []entry{}}
		for _, n := range f.Names() {
			s := f.Servers[n]
			gpus := s.GPUs
			if gpus == nil {
				gpus = []int{}
			}
			out.Servers = append(out.Servers, entry{s.Addr(), s.Name, s.Status, s.Driver, s.PID, s.Port, gpus, s.Engine, s.Model})
		}
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintln(m.Out, string(b))
		return ExitOK
	}
	if len(f.Servers) == 0 {
		fmt.Fprintf(m.Err, "The state (%s) records no servers.\n", sm.StatePath())
		return ExitOK
	}
	for _, n := range f.Names() {
		fmt.Fprintln(m.Out, f.Servers[n].Addr())
	}
	return ExitOK
}

func runStateShow(m *Meta, args []string) int {
	fs := newFlags("state show")
	jsonOut := fs.Bool("json", false, "")
	dir := stateDirFlag(fs)
	if !parseConfigFlags(m, fs, args) {
		return ExitError
	}
	if fs.NArg() != 1 {
		return usageError(m, "state show", "expected one address, server.NAME")
	}
	sm, ok := openState(m, *dir)
	if !ok {
		return ExitError
	}
	f, ok := readState(m, sm)
	if !ok {
		return ExitError
	}
	servers, err := lookupServers(f, fs.Args())
	if err != nil {
		fmt.Fprintf(m.Err, "Error: %v.\n", err)
		return ExitError
	}
	s := servers[0]
	if *jsonOut {
		b, _ := json.MarshalIndent(s, "", "  ")
		fmt.Fprintln(m.Out, string(b))
		return ExitOK
	}
	writeServer(m, s)
	return ExitOK
}

// writeServer prints one server record for people.
func writeServer(m *Meta, s *state.Server) {
	w := m.Out
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
	row("gpus", joinInts(s.GPUs))
	row("driver", s.Driver)
	switch s.Driver {
	case state.DriverDocker:
		row("container", s.ID)
	default:
		if s.PID > 0 {
			row("pid", fmt.Sprintf("%d (process group %d, start time %d, boot %s)", s.PID, s.Group, s.StartTime, orNone(s.BootID)))
		}
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
			if line := gateLine(part.name, part.raw); line != "" {
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

func joinInts(v []int) string {
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

func runStateRm(m *Meta, args []string) int {
	fs := newFlags("state rm")
	dryRun := fs.Bool("dry-run", false, "")
	lockTimeout := fs.Duration("lock-timeout", 0, "")
	dir := stateDirFlag(fs)
	if !parseConfigFlags(m, fs, args) {
		return ExitError
	}
	if fs.NArg() == 0 {
		return usageError(m, "state rm", "expected at least one address, server.NAME")
	}
	sm, ok := openState(m, *dir)
	if !ok {
		return ExitError
	}
	if !*dryRun && !m.NoLock {
		unlock, ok := lockState(m, sm, "state rm", *lockTimeout)
		if !ok {
			return ExitError
		}
		defer unlock()
	}
	// Read under the lock, so nothing changes between read and write.
	f, ok := readState(m, sm)
	if !ok {
		return ExitError
	}
	servers, err := lookupServers(f, fs.Args())
	if err != nil {
		fmt.Fprintf(m.Err, "Error: %v. Nothing was removed.\n", err)
		return ExitError
	}
	seen := map[string]bool{}
	for _, s := range servers {
		if !seen[s.Name] {
			seen[s.Name] = true
			f.Remove(s.Name)
		}
	}
	verb := "Removed"
	if *dryRun {
		verb = "Would remove"
	} else if err := sm.Write(f); err != nil {
		fmt.Fprintf(m.Err, "Error: %v\n", err)
		return ExitError
	}
	done := map[string]bool{}
	for _, s := range servers {
		if done[s.Name] {
			continue
		}
		done[s.Name] = true
		fmt.Fprintf(m.Out, "%s %s from the state; it was not stopped.\n", verb, s.Addr())
		fmt.Fprintf(m.Out, "  %s\n", forgottenHint(s))
		if s.Proxy != nil && s.Proxy.PID > 0 {
			fmt.Fprintf(m.Out, "  Its front proxy: %s\n", processHint(*s.Proxy, s.Port))
		}
		if s.Deposed != nil {
			fmt.Fprintf(m.Out, "  Its previous instance, kept during a rollout: %s\n", forgottenHint(s.Deposed))
		}
	}
	if !*dryRun {
		fmt.Fprintf(m.Out, "State serial %d. roofline no longer manages the servers above; the next plan sees their ports and GPUs as taken.\n", f.Serial)
	}
	return ExitOK
}

// forgottenHint says how to find and stop a forgotten server by hand.
func forgottenHint(s *state.Server) string {
	switch {
	case s.Driver == state.DriverDocker && s.ID != "":
		return fmt.Sprintf("Container %s on port %d. To stop it: docker stop %s", s.ID, s.Port, s.ID)
	case s.PID > 0:
		port := s.Port
		if s.BackendPort > 0 {
			port = s.BackendPort
		}
		return processHint(s.Instance, port)
	}
	return fmt.Sprintf("No process is recorded for it (status %s).", s.Status)
}

// processHint says whether the process behind h still runs and how to stop it.
func processHint(h state.Instance, port int) string {
	pg := h.Group
	if pg <= 0 {
		pg = h.PID
	}
	stop := fmt.Sprintf("To stop it and its workers: kill -TERM -- -%d", pg)
	obs, err := process.New().Read(context.Background(), h)
	switch {
	case err != nil:
		return fmt.Sprintf("Pid %d (process group %d, port %d) may still run (%v). %s", h.PID, pg, port, err, stop)
	case !obs.Remains():
		return fmt.Sprintf("Its process (pid %d) is no longer running; there is nothing to stop.", h.PID)
	case !obs.Alive:
		return fmt.Sprintf("Its main process (pid %d) has exited, but processes %s of its session still run (workers holding GPU memory?). To stop them: kill -TERM %s",
			h.PID, joinInts(obs.PIDs), strings.ReplaceAll(joinInts(obs.PIDs), ",", ""))
	}
	return fmt.Sprintf("Still running: pid %d (process group %d) on port %d. %s", h.PID, pg, port, stop)
}

// gateLine says in words what one gate's recorded result was: "health:
// pass, 6 checks", the checks that failed, or the bench's figures
// (state show -json keeps the whole record).
func gateLine(name string, raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if name == "bench" {
		var b journal.BenchSummary
		if json.Unmarshal(raw, &b) != nil || b.Completed+b.Failed == 0 {
			return "bench: " + gateVerdict(raw)
		}
		return fmt.Sprintf("bench: %s; %d requests (%d failed) at concurrency %d: %.0f output tok/s, %.2f req/s, TTFT p99 %.0f ms, TPOT p99 %.1f ms, ITL p99 %.1f ms",
			gateVerdict(raw), b.Completed+b.Failed, b.Failed, b.MaxConcurrency, b.OutputThroughput, b.RequestThroughput, b.P99TTFTMs, b.P99TPOTMs, b.P99ITLMs)
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
	line := name + ": " + gateVerdict(raw)
	if len(r.Checks) > 0 {
		line += fmt.Sprintf(", %d checks", len(r.Checks))
	}
	if len(failed) > 0 {
		line += "; failed: " + strings.Join(failed, "; ")
	}
	return line
}
