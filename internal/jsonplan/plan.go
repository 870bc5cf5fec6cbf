// Package jsonplan is the plan document: what plan -json ends with and
// show -json PLANFILE prints (docs/json.md). Its types are roofline's own,
// declared here with their JSON names; package plan converts its internal
// records into them (plan.Document), so a change to a state, plan, config,
// vram or journal struct changes this document only when someone changes
// the conversion, and then bumps FormatVersion. Nothing here may name a type
// of another roofline package (TestOwnTypes).
package jsonplan

// FormatVersion is the plan document's version. Readers accept the same
// major version and ignore fields they do not know.
//
// 2.0: the document has its own types (1.0 marshalled the internal
// records, so after.gate.bench had Go's field names: "MaxTTFTP99").
const FormatVersion = "2.0"

// Plan is the plan document.
type Plan struct {
	FormatVersion        string            `json:"format_version"`
	RooflineVersion      string            `json:"roofline_version"`
	CreatedAt            string            `json:"created_at"`
	Mode                 string            `json:"mode"` // normal, destroy, refresh-only
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
	ResourceChanges      []ResourceChange  `json:"resource_changes"`
	ResourceDrift        []Drift           `json:"resource_drift"`
	Diagnostics          []Diagnostic      `json:"diagnostics"`
	Applyable            bool              `json:"applyable"`
	Errored              bool              `json:"errored"`
	Summary              Summary           `json:"summary"`
}

// Summary counts the changes as Terraform does (a replacement adds one and
// destroys one).
type Summary struct {
	Add     int `json:"add"`
	Change  int `json:"change"`
	Destroy int `json:"destroy"`
}

// ResourceChange is one server's change.
type ResourceChange struct {
	Address string `json:"address"`
	// PreviousAddress is Terraform's field for a moved object.
	PreviousAddress string     `json:"previous_address,omitempty"`
	Importing       *Importing `json:"importing,omitempty"`
	Type            string     `json:"type"` // server
	Name            string     `json:"name"`
	// Actions is Terraform's list: ["create"], ["delete", "create"] (destroy
	// then create), ["create", "delete"] (create before destroy), ...
	Actions      []string       `json:"actions"`
	Reason       string         `json:"reason,omitempty"`
	ReplacePaths []string       `json:"replace_paths,omitempty"`
	Downtime     string         `json:"downtime,omitempty"`
	Before       *StateServer   `json:"before"`
	After        *PlannedServer `json:"after"`
	// BeforeSensitive and AfterSensitive mark the sensitive values of argv
	// and env (Terraform's masks); those values are salted hashes.
	BeforeSensitive *Sensitive      `json:"before_sensitive,omitempty"`
	AfterSensitive  *Sensitive      `json:"after_sensitive,omitempty"`
	VRAM            *VRAM           `json:"vram,omitempty"`
	Measured        *Footprint      `json:"measured,omitempty"`
	LastBench       *JournalEntry   `json:"last_bench,omitempty"`
	EnvChanges      []EnvChange     `json:"env_changes,omitempty"`
	ModelFiles      []string        `json:"model_files,omitempty"`
	DefaultChanges  []DefaultChange `json:"default_changes,omitempty"`
	KeptInstance    *KeptInstance   `json:"kept_instance,omitempty"`
}

// Sensitive mirrors argv and env with true where the value is sensitive.
type Sensitive struct {
	Argv []bool          `json:"argv,omitempty"`
	Env  map[string]bool `json:"env,omitempty"`
}
