package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/roofline/roofline/internal/apply"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/views"
)

func init() {
	register(&Command{
		Name:     "status",
		Synopsis: "Show the servers that run, their health and footprint",
		Usage: `Usage: roofline [global options] status [-json]

  For every server in the state: engine and version, model, port, GPUs, pid,
  uptime, whether the process is still the one roofline started, health, and
  the KV cache measured at start-up beside what plan predicted.

Options:
  -json   Print a JSON array.

Exit codes: 0 every server runs and is healthy (or there are none); 1 error;
2 a server is gone, failed or not healthy.
` + varsUsage,
		Run: runStatus,
	})
	register(&Command{
		Name:     "logs",
		Synopsis: "Show a server's log",
		Usage: `Usage: roofline [global options] logs [options] SERVER

  Prints the engine's log (stdout and stderr) of SERVER.

Options:
  -n=N   Print the last N lines (default 100; 0 prints the whole log).
  -f     Follow: keep printing new lines until interrupted.
` + varsUsage,
		Run: runLogs,
	})
	register(&Command{
		Name:     "show",
		Synopsis: "Show a saved plan or the state",
		Usage: `Usage: roofline [global options] show [-json] [PLANFILE]

  Without an argument, prints the state. With a plan file (roofline plan
  -out=FILE), prints the plan as plan did.

Options:
  -json             Print JSON.
  -format=markdown  Print a plan file for a pull request comment.
` + varsUsage,
		Run: runShow,
	})
}

type statusRow struct {
	Name string `json:"name"`
	// Instance is "old" or "new" while a rollout replaces the server (both
	// run; the old one serves until the new one passed its gates).
	Instance    string           `json:"instance,omitempty"`
	Engine      string           `json:"engine"`
	EngineKind  string           `json:"engine_kind"`
	Version     string           `json:"engine_version"`
	Model       string           `json:"model"`
	ServedName  string           `json:"served_name"`
	Port        int              `json:"port"`
	BackendPort int              `json:"backend_port,omitempty"`
	GPUs        []int            `json:"gpus"`
	PID         int              `json:"pid"`
	Status      string           `json:"status"`
	Running     bool             `json:"running"`
	Healthy     *bool            `json:"healthy"`
	Detail      string           `json:"detail,omitempty"`
	UptimeSec   float64          `json:"uptime_seconds,omitempty"`
	Measured    *state.Footprint `json:"measured,omitempty"`
	Predicted   *state.Footprint `json:"predicted,omitempty"`
	// Prediction is how plan predicted this start's memory: "measured",
	// "estimated" or "uncalibrated" (from the state directory's calibrations).
	Prediction string `json:"prediction,omitempty"`
	GatePassed *bool  `json:"gate_passed,omitempty"`
	// GPUMemoryBytes is what the server's processes hold on its GPUs, as
	// NVML reports it (0 when the inventory lists none of them).
	GPUMemoryBytes uint64 `json:"gpu_memory_bytes"`
	LogPath        string `json:"log_path"`
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
	rows := []statusRow{}
	for _, name := range st.Names() {
		s := st.Servers[name]
		o := obs.Observe(context.Background(), s)
		r := statusRow{Name: name, Engine: s.Engine.Name, EngineKind: s.Engine.Kind, Version: s.Engine.Version,
			Model: s.Model.Path, ServedName: s.Model.ServedName, Port: s.Port, BackendPort: s.BackendPort, GPUs: s.GPUs,
			PID: s.PID, Status: s.Status, Running: o.Alive, Healthy: o.Healthy, Detail: o.Detail,
			Measured: s.Footprint, Predicted: s.Predicted, LogPath: s.LogPath}
		if c := cals.Latest(name); c != nil && (c.LaunchID == "" || c.LaunchID == s.LaunchID) {
			r.Prediction = c.PredictedAs
		}
		if o.Alive && !s.ReadyAt.IsZero() {
			r.UptimeSec = time.Since(s.ReadyAt).Seconds()
		}
		if s.Gate != nil {
			p := s.Gate.Passed
			r.GatePassed = &p
		}
		if snap != nil && o.Alive {
			r.GPUMemoryBytes = gpuMemoryOf(snap, o.GPUPids)
		}
		if old := s.Deposed; old != nil {
			// A rollout in progress: the old instance still serves until
			// the new one passes its gates.
			r.Instance = "new"
			oo := obs.Observe(context.Background(), old)
			or := statusRow{Name: name, Instance: "old", Engine: old.Engine.Name, EngineKind: old.Engine.Kind, Version: old.Engine.Version,
				Model: old.Model.Path, ServedName: old.Model.ServedName, Port: s.Port, BackendPort: old.BackendPort, GPUs: old.GPUs,
				PID: old.PID, Status: old.Status, Running: oo.Alive, Healthy: oo.Healthy, Detail: oo.Detail,
				Measured: old.Footprint, Predicted: old.Predicted, LogPath: old.LogPath}
			if oo.Alive && !old.ReadyAt.IsZero() {
				or.UptimeSec = time.Since(old.ReadyAt).Seconds()
			}
			if snap != nil && oo.Alive {
				or.GPUMemoryBytes = gpuMemoryOf(snap, oo.GPUPids)
			}
			rows = append(rows, or)
		}
		rows = append(rows, r)
	}
	code := ExitOK
	for _, r := range rows {
		if !r.Running || (r.Healthy != nil && !*r.Healthy) || r.Status == state.StatusFailed {
			code = ExitUnhealthy
		}
	}
	if *jsonOut {
		b, _ := json.MarshalIndent(rows, "", "  ")
		fmt.Fprintln(m.Out, string(b))
		return code
	}
	if len(rows) == 0 {
		fmt.Fprintln(m.Out, "No servers in the state. Run roofline apply to start the configured ones.")
		return ExitOK
	}
	renderStatus(m, m.Out, rows)
	return code
}

// ExitUnhealthy: status found a server that is gone, failed or not healthy.
const ExitUnhealthy = 2

// gpuMemoryOf sums the GPU memory of the given pids over all GPUs.
func gpuMemoryOf(snap *gpu.Snapshot, pids []int) uint64 {
	want := map[int]bool{}
	for _, p := range pids {
		want[p] = true
	}
	var sum uint64
	for _, g := range snap.GPUs {
		for _, p := range g.Processes {
			if want[p.PID] {
				sum += p.UsedMemoryBytes
			}
		}
	}
	return sum
}

func renderStatus(m *Meta, w io.Writer, rows []statusRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tENGINE\tMODEL\tPORT\tGPUS\tPID\tUPTIME\tSTATE\tGPU MEM\tKV TOKENS (measured / predicted)")
	for _, r := range rows {
		stateText := r.Status
		switch {
		case !r.Running && r.Status != state.StatusFailed:
			stateText = m.colorize("[red]gone[reset]")
		case r.Healthy != nil && *r.Healthy:
			stateText = m.colorize("[green]healthy[reset]")
		case r.Healthy != nil:
			stateText = m.colorize("[red]unhealthy[reset]")
		case r.Status == state.StatusFailed:
			stateText = m.colorize("[red]failed[reset]")
		}
		kv := "-"
		if r.Measured != nil || r.Predicted != nil {
			mt, pt := "?", "?"
			if r.Measured != nil && r.Measured.KVTokens > 0 {
				mt = fmt.Sprint(r.Measured.KVTokens)
			}
			if r.Predicted != nil && r.Predicted.KVTokens > 0 {
				pt = fmt.Sprint(r.Predicted.KVTokens)
			}
			kv = mt + " / " + pt
			if r.Prediction != "" {
				kv += " (" + r.Prediction + ")"
			}
		}
		uptime := "-"
		if r.UptimeSec > 0 {
			uptime = time.Duration(r.UptimeSec * float64(time.Second)).Round(time.Second).String()
		}
		pid := "-"
		if r.PID > 0 {
			pid = fmt.Sprint(r.PID)
		}
		port := fmt.Sprint(r.Port)
		if r.BackendPort != 0 {
			port += fmt.Sprintf(" (->%d)", r.BackendPort)
		}
		mem := "-"
		if r.GPUMemoryBytes > 0 {
			mem = fmt.Sprintf("%.1f GiB", float64(r.GPUMemoryBytes)/(1<<30))
		}
		fmt.Fprintf(tw, "%s\t%s %s\t%s\t%s\t%v\t%s\t%s\t%s\t%s\t%s\n", rowName(r), r.EngineKind, r.Version, r.ServedName, port, r.GPUs, pid, uptime, stateText, mem, kv)
	}
	tw.Flush()
	for _, r := range rows {
		if r.Detail != "" && (!r.Running || (r.Healthy != nil && !*r.Healthy)) {
			fmt.Fprintf(w, "\nserver.%s: %s\n", r.Name, r.Detail)
		}
	}
}

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
	path := logPathOf(dir, name)
	if s := stateServer(m, cfg, name); s != nil && s.LogPath != "" {
		path = s.LogPath
		// A container's log lives in the daemon; bring the file up to date.
		syncContainerLog(context.Background(), newDrivers(), s)
	}
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintf(m.Err, "Error: no log for server %q (%v). A server has a log once apply has started it.\n", name, err)
		return ExitError
	}
	defer f.Close()
	if *n > 0 {
		for _, l := range apply.LastLines(path, *n) {
			fmt.Fprintln(m.Out, l)
		}
		if _, err := f.Seek(0, io.SeekEnd); err != nil {
			return ExitError
		}
	} else {
		if _, err := io.Copy(m.Out, f); err != nil {
			return ExitError
		}
	}
	if !*follow {
		return ExitOK
	}
	buf := make([]byte, 32<<10)
	for {
		k, err := f.Read(buf)
		if k > 0 {
			m.Out.Write(buf[:k])
		}
		if err == io.EOF {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if err != nil {
			return ExitError
		}
	}
}

// stateServer returns the named server's record, or nil.
func stateServer(m *Meta, cfg *config.Config, name string) *state.Server {
	b, err := newBackend(m, cfg)
	if err != nil {
		return nil
	}
	st, err := b.states.Read()
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
	if fs.NArg() == 1 {
		var p *plan.Plan
		b, ok := openBackend(m)
		if !ok {
			return ExitError
		}
		key, err := b.states.PlanKey()
		if err == nil {
			p, err = plan.Load(fs.Arg(0), key)
		}
		if err != nil {
			fmt.Fprintf(m.Err, "Error: %v\n", err)
			return ExitError
		}
		switch {
		case *jsonOut:
			_ = plan.WriteJSON(m.Out, p.ToJSON())
		case *format == "markdown":
			views.PlanMarkdown(m.Out, p.ToJSON())
		default:
			plan.RenderHuman(m.Out, p.ToJSON(), m.colorize)
		}
		return ExitOK
	}
	_, st, ok := openStateFile(m)
	if !ok {
		return ExitError
	}
	if *jsonOut {
		out, _ := json.MarshalIndent(st, "", "  ")
		fmt.Fprintln(m.Out, string(out))
		return ExitOK
	}
	if len(st.Servers) == 0 {
		fmt.Fprintln(m.Out, "The state is empty. Run roofline apply to start the configured servers.")
		return ExitOK
	}
	for _, name := range st.Names() {
		s := st.Servers[name]
		fmt.Fprintf(m.Out, "# %s:\nserver %q {\n", s.Addr(), s.Name)
		fmt.Fprintf(m.Out, "    engine     = %q (%s %s)\n", s.Engine.Name, s.Engine.Kind, s.Engine.Version)
		fmt.Fprintf(m.Out, "    model      = %q (served as %q)\n", s.Model.Path, s.Model.ServedName)
		fmt.Fprintf(m.Out, "    gpus       = %v\n    port       = %d\n    pid        = %d\n    status     = %q\n    log        = %q\n", s.GPUs, s.Port, s.PID, s.Status, s.LogPath)
		fmt.Fprintf(m.Out, "    argv       = %q\n}\n\n", s.Argv)
	}
	return ExitOK
}

// rowName is the server's name, marked during a rollout.
func rowName(r statusRow) string {
	switch r.Instance {
	case "old":
		return r.Name + " (old, serving)"
	case "new":
		return r.Name + " (new, rolling out)"
	}
	return r.Name
}
