// Package config turns a directory of roofline HCL files into typed, validated
// configuration. Every value keeps the source range it came from, so later
// checks (flags, VRAM, ports) can point at the line that causes them.
package config

import (
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
)

// Config is one loaded configuration directory.
type Config struct {
	// Dir is the directory the files were read from (absolute).
	Dir string
	// Files maps file name to its bytes; the diagnostic writer needs them for snippets.
	Files map[string]*hcl.File

	Roofline  *Roofline
	Variables map[string]*Variable
	Engines   map[string]*Engine
	Models    map[string]*Model
	Servers   map[string]*Server
	Clusters  map[string]*Cluster // cluster.go
	Outputs   map[string]*Output  // output.go
	Moved     []*Moved            // moved.go, in file order
	Imports   []*Import           // import.go, in file order

	// secrets are the plain values of attributes and keys whose names say
	// secret, and of sensitive paths (see Secrets).
	secrets []string
}

// Roofline is the top-level settings block.
type Roofline struct {
	// RequiredVersion is the required_version constraint (checked at load).
	RequiredVersion string
	// StateDir holds the state file, lock, logs, probe cache and journal.
	// Relative paths are relative to Config.Dir. Default ".roofline".
	StateDir string
	// Inventory, when set, is a GPU snapshot file (roofline gpu -json) used
	// instead of NVML: for rehearsals and code review on machines with no GPU.
	// Relative to Config.Dir. The -inventory flag overrides it.
	Inventory string
	// BackendPorts is the range [lo, hi] the engines behind roofline's
	// proxies listen in, on 127.0.0.1; zero means DefaultBackendPorts.
	BackendPorts [2]int

	DeclRange hcl.Range       `json:"-"`
	Ranges    Ranges          `json:"-"`
	Sensitive Sensitive       `json:"-"`
	Unknown   map[string]bool `json:"-"`
}

// Engine is an inference engine install: a local command, a docker image or
// the built-in rehearsal engine.
type Engine struct {
	// Name is the instance name, as in addresses: "vllm", or `vllm["a"]` /
	// "vllm[0]" for an instance of a block with for_each / count.
	Name    string
	Block   string // the block's label
	Key     string // `["a"]`, "[0]", or "" for a block without repetition
	Kind    string // one of kinds.Names()
	Version string // pinned version; plan fails if the installed one differs

	// Exactly one of Command, Image, Rehearsal is set.
	// Command: vLLM: the vllm executable ("vllm" or "/opt/vllm/bin/vllm").
	// SGLang: the interpreter and module ["/opt/sglang/bin/python", "-m", "sglang.launch_server"].
	Command   []string
	Image     string // repo@sha256:<64 hex>
	Rehearsal bool   // run roofline's rehearsal engine emulating Kind at Version

	// PinnedIdentity identifies an install whose executable does not: the
	// CLI sets it, with Command, for the rehearsal engine (roofline itself,
	// whose binary changes with every build). Plan and engine use it instead
	// of hashing the executable and its packages.
	PinnedIdentity string `json:"-"`

	Env map[string]string

	DeclRange hcl.Range `json:"-"`
	Ranges    Ranges    `json:"-"`
	// Sensitive: the attributes whose values derive from a sensitive
	// variable. Unknown: attributes whose values are not known (validate
	// without inputs); they are absent from Ranges.
	Sensitive Sensitive       `json:"-"`
	Unknown   map[string]bool `json:"-"`
}

// Addr is the engine's address as written in references: "engine.NAME".
func (e *Engine) Addr() string {
	if strings.HasPrefix(e.Name, "module.") {
		return e.Name
	}
	return "engine." + e.Name
}

// Model is a local model folder (safetensors).
type Model struct {
	Name       string // instance name, as Engine.Name
	Block      string
	Key        string
	Path       string // absolute after loading
	ServedName string // default: the block name
	Checksums  string // optional sha256sum-format file, absolute after loading

	DeclRange hcl.Range       `json:"-"`
	Ranges    Ranges          `json:"-"`
	Sensitive Sensitive       `json:"-"`
	Unknown   map[string]bool `json:"-"`
}

// Addr is "model.NAME".
func (m *Model) Addr() string {
	if strings.HasPrefix(m.Name, "module.") {
		return m.Name
	}
	return "model." + m.Name
}

// Server is one engine process serving one model on some GPUs.
type Server struct {
	// Name is the instance name, as in addresses: "qwen3", or `web["a"]` /
	// "web[0]" for an instance of a block with for_each / count. Addr is
	// "server." + Name everywhere: plan, state, -target, logs, status.
	Name   string
	Block  string // the block's label: "web"
	Key    string // `["a"]`, "[0]", or "" for a block without repetition
	Engine string // engine instance name
	Model  string // model instance name

	GPUs []int
	Port int

	// On a Kubernetes cluster (cluster.go): the cluster block's name, the
	// nodes one replica spans (an LWS group when above 1) and the replicas.
	Cluster  string
	Nodes    int
	Replicas int

	Host string // optional; rendered as --host when set

	TensorParallel   int // default 1
	PipelineParallel int // default 1

	// Zero values mean "unset: the engine's default".
	MaxModelLen int
	// MaxModelLenAuto is max_model_len = "auto": the engine picks the longest
	// context its KV cache holds (vLLM 0.12 and later, PR 29431).
	MaxModelLenAuto      bool
	GPUMemoryUtilization float64
	Concurrency          int // full-context requests the KV budget must hold (a check, not a flag)

	ToolCallParser  string
	ReasoningParser string
	ChatTemplate    string

	Quantization string
	KVCacheDtype string

	MaxNumSeqs          int
	MaxNumBatchedTokens int
	ChunkedPrefillSize  int
	EnforceEager        bool
	EnablePrefixCaching *bool // nil: engine default

	SpeculativeConfig string // JSON, passed as --speculative-config (vLLM) / mapped for SGLang

	ExtraArgs []string
	Env       map[string]string
	// EnvFromFile and EnvFromHost are host secrets: resolved only on the
	// host, when apply starts the engine (KEY → absolute file path, whose
	// content without the trailing newline is the value; KEY taken from
	// roofline's own environment). Plans record where, never what.
	EnvFromFile map[string]string
	EnvFromHost []string

	// APIKey is the key clients must send (Authorization: Bearer KEY),
	// usually from a sensitive variable; APIKeyFile a host file that holds
	// it, read at apply time (absolute after loading). At most one is set.
	// vLLM gets the key in VLLM_API_KEY, SGLang through roofline's proxy,
	// which enforces it; never on a command line.
	APIKey     string `json:"-"`
	APIKeyFile string

	Gate      *Gate // never nil after loading (defaults applied)
	Lifecycle Lifecycle
	// Proxy is the server's proxy block: the limits of roofline's proxy in
	// front of it; nil when it has none (the proxy's defaults).
	Proxy *ProxyLimits

	DeclRange hcl.Range       `json:"-"`
	Ranges    Ranges          `json:"-"`
	Sensitive Sensitive       `json:"-"`
	Unknown   map[string]bool `json:"-"`
}

// Addr is "server.NAME".
func (s *Server) Addr() string {
	if strings.HasPrefix(s.Name, "module.") {
		return s.Name // module.m.server.NAME
	}
	return "server." + s.Name
}

// SmokesReasoning: the smoke gate checks that the reasoning comes back
// apart from the answer when the server has a reasoning parser (apply's
// gate and roofline smoke SERVER alike).
func (s *Server) SmokesReasoning() bool { return s.ReasoningParser != "" }

// Gate says what a server must pass before it is promoted.
type Gate struct {
	HealthTimeout time.Duration // default 15m
	SmokeToolcall bool
	Bench         *Bench // nil: no benchmark gate

	DeclRange hcl.Range `json:"-"`
	Ranges    Ranges    `json:"-"`
}

// DefaultHealthTimeout is the seed's SERVE_TIMEOUT (900 s).
const DefaultHealthTimeout = 15 * time.Minute

// Bench is a benchmark gate: a load and the thresholds it must meet.
// Zero thresholds are not checked.
type Bench struct {
	Concurrency  int     // closed loop; default 1 when RequestRate is 0
	RequestRate  float64 // open loop (Poisson), requests/s; 0 = closed loop
	Requests     int     // default 100
	InputTokens  int     // default 1024
	OutputTokens int     // default 128

	MinOutputTokensPerSecond float64
	MinRequestsPerSecond     float64
	MaxTTFTP99               time.Duration
	MaxTPOTP99               time.Duration
	MaxITLP99                time.Duration
	MaxFailedRequests        int // default 0: any failed request fails the gate

	DeclRange hcl.Range `json:"-"`
	Ranges    Ranges    `json:"-"`
}

// ProxyLimits are a server's proxy block: what clients can cost roofline's
// proxy. Zero fields are the proxy's defaults.
type ProxyLimits struct {
	MaxBody        int64 // bytes; default 64 MiB
	MaxBuffered    int64 // bytes held at once, all requests; default 256 MiB
	MaxConnections int   // default 4096
	HeaderTimeout  time.Duration
	BodyTimeout    time.Duration
	IdleTimeout    time.Duration

	DeclRange hcl.Range `json:"-"`
	Ranges    Ranges    `json:"-"`
}

// Lifecycle mirrors Terraform's lifecycle block.
type Lifecycle struct {
	CreateBeforeDestroy bool
	// DrainTimeout bounds how long a rollout waits, after the switch, for
	// the old instance's requests to finish; then the old instance stops and
	// what is still streaming is cut (and counted). Default 2m.
	DrainTimeout time.Duration
	// KeepPrevious keeps the previous instance, drained and idle, for this
	// long after a rollout, so that roofline rollback switches back without
	// a reload. 0: the previous instance stops after the drain.
	KeepPrevious time.Duration
	// PreventDestroy makes any plan that would destroy or replace the
	// server an error (lifecycle.go).
	PreventDestroy bool
	// IgnoreChanges names what plan does not replace the server for
	// (attribute names, model_files, engine_install); IgnoreAll is "all".
	IgnoreChanges []string
	IgnoreAll     bool
	// ReplaceTriggeredBy: servers and files whose change replaces this one.
	ReplaceTriggeredBy []Trigger `json:"-"`
	DeclRange          hcl.Range `json:"-"`
	Ranges             Ranges    `json:"-"`
}

// DefaultBackendPorts is the roofline block's backend_ports when it is not
// set: below the kernel's default ephemeral range (32768-60999), so an
// outgoing connection cannot take a backend port before its engine binds it.
var DefaultBackendPorts = [2]int{20000, 29999}

// BackendPortRange is the configured backend port range, or the default.
func (c *Config) BackendPortRange() [2]int {
	if c != nil && c.Roofline != nil && c.Roofline.BackendPorts[0] != 0 {
		return c.Roofline.BackendPorts
	}
	return DefaultBackendPorts
}

// DefaultDrainTimeout is lifecycle's drain_timeout when it is not set.
const DefaultDrainTimeout = 2 * time.Minute

// Ranges maps an attribute name to the range of its value expression, so a
// check about that attribute can point at it.
type Ranges map[string]hcl.Range

// Get returns the range of attribute name, or fallback when it was not set.
func (r Ranges) Get(name string, fallback hcl.Range) hcl.Range {
	if rng, ok := r[name]; ok {
		return rng
	}
	return fallback
}

// Has reports whether the attribute was written in the file.
func (r Ranges) Has(name string) bool { _, ok := r[name]; return ok }

// Range returns the range of a server attribute, falling back to the block.
func (s *Server) Range(attr string) hcl.Range { return s.Ranges.Get(attr, s.DeclRange) }

// Range returns the range of an engine attribute, falling back to the block.
func (e *Engine) Range(attr string) hcl.Range { return e.Ranges.Get(attr, e.DeclRange) }

// Range returns the range of a model attribute, falling back to the block.
func (m *Model) Range(attr string) hcl.Range { return m.Ranges.Get(attr, m.DeclRange) }

// ServerNames returns the server names sorted.
func (c *Config) ServerNames() []string { return sortedKeys(c.Servers) }

// EngineNames returns the engine names sorted.
func (c *Config) EngineNames() []string { return sortedKeys(c.Engines) }

// ModelNames returns the model names sorted.
func (c *Config) ModelNames() []string { return sortedKeys(c.Models) }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
