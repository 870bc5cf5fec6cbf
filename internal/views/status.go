package views

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/state"
)

// StatusRow is one line of roofline status: a server, or one of its two
// instances while a rollout replaces it. It is also the -json element.
type StatusRow struct {
	Name string `json:"name"`
	// Instance is "old" or "new" while a rollout replaces the server (both
	// run; the old one serves until the new one passed its gates), and
	// "previous" for the instance a finished rollout keeps for rollback
	// (lifecycle { keep_previous }), before the server's own row (the
	// last row of a name is the server, as during a rollout).
	Instance string `json:"instance,omitempty"`
	// Serves marks, during a rollout, the instance the proxy sends
	// requests to when it is the new one: an apply killed after the
	// switch, before the state recorded it (the old one drains).
	Serves      bool       `json:"serves,omitempty"`
	Engine      string     `json:"engine"`
	EngineKind  string     `json:"engine_kind"`
	Version     string     `json:"engine_version"`
	Model       string     `json:"model"`
	ServedName  string     `json:"served_name"`
	Port        int        `json:"port"`
	BackendPort int        `json:"backend_port,omitempty"`
	GPUs        []int      `json:"gpus"`
	PID         int        `json:"pid"`
	Status      string     `json:"status"`
	Running     bool       `json:"running"`
	Healthy     *bool      `json:"healthy"`
	Detail      string     `json:"detail,omitempty"`
	UptimeSec   float64    `json:"uptime_seconds,omitempty"`
	Measured    *Footprint `json:"measured,omitempty"`
	Predicted   *Footprint `json:"predicted,omitempty"`
	// Prediction is how plan predicted this start's memory: "measured",
	// "estimated" or "uncalibrated" (from the state directory's calibrations).
	Prediction string `json:"prediction,omitempty"`
	GatePassed *bool  `json:"gate_passed,omitempty"`
	// GPUMemoryBytes is what the server's processes hold on its GPUs, as
	// NVML reports it (0 when the inventory lists none of them).
	GPUMemoryBytes uint64 `json:"gpu_memory_bytes"`
	LogPath        string `json:"log_path"`
	// draining: an old instance whose new one Serves.
	draining bool
}

// Footprint is a server's GPU memory in status -json: measured from its log
// at the last start, or predicted by plan.
type Footprint struct {
	WeightsGiB     float64 `json:"weights_gib"`
	KVCacheGiB     float64 `json:"kv_cache_gib"`
	KVTokens       int64   `json:"kv_tokens"`
	MaxConcurrency float64 `json:"max_concurrency"`
}

// FootprintOf converts the state's record of a footprint (nil: none).
func FootprintOf(f *state.Footprint) *Footprint {
	if f == nil {
		return nil
	}
	return &Footprint{WeightsGiB: f.WeightsGiB, KVCacheGiB: f.KVCacheGiB, KVTokens: f.KVTokens, MaxConcurrency: f.MaxConcurrency}
}

// Unhealthy: gone, failed, or failing its health check.
func (r StatusRow) Unhealthy() bool {
	return !r.Running || (r.Healthy != nil && !*r.Healthy) || r.Status == state.StatusFailed
}

// StatusRows builds status's rows from the state, by server name: one per
// server, and an "old" row before the "new" one while a rollout replaces it
// (the old instance still serves until the new one passes its gates), or a
// "previous" row before the server's when a finished rollout kept the
// instance it replaced.
// observe says what runs of an instance; snap (nil: none) gives the GPU
// memory its processes hold, cals (nil: none) how its start was predicted.
// serving (nil: unknown) is the backend port the proxy of a server sends
// requests to.
func StatusRows(st *state.File, observe func(*state.Server) *plan.Observation, snap *gpu.Snapshot, cals *state.Calibrations, serving func(name string) int) []StatusRow {
	rows := []StatusRow{}
	for _, name := range st.Names() {
		s := st.Servers[name]
		r := statusRow(name, s, s.Port, observe(s), snap)
		if c := cals.Latest(name); c != nil && (c.LaunchID == "" || c.LaunchID == s.LaunchID) {
			r.Prediction = c.PredictedAs
		}
		if s.Gate != nil {
			p := s.Gate.Passed
			r.GatePassed = &p
		}
		old := s.Deposed
		if old != nil && old.Status == state.StatusKept {
			// A finished rollout: the server serves, its previous instance
			// waits idle for a rollback.
			or := statusRow(name, old, s.Port, observe(old), snap)
			or.Instance = "previous"
			rows = append(rows, or, r)
			continue
		}
		if old != nil {
			r.Instance = "new"
			r.Serves = serving != nil && s.BackendPort != 0 && serving(name) == s.BackendPort
			or := statusRow(name, old, s.Port, observe(old), snap)
			or.Instance, or.draining = "old", r.Serves
			rows = append(rows, or)
		}
		rows = append(rows, r)
	}
	return rows
}

// statusRow is one instance's row: its record and what was observed of
// it; port is the one clients use (the server's, for an old instance too).
func statusRow(name string, s *state.Server, port int, o *plan.Observation, snap *gpu.Snapshot) StatusRow {
	r := StatusRow{Name: name, Engine: s.Engine.Name, EngineKind: s.Engine.Kind, Version: s.Engine.Version,
		Model: s.Model.Path, ServedName: s.Model.ServedName, Port: port, BackendPort: s.BackendPort, GPUs: s.GPUs,
		PID: s.PID, Status: s.Status, Running: o.Alive, Healthy: o.Healthy, Detail: o.Detail,
		Measured: FootprintOf(s.Footprint), Predicted: FootprintOf(s.Predicted), LogPath: s.LogPath}
	if o.Alive && !s.ReadyAt.IsZero() {
		r.UptimeSec = time.Since(s.ReadyAt).Seconds()
	}
	if o.Alive {
		r.GPUMemoryBytes = snap.MemoryOf(o.GPUPids)
	}
	return r
}

// Status is roofline status's view.
type Status interface {
	Rows(rows []StatusRow)
}

// NewStatus returns the status view of type vt.
func NewStatus(vt ViewType, v *View) Status {
	if vt == ViewJSON {
		return StatusJSON{v}
	}
	return StatusHuman{v}
}

// StatusJSON prints the rows as a JSON array.
type StatusJSON struct{ view *View }

func (s StatusJSON) Rows(rows []StatusRow) { writeJSON(s.view.Out, rows) }

// StatusHuman prints a table, then why each unhealthy server is.
type StatusHuman struct{ view *View }

func (s StatusHuman) Rows(rows []StatusRow) {
	w := s.view.Out
	if len(rows) == 0 {
		fmt.Fprintln(w, "No servers in the state. Run roofline apply to start the configured ones.")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tENGINE\tMODEL\tPORT\tGPUS\tPID\tUPTIME\tSTATE\tGPU MEM\tKV TOKENS (measured / predicted)")
	for _, r := range rows {
		stateText := r.Status
		switch {
		case !r.Running && r.Status != state.StatusFailed:
			stateText = s.view.Colorize("[red]gone[reset]")
		case r.Healthy != nil && *r.Healthy:
			stateText = s.view.Colorize("[green]healthy[reset]")
		case r.Healthy != nil:
			stateText = s.view.Colorize("[red]unhealthy[reset]")
		case r.Status == state.StatusFailed:
			stateText = s.view.Colorize("[red]failed[reset]")
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

// rowName is the server's name, marked during a rollout.
func rowName(r StatusRow) string {
	switch {
	case r.Instance == "old" && r.draining:
		return r.Name + " (old, draining)"
	case r.Instance == "old":
		return r.Name + " (old, serving)"
	case r.Instance == "new" && r.Serves:
		return r.Name + " (new, serving)"
	case r.Instance == "new":
		return r.Name + " (new, rolling out)"
	case r.Instance == "previous":
		return r.Name + " (previous, for rollback)"
	}
	return r.Name
}

// Show is roofline show's view: a saved plan, or the state.
type Show interface {
	Plan(j *plan.JSONPlan)
	State(st *state.File)
}

// NewShow returns the show view of type vt; ViewMarkdown shows plan files
// only (cli refuses it for the state).
func NewShow(vt ViewType, v *View) Show {
	switch vt {
	case ViewJSON:
		return ShowJSON{v}
	case ViewMarkdown:
		return showMarkdown{ShowHuman{v}}
	}
	return ShowHuman{v}
}

// ShowJSON prints the plan document, or the state document.
type ShowJSON struct{ view *View }

func (s ShowJSON) Plan(j *plan.JSONPlan) { _ = plan.WriteJSON(s.view.Out, j) }
func (s ShowJSON) State(st *state.File)  { writeJSON(s.view.Out, StateDocumentOf(st)) }

// ShowHuman prints the plan as plan does, and the state as HCL-like blocks.
type ShowHuman struct{ view *View }

func (s ShowHuman) Plan(j *plan.JSONPlan) { plan.RenderHuman(s.view.Out, j, s.view.Colorize) }

func (s ShowHuman) State(st *state.File) {
	w := s.view.Out
	if len(st.Servers) == 0 {
		fmt.Fprintln(w, "The state is empty. Run roofline apply to start the configured servers.")
		return
	}
	for _, name := range st.Names() {
		s := st.Servers[name]
		fmt.Fprintf(w, "# %s:\nserver %q {\n", s.Addr(), s.Name)
		fmt.Fprintf(w, "    engine     = %q (%s %s)\n", s.Engine.Name, s.Engine.Kind, s.Engine.Version)
		fmt.Fprintf(w, "    model      = %q (served as %q)\n", s.Model.Path, s.Model.ServedName)
		fmt.Fprintf(w, "    gpus       = %v\n    port       = %d\n    pid        = %d\n    status     = %q\n    log        = %q\n", s.GPUs, s.Port, s.PID, s.Status, s.LogPath)
		fmt.Fprintf(w, "    argv       = %q\n}\n\n", s.Argv)
	}
}

type showMarkdown struct{ ShowHuman }

func (s showMarkdown) Plan(j *plan.JSONPlan) { PlanMarkdown(s.view.Out, j) }
