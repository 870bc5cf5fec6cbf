// Package plan compares the configuration, rendered through the engine layer,
// with the state and with what refresh observed, runs every check that can be
// made before launch, and produces a Plan: the changes apply will make and
// the diagnostics that decide whether it may.
package plan

import (
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/journal"
	"github.com/roofline/roofline/internal/secret"
	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/vram"
)

// FormatVersion is the version of the plan file (Save, Load). The plan
// document of plan -json and show -json has its own: jsonplan.FormatVersion.
const FormatVersion = "1.0"

// Action is what apply does to one server.
type Action rune

// Actions, with Terraform's symbols.
const (
	NoOp             Action = 0
	Create           Action = '+'
	Update           Action = '~'
	Delete           Action = '-'
	DeleteThenCreate Action = '∓' // shown as -/+
	CreateThenDelete Action = '±' // shown as +/-
)

// Symbol is the action's marker in the human plan.
func (a Action) Symbol() string {
	switch a {
	case Create:
		return "+"
	case Update:
		return "~"
	case Delete:
		return "-"
	case DeleteThenCreate:
		return "-/+"
	case CreateThenDelete:
		return "+/-"
	}
	return " "
}

// JSON returns Terraform's "actions" list for the action.
func (a Action) JSON() []string {
	switch a {
	case Create:
		return []string{"create"}
	case Update:
		return []string{"update"}
	case Delete:
		return []string{"delete"}
	case DeleteThenCreate:
		return []string{"delete", "create"}
	case CreateThenDelete:
		return []string{"create", "delete"}
	}
	return []string{"no-op"}
}

// ActionFromJSON inverts JSON.
func ActionFromJSON(s []string) Action {
	switch len(s) {
	case 1:
		switch s[0] {
		case "create":
			return Create
		case "update":
			return Update
		case "delete":
			return Delete
		}
	case 2:
		if s[0] == "delete" {
			return DeleteThenCreate
		}
		return CreateThenDelete
	}
	return NoOp
}

// IsReplace reports whether the action stops one process and starts another.
func (a Action) IsReplace() bool { return a == DeleteThenCreate || a == CreateThenDelete }

// Desired is what one server should be: the configuration rendered for the
// installed engine.
type Desired struct {
	Name   string          `json:"name"`
	Engine state.EngineRef `json:"engine"`
	Model  state.ModelRef  `json:"model"`
	Argv   []string        `json:"argv"`
	// CommandLen is how many leading words of Argv are the engine command.
	CommandLen int `json:"command_len"`
	// Env is what roofline sets on top of the driver's base environment.
	Env map[string]string `json:"env"`
	// Sensitive names the secret values of Argv and Env ("argv[I]",
	// "env.KEY"): plain in memory, hashed in every output (secrets.go).
	Sensitive []string `json:"sensitive,omitempty"`
	// EnvFrom are host secrets, KEY → "file:/path" or "env:NAME", read
	// only when apply starts the engine (ResolveHostEnv).
	EnvFrom map[string]string `json:"env_from,omitempty"`
	GPUs    []int             `json:"gpus"`
	Host    string            `json:"host"`
	Port    int               `json:"port"`
	Driver  string            `json:"driver"`
	Image   string            `json:"image,omitempty"`
	// ConfigHash covers everything whose change needs a restart; GateHash
	// the gate settings, which change in place.
	ConfigHash string           `json:"config_hash"`
	GateHash   string           `json:"gate_hash"`
	Gate       *GateSpec        `json:"gate"`
	Predicted  *state.Footprint `json:"predicted,omitempty"`
	// AutoMaxModelLen is, for max_model_len = "auto", the context plan
	// predicts the engine picks (apply compares it with /v1/models).
	AutoMaxModelLen int `json:"auto_max_model_len,omitempty"`
	// Calibration says how Predicted was made (measured, estimated,
	// uncalibrated) and keys the start's measurement, which apply records.
	Calibration *Calibration `json:"calibration,omitempty"`
	// Proxy: roofline's front proxy listens on Port and the engine on a
	// backend port chosen at apply, so that a replacement can overlap the
	// old instance (create_before_destroy).
	Proxy bool `json:"proxy,omitempty"`
	// Keyed: clients must send an API key. APIKey is the key from api_key,
	// in memory only (never in a plan file, the state or output); APIKeyFile
	// is api_key_file, read by apply.
	Keyed      bool   `json:"api_key,omitempty"`
	APIKey     string `json:"-"`
	APIKeyFile string `json:"api_key_file,omitempty"`
	// DrainTimeout bounds the wait for the old instance's requests after a
	// switch (lifecycle's drain_timeout); reaching it cuts them.
	DrainTimeout time.Duration `json:"drain_timeout,omitempty"`
	// KeepPrevious keeps the previous instance after a rollout (lifecycle's
	// keep_previous), for roofline rollback.
	KeepPrevious time.Duration `json:"keep_previous,omitempty"`
	// ProxyLimits are the limits of the server's proxy (its proxy block);
	// nil: the proxy's defaults. A change needs no restart: the running
	// proxy takes them (internal/proxy's limits file).
	ProxyLimits *state.ProxyLimits `json:"proxy_limits,omitempty"`
	// BackendPorts is the range the engine's backend port is taken from
	// (the roofline block's backend_ports); it listens on 127.0.0.1.
	BackendPorts [2]int `json:"backend_ports,omitzero"`
	// Sources says, per flag of Argv, where the configuration set it:
	// "main.hcl:61 max_model_len" (for reviewers; never hashed).
	Sources map[string]string `json:"sources,omitempty"`
	// ClaimBytes is the GPU memory the engine takes on each of its GPUs.
	ClaimBytes uint64 `json:"claim_bytes"`
}

// DefaultDrainTimeout is lifecycle's drain_timeout when none is set.
const DefaultDrainTimeout = config.DefaultDrainTimeout

// DefaultBackendPorts is the roofline block's backend_ports when none is set.
var DefaultBackendPorts = config.DefaultBackendPorts

// GateSpec is the gate configuration as apply needs it.
type GateSpec struct {
	HealthTimeout time.Duration `json:"health_timeout"`
	SmokeToolcall bool          `json:"smoke_toolcall"`
	Reasoning     bool          `json:"reasoning"`
	Bench         *config.Bench `json:"bench,omitempty"`
}

// Change is one server's planned change.
type Change struct {
	Addr string `json:"address"`
	Name string `json:"name"`
	// PreviousName is the server's name in the state when a moved block
	// renames it ("beta" for server.beta); apply re-keys it first.
	PreviousName string `json:"previous_name,omitempty"`
	// Import: the server is taken over from a running process (an import
	// block); Before is its new state record, which apply writes first.
	Import *ImportInfo `json:"import,omitempty"`
	Action Action      `json:"-"`
	// Reason says why, for people: "max_model_len changed", "process died".
	Reason string `json:"reason,omitempty"`
	// ReplacePaths lists the attributes whose change forces a replacement.
	ReplacePaths []string         `json:"replace_paths,omitempty"`
	Before       *state.Server    `json:"before,omitempty"`
	After        *Desired         `json:"after,omitempty"`
	Downtime     string           `json:"downtime,omitempty"`
	Fit          *vram.Result     `json:"fit,omitempty"`
	Measured     *state.Footprint `json:"measured,omitempty"`
	// LastBench is the running server's last benchmark, shown beside the
	// thresholds its replacement must meet.
	LastBench *journal.Entry `json:"last_bench,omitempty"`
	// EnvChanges are the environment variables that differ, per key.
	EnvChanges []EnvChange `json:"env_changes,omitempty"`
	// ModelFiles names the files of the model folder that changed
	// ("~ config.json", "+ extra.safetensors", "- old.bin").
	ModelFiles []string `json:"model_files,omitempty"`
	// Defaults are the effective settings that change with the engine
	// version although the configuration does not set them.
	Defaults []DefaultChange `json:"default_changes,omitempty"`
	// Kept is the previous instance the server keeps for rollback, with
	// the memory it holds and whether this plan stops it.
	Kept *KeptInstance `json:"kept_instance,omitempty"`
	// ProxyGone: an update that starts a new proxy in front of the
	// running engine (refresh found the proxy gone). Apply checks the proxy
	// itself, so a saved plan need not carry it; the agent's restart plan
	// reads it.
	ProxyGone bool `json:"-"`

	// masked is After as output shows it, computed once so that every
	// rendering of one plan shows the same hashes.
	masked *Desired
}

// MaskedAfter is After with its sensitive values hashed (Desired.Masked).
func (c *Change) MaskedAfter() *Desired {
	if c.After == nil {
		return nil
	}
	if c.masked == nil {
		c.masked = c.After.Masked(c.Before)
	}
	return c.masked
}

// EnvChange is one environment variable's change. Sensitive values (by
// name, or recorded redacted) are never carried: Before and After are
// then empty.
type EnvChange struct {
	Key       string `json:"key"`
	Action    string `json:"action"` // "create", "update" or "delete"
	Before    string `json:"before,omitempty"`
	After     string `json:"after,omitempty"`
	Sensitive bool   `json:"sensitive,omitempty"`
}

// Drift is something that changed outside roofline.
type Drift struct {
	Addr    string `json:"address"`
	Summary string `json:"summary"`
	Detail  string `json:"detail,omitempty"`
}

// Mode is the kind of plan.
type Mode string

// Plan modes.
const (
	ModeNormal      Mode = "normal"
	ModeDestroy     Mode = "destroy"
	ModeRefreshOnly Mode = "refresh-only"
)

// Plan is the result of planning.
type Plan struct {
	FormatVersion   string    `json:"format_version"`
	RooflineVersion string    `json:"roofline_version"`
	CreatedAt       time.Time `json:"created_at"`
	Mode            Mode      `json:"mode"`
	// Review is set when the plan stood in for what is not on this machine
	// (built-in flag lists, skipped model folders): it is for reading in code
	// review, never for apply.
	Review    bool   `json:"review,omitempty"`
	ConfigDir string `json:"config_dir"`
	// The state the plan was made from; apply refuses the plan once either
	// has changed.
	Lineage     string `json:"lineage"`
	PriorSerial uint64 `json:"prior_serial"`
	// Fingerprint of the GPU snapshot the checks used.
	InventoryFingerprint string `json:"inventory_fingerprint"`
	InventorySource      string `json:"inventory_source"`
	// SnapshotHost and SnapshotCreatedAt name the host snapshot a review
	// plan was made from (roofline snapshot), "" and zero otherwise.
	SnapshotHost      string    `json:"snapshot_host,omitempty"`
	SnapshotCreatedAt time.Time `json:"snapshot_created_at,omitempty"`
	// Installs and Models identify each engine install (lock identity and
	// flag list hash) and model folder the plan was made with: a saved plan
	// is stale once either changed.
	Installs map[string]string `json:"installs,omitempty"`
	Models   map[string]string `json:"models,omitempty"`

	Changes     []*Change            `json:"-"`
	Drift       []*Drift             `json:"drift,omitempty"`
	Diagnostics hcl.Diagnostics      `json:"-"`
	Targets     []string             `json:"targets,omitempty"`
	Files       map[string]*hcl.File `json:"-"`
	// Snapshot is the GPU snapshot the plan was made with (not saved).
	Snapshot *gpu.Snapshot `json:"-"`
	// Secrets are the plain sensitive values of the configuration and of
	// the host secrets read; every rendering masks text against them.
	Secrets *secret.Set `json:"-"`
}

// HasErrors reports whether the plan may not be applied.
func (p *Plan) HasErrors() bool { return p.Diagnostics.HasErrors() }

// HasChanges reports whether applying would change anything.
func (p *Plan) HasChanges() bool {
	for _, c := range p.Changes {
		if c.Action != NoOp || c.PreviousName != "" || c.Import != nil {
			return true
		}
	}
	return false
}

// Counts are the plan's summary figures: servers added, changed and
// destroyed. A create-before-destroy rollout that keeps the previous
// instance for rollback (keep_previous) destroys nothing.
func (p *Plan) Counts() (add, change, destroy int) {
	return p.count(func(c *Change) bool { return KeepsPrevious(c.Action, c.Before, c.After) })
}

// AppliedCounts is Counts after an apply that left st: a rollout whose
// previous instance st now keeps destroyed nothing; one that could not
// keep it (its GPUs, an interrupted window) destroyed it.
func (p *Plan) AppliedCounts(st *state.File) (add, change, destroy int) {
	return p.count(func(c *Change) bool {
		if st == nil || c.Before == nil {
			return false
		}
		s := st.Server(c.Name)
		return s != nil && s.Deposed != nil && s.Deposed.Status == state.StatusKept && s.Deposed.PID == c.Before.PID
	})
}

func (p *Plan) count(kept func(*Change) bool) (add, change, destroy int) {
	for _, c := range p.Changes {
		switch c.Action {
		case Create:
			add++
		case Update:
			change++
		case Delete:
			destroy++
		case DeleteThenCreate:
			add++
			destroy++
		case CreateThenDelete:
			add++
			if !kept(c) {
				destroy++
			}
		}
	}
	return add, change, destroy
}

// KeepsPrevious says whether a replacement keeps the instance it replaces,
// drained and idle, for rollback: a create-before-destroy with
// keep_previous whose endpoint stays (an endpoint that moves takes its old
// proxy away with the old instance).
func KeepsPrevious(act Action, before *state.Server, after *Desired) bool {
	if act != CreateThenDelete || before == nil || after == nil || after.KeepPrevious <= 0 {
		return false
	}
	return !(before.Proxy != nil && after.Proxy && (before.Port != after.Port || before.Host != after.Host))
}

// Change returns the change of the named server, or nil.
func (p *Plan) Change(name string) *Change {
	for _, c := range p.Changes {
		if c.Name == name {
			return c
		}
	}
	return nil
}
