package plan

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/roofline/roofline/internal/state"
)

// KeptInstance is the previous instance a server keeps for rollback
// (lifecycle keep_previous): idle, loaded, holding its GPU memory.
type KeptInstance struct {
	PID    int             `json:"pid"`
	Engine state.EngineRef `json:"engine"`
	GPUs   []int           `json:"gpus"`
	// Until is when its rollback window ends; zero when the configuration
	// keeps none any more.
	Until time.Time `json:"until,omitzero"`
	// MemoryBytes is what it holds on each of its GPUs: measured (NVML
	// lists its processes), else the claim recorded at its start, else
	// the current instance's claim.
	MemoryBytes  uint64 `json:"memory_bytes"`
	MemorySource string `json:"memory_source"` // "measured", "claimed at its start", "estimated"
	// Gone: refresh saw that it no longer runs (Detail says how).
	Gone   bool   `json:"gone,omitempty"`
	Detail string `json:"detail,omitempty"`
	// Stop says why this plan's apply stops it ("" when it stays): the
	// window ended, the server is destroyed, a new rollout replaces it.
	Stop string `json:"stop,omitempty"`
}

// Stays reports whether the kept instance still runs after apply: the
// memory checks count it then.
func (k *KeptInstance) Stays() bool { return k != nil && k.Stop == "" && !k.Gone }

// keptOf describes the kept instance of before (nil when it keeps none).
func (pl *planner) keptOf(name string, before *state.Server, after *Desired) *KeptInstance {
	dep := before.Deposed
	if dep == nil || dep.Status != state.StatusKept {
		return nil
	}
	k := &KeptInstance{PID: dep.PID, Engine: dep.Engine, GPUs: dep.GPUs}
	if after != nil && after.KeepPrevious > 0 {
		k.Until = before.WindowStart().Add(after.KeepPrevious).UTC()
	}
	var o *Observation
	if obs := pl.in.Observed[name]; obs != nil {
		o = obs.Kept
	}
	if o != nil && !o.Alive {
		k.Gone, k.Detail = true, o.Detail
		return k
	}
	if len(dep.GPUs) > 0 {
		k.MemoryBytes, k.MemorySource = pl.holds(o, dep.ClaimBytes, name, dep.GPUs[0])
		if k.MemorySource == "estimated" && after == nil {
			k.MemoryBytes, k.MemorySource = 0, "" // nothing configured to estimate from
		}
	}
	return k
}

// holds is the GPU memory a running instance holds on its GPU g, and how
// that is known: measured when the GPU snapshot lists its processes (o's),
// else what it claimed at its start, else server name's configured share.
func (pl *planner) holds(o *Observation, claimed uint64, name string, g int) (uint64, string) {
	if m := pl.measured(o); m > 0 {
		return m, "measured"
	}
	if claimed > 0 {
		return claimed, "claimed at its start"
	}
	if pl.in.Config != nil && pl.in.Config.Servers[name] != nil && pl.in.Snapshot != nil {
		return pl.claimBytes(name, g), "estimated"
	}
	return 0, ""
}

// measured is the most GPU memory the observed processes hold on one GPU;
// 0 when the GPU snapshot lists none of them.
func (pl *planner) measured(o *Observation) uint64 {
	if o == nil || pl.in.Snapshot == nil {
		return 0
	}
	pids := map[int]bool{}
	for _, p := range o.GPUPids {
		pids[p] = true
	}
	var most uint64
	for _, g := range pl.in.Snapshot.GPUs {
		var sum uint64
		for _, p := range g.Processes {
			if pids[p.PID] {
				sum += p.UsedMemoryBytes
			}
		}
		most = max(most, sum)
	}
	return most
}

// keptStops says, once the actions are final, what apply does with each
// kept instance.
func (pl *planner) keptStops() {
	for _, c := range pl.p.Changes {
		k := c.Kept
		if k == nil || k.Gone {
			continue
		}
		switch {
		case c.Action == Delete:
			k.Stop = "the server is destroyed"
		case c.Action == DeleteThenCreate:
			k.Stop = "stopped with the server"
		case c.Action == Create || c.Action == CreateThenDelete:
			k.Stop = "a new rollout replaces it"
		case c.After == nil || c.After.KeepPrevious <= 0:
			k.Stop = "window ended: keep_previous is no longer set"
		case c.Before != nil && KeptExpired(c.Before, c.After, pl.in.Now):
			k.Stop = "window ended"
		}
	}
}

// renderKept lists the previous instances that stay kept for rollback,
// with what they hold; the ones this plan stops are shown in their change.
func renderKept(w io.Writer, j *JSONPlan, c Colorizer) {
	made, _ := time.Parse("2006-01-02T15:04:05Z", j.CreatedAt)
	var lines []string
	for _, ch := range j.ResourceChanges {
		k := ch.KeptInstance
		if k == nil || k.Stop != "" {
			continue
		}
		lines = append(lines, fmt.Sprintf("  %s: %s", ch.Address, keptText(k, made)))
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprint(w, c("\n[bold]Kept for rollback[reset] (lifecycle keep_previous; roofline rollback switches back to them):\n"))
	fmt.Fprintln(w, strings.Join(lines, "\n"))
}

// keptText is one kept instance: pid, engine, window, memory; for one
// this plan stops, why.
func keptText(k *KeptInstance, made time.Time) string {
	s := fmt.Sprintf("pid %d (%s %s)", k.PID, k.Engine.Kind, k.Engine.Version)
	if k.Gone {
		return s + ", gone (" + k.Detail + "): apply forgets it"
	}
	mem := ""
	if k.MemoryBytes > 0 {
		mem = fmt.Sprintf("%.1f GiB on GPU %s", float64(k.MemoryBytes)/gib, gpuText(k.GPUs))
	}
	if k.Stop != "" {
		if mem != "" {
			s += ", " + mem
		}
		why := k.Stop
		if why == "window ended" && !k.Until.IsZero() {
			why += " " + k.Until.UTC().Format(time.RFC3339)
		}
		return s + " (" + why + "): apply stops it"
	}
	if !k.Until.IsZero() {
		s += ", kept until " + k.Until.UTC().Format(time.RFC3339)
		if left := k.Until.Sub(made); left > 0 && !made.IsZero() {
			s += fmt.Sprintf(" (%s left)", left.Round(time.Second))
		}
	}
	if mem != "" {
		s += ", holds " + mem + " (" + k.MemorySource + ")"
	}
	return s
}

func gpuText(gpus []int) string {
	parts := make([]string, len(gpus))
	for i, g := range gpus {
		parts[i] = fmt.Sprint(g)
	}
	return strings.Join(parts, ", ")
}
