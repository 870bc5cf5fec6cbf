// Package snapshot is the host snapshot: what a GPU host publishes so that
// plan can run in code review, on a machine without its GPUs, engines,
// model folders, processes or state. The host takes it with the same
// refresh plan uses (roofline snapshot -out=FILE); a review plan (plan
// -review -snapshot=FILE) turns it back into the planner's inputs and
// probes nothing on the runner. It holds no secret: the state is the
// redacted one, GPU processes keep their names but not their command
// lines, and engine probes hold flag lists, not environments.
package snapshot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/fsx"
	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/journal"
	"github.com/roofline/roofline/internal/model"
	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/rehearsal"
	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/version"
	"github.com/roofline/roofline/internal/vram"
)

// FormatVersion is the version of the snapshot file. Readers accept the
// same major version.
const FormatVersion = "1.0"

// File is a host snapshot.
type File struct {
	FormatVersion   string    `json:"format_version"`
	RooflineVersion string    `json:"roofline_version"`
	CreatedAt       time.Time `json:"created_at"`
	// Host is the host's name; ConfigDir the configuration's directory
	// there (relative paths of the configuration resolve against it).
	Host      string `json:"host"`
	ConfigDir string `json:"config_dir"`
	// Self is the roofline executable the host runs rehearsal engines and
	// proxies from (the command prefix of their argv).
	Self string `json:"self,omitempty"`
	// State is the host's state, secrets redacted as in state.json.
	State *state.File `json:"state"`
	// Servers is what the host saw of each server of the state.
	Servers map[string]*Server `json:"servers"`
	// GPUs is the host's GPU inventory (process command lines removed);
	// GPUProcesses attributes each process to the server that owns it.
	GPUs         *gpu.Snapshot `json:"gpus,omitempty"`
	GPUError     string        `json:"gpu_error,omitempty"`
	GPUProcesses []GPUProcess  `json:"gpu_processes"`
	// Engines and Models are keyed by their block names.
	Engines map[string]*Engine `json:"engines"`
	Models  map[string]*Model  `json:"models"`
	// Ports are the configured ports held on the host, "HOST:PORT" → who.
	Ports map[string]string `json:"ports,omitempty"`
	// LastBench is each server's newest journal entry with bench figures.
	LastBench map[string]*journal.Entry `json:"last_bench,omitempty"`
	// Calibrations are the engines' measured start-up figures of the state
	// directory: a review plan predicts memory as the host's plan would
	// (measured / estimated / uncalibrated).
	Calibrations *state.Calibrations `json:"calibrations,omitempty"`
}

// Server is the liveness and health of one server of the state.
type Server struct {
	Alive   bool   `json:"alive"`
	Healthy *bool  `json:"healthy,omitempty"`
	Detail  string `json:"detail,omitempty"`
	GPUPids []int  `json:"gpu_pids,omitempty"`
	// ProxyGone: the engine runs, its proxy does not (the host's plan
	// starts a new proxy); ProxyPort is the backend port the proxy's
	// target file names (which instance of an interrupted rollout serves).
	ProxyGone bool `json:"proxy_gone,omitempty"`
	ProxyPort int  `json:"proxy_port,omitempty"`
	// Kept is the previous instance kept for rollback (keep_previous).
	Kept *Server `json:"kept,omitempty"`
}

// GPUProcess is one process on a GPU and the server it belongs to ("" for
// a foreign process).
type GPUProcess struct {
	GPU             int    `json:"gpu"`
	PID             int    `json:"pid"`
	Name            string `json:"name"`
	UsedMemoryBytes uint64 `json:"used_memory_bytes"`
	Server          string `json:"server,omitempty"`
}

// Engine is one engine block's probe on the host: identity (executable or
// image digest), version and the full flag list.
type Engine struct {
	Installed *engine.Installed `json:"installed,omitempty"`
	Error     string            `json:"error,omitempty"`
}

// Model is what plan needs of one model folder.
type Model struct {
	Fingerprint string            `json:"fingerprint,omitempty"`
	Files       map[string]string `json:"files,omitempty"`
	// Spec is the model as the memory model sizes it (layers, weights per
	// sharding), far smaller than the tensor list it comes from.
	Spec     *vram.ModelSpec `json:"spec,omitempty"`
	SpecErr  string          `json:"spec_error,omitempty"`
	Problems []model.Problem `json:"problems,omitempty"`
	Error    string          `json:"error,omitempty"`
}

// Take builds a snapshot from a host refresh (plan.Refresher.Refresh) and
// the port holders the host checker reports for each configured server.
func Take(in *plan.Inputs, ports plan.PortChecker, host string, now time.Time) *File {
	f := &File{
		FormatVersion: FormatVersion, RooflineVersion: version.Version, CreatedAt: now.UTC(),
		Host: host, State: in.Prior,
		Servers: map[string]*Server{}, Engines: map[string]*Engine{}, Models: map[string]*Model{},
		GPUProcesses: []GPUProcess{}, LastBench: in.LastBench, Calibrations: in.Calibrations,
	}
	if f.State == nil {
		f.State = state.NewFile()
	}
	if in.Config != nil {
		f.ConfigDir = in.Config.Dir
	}
	owner := map[int]string{}
	for name, o := range in.Observed {
		if o == nil {
			continue
		}
		f.Servers[name] = &Server{Alive: o.Alive, Healthy: o.Healthy, Detail: o.Detail, GPUPids: o.GPUPids, ProxyGone: o.ProxyGone, ProxyPort: o.ProxyPort}
		for _, pid := range o.GPUPids {
			owner[pid] = name
		}
		if k := o.Kept; k != nil {
			f.Servers[name].Kept = &Server{Alive: k.Alive, Detail: k.Detail, GPUPids: k.GPUPids}
			for _, pid := range k.GPUPids {
				owner[pid] = name
			}
		}
	}
	if in.SnapshotErr != nil {
		f.GPUError = in.SnapshotErr.Error()
	}
	if in.Snapshot != nil {
		snap := *in.Snapshot
		snap.GPUs = make([]gpu.GPU, len(in.Snapshot.GPUs))
		for i, g := range in.Snapshot.GPUs {
			g.Processes = append([]gpu.Process(nil), g.Processes...)
			for j := range g.Processes {
				p := &g.Processes[j]
				p.Cmdline = nil // may hold secrets (an --api-key)
				f.GPUProcesses = append(f.GPUProcesses, GPUProcess{GPU: g.Index, PID: p.PID, Name: p.Name,
					UsedMemoryBytes: p.UsedMemoryBytes, Server: owner[p.PID]})
			}
			snap.GPUs[i] = g
		}
		f.GPUs = &snap
	}
	for name, r := range in.Engines {
		e := &Engine{Installed: r.Installed}
		if r.Err != nil {
			e.Error = r.Err.Error()
		}
		f.Engines[name] = e
	}
	for name, r := range in.Models {
		m := &Model{Fingerprint: r.Fingerprint, Files: r.Files}
		if r.Err != nil {
			m.Error = r.Err.Error()
		}
		if r.Info != nil {
			m.Problems = r.Info.Problems
			if spec, err := plan.ModelSpec(r); err == nil {
				m.Spec = &spec
			} else {
				m.SpecErr = err.Error()
			}
		}
		f.Models[name] = m
	}
	if in.Config != nil && ports != nil {
		for _, s := range in.Config.Servers {
			if held, who := ports.Holder(s.Host, s.Port); held {
				if f.Ports == nil {
					f.Ports = map[string]string{}
				}
				f.Ports[portKey(s.Host, s.Port)] = who
			}
		}
	}
	return f
}

func portKey(host string, port int) string { return host + ":" + strconv.Itoa(port) }

// Inputs turns the snapshot into the planner's inputs for cfg (loaded as
// if in ConfigDir). Nothing on this machine is looked at.
func (f *File) Inputs(cfg *config.Config) *plan.Inputs {
	in := &plan.Inputs{
		Config: cfg, Prior: f.State, Snapshot: f.GPUs,
		Engines: map[string]plan.EngineResult{}, Models: map[string]plan.ModelResult{},
		Observed: map[string]*plan.Observation{}, LastBench: f.LastBench, Calibrations: f.Calibrations,
		Ports: ports(f.Ports),
	}
	if f.GPUs == nil {
		msg := f.GPUError
		if msg == "" {
			msg = "the snapshot has no GPU inventory"
		}
		in.SnapshotErr = fmt.Errorf("host snapshot of %s: %s", f.Host, msg)
	}
	for name, s := range f.Servers {
		in.Observed[name] = &plan.Observation{Alive: s.Alive, Healthy: s.Healthy, Detail: s.Detail, GPUPids: s.GPUPids, ProxyGone: s.ProxyGone, ProxyPort: s.ProxyPort}
		if k := s.Kept; k != nil {
			in.Observed[name].Kept = &plan.Observation{Alive: k.Alive, Detail: k.Detail, GPUPids: k.GPUPids}
		}
	}
	if cfg == nil {
		return in
	}
	for name := range cfg.Engines {
		se := f.Engines[name]
		switch {
		case se == nil:
			in.Engines[name] = plan.EngineResult{Err: fmt.Errorf("engine %q is not in the host snapshot of %s (taken %s): take a new snapshot on the host", name, f.Host, f.CreatedAt.Format(time.RFC3339))}
		case se.Error != "":
			in.Engines[name] = plan.EngineResult{Err: fmt.Errorf("on %s: %s", f.Host, se.Error)}
		default:
			in.Engines[name] = plan.EngineResult{Installed: se.Installed}
		}
	}
	for name := range cfg.Models {
		sm := f.Models[name]
		switch {
		case sm == nil:
			in.Models[name] = plan.ModelResult{Err: fmt.Errorf("model %q is not in the host snapshot of %s: take a new snapshot on the host", name, f.Host)}
		case sm.Error != "":
			in.Models[name] = plan.ModelResult{Err: fmt.Errorf("on %s: %s", f.Host, sm.Error)}
		default:
			in.Models[name] = plan.ModelResult{Fingerprint: sm.Fingerprint, Files: sm.Files, Spec: sm.Spec, Problems: sm.Problems}
		}
	}
	return in
}

// ports answers from the host's recorded port holders.
type ports map[string]string

func (p ports) Holder(host string, port int) (bool, string) {
	who, ok := p[portKey(host, port)]
	return ok, who
}

// Age is how old the snapshot is at now.
func (f *File) Age(now time.Time) time.Duration { return now.Sub(f.CreatedAt) }

// Write writes the snapshot as indented JSON.
func (f *File) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(f)
}

// Save writes the snapshot to path, replacing it atomically; it is no
// secret (0644: CI and reviewers read it).
func (f *File) Save(path string) error {
	var buf bytes.Buffer
	if err := f.Write(&buf); err != nil {
		return err
	}
	if err := fsx.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing the snapshot: %w", err)
	}
	return nil
}

// maxSize bounds what Read accepts; a snapshot is a few hundred KiB.
const maxSize = 64 << 20

// Read reads a snapshot file and checks its version.
func Read(path string) (*File, error) {
	// A regular file only: a FIFO would block the open, a device be read
	// as garbage.
	fh, _, err := fsx.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	var f File
	dec := json.NewDecoder(io.LimitReader(fh, maxSize))
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s is not a roofline host snapshot: %v", path, err)
	}
	if major(f.FormatVersion) != major(FormatVersion) {
		return nil, fmt.Errorf("%s has snapshot format %q; this roofline reads %s.x: take the snapshot with the same roofline version", path, f.FormatVersion, major(FormatVersion))
	}
	if f.State == nil {
		f.State = state.NewFile()
	}
	if f.State.Servers == nil {
		f.State.Servers = map[string]*state.Server{}
	}
	return &f, nil
}

func major(v string) string {
	for i, c := range v {
		if c == '.' {
			return v[:i]
		}
	}
	return v
}

// ServerNames are the snapshot's state's servers, sorted.
func (f *File) ServerNames() []string {
	var out []string
	for n := range f.State.Servers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// AgeWarning warns when the snapshot was taken longer than maxAge before
// now (the host may have changed since); nil when it is recent enough or
// maxAge is 0.
func (f *File) AgeWarning(now time.Time, maxAge time.Duration) *hcl.Diagnostic {
	age := f.Age(now)
	if maxAge <= 0 || age <= maxAge {
		return nil
	}
	return &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Old host snapshot",
		Detail: fmt.Sprintf("The snapshot of %s was taken %s ago (%s), longer than -snapshot-max-age=%s: the host may have changed since. Run roofline snapshot on the host again.",
			f.Host, age.Round(time.Minute), f.CreatedAt.Format(time.RFC3339), maxAge)}
}

// GPUCount is the number of GPUs the snapshot saw (0 without an inventory).
func (f *File) GPUCount() int {
	if f.GPUs == nil {
		return 0
	}
	return len(f.GPUs.GPUs)
}

// Unreadable counts the engines and models the host could not read (each
// recorded with its error; a plan from the snapshot reports them).
func (f *File) Unreadable() int {
	n := 0
	for _, e := range f.Engines {
		if e.Error != "" {
			n++
		}
	}
	for _, md := range f.Models {
		if md.Error != "" {
			n++
		}
	}
	return n
}

// ReviewPlan plans cfg (this checkout's configuration, read as the host's
// copy) against every fact of the snapshot, as the host would run it:
// rehearsal engines resolved to the host's roofline, the engine lock file
// checked, the snapshot's age warned about past maxAge (0: never). Nothing
// is probed, locked or written. The plan is a review plan: it cannot be
// applied. drivers chooses each server's driver, as on the host.
func (f *File) ReviewPlan(cfg *config.Config, drivers plan.DriverChooser, mode plan.Mode, targets, replaces []string, now time.Time, maxAge time.Duration) *plan.Plan {
	rehearsal.ResolveAll(cfg, f.Self)
	in := f.Inputs(cfg)
	in.Drivers = drivers
	rehearsal.UseInventory(in.Config, in.Snapshot)
	in.Mode, in.Targets, in.Replace = mode, targets, replaces
	in.Review = true
	in.Now = now
	in.LockFile = config.LockFileName
	p := plan.Make(in)
	p.Review = true
	p.SnapshotHost, p.SnapshotCreatedAt = f.Host, f.CreatedAt
	if d := f.AgeWarning(now, maxAge); d != nil {
		p.Diagnostics = append(p.Diagnostics, d)
	}
	return p
}
