package state

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// CurrentFormat is the format_version this roofline reads and writes. Any
// change to the JSON shape, additive or not, bumps it: the reader rejects
// unknown fields, so an older roofline never silently drops what a newer one
// recorded.
//
// Format 2 gathers a server's identity (and its proxy's) into one
// "instance" object; Decode upgrades format 1 (see upgrade.go). Format 3
// adds a server's proxy_limits and an instance's claim_bytes; a format 2
// file reads as it is, since it holds neither.
const CurrentFormat = 3

// Server statuses.
const (
	StatusStarting = "starting" // started, not yet past its health gate
	StatusReady    = "ready"    // passed its gates
	StatusFailed   = "failed"   // failed a gate or exited; kept so plan can report it
	StatusStopping = "stopping" // a stop was requested and not confirmed
	// StatusKept marks a deposed instance kept after a rollout for
	// lifecycle's keep_previous: drained, idle, ready for roofline rollback.
	StatusKept = "kept"
)

// Drivers that run a server.
const (
	DriverProcess = "process"
	DriverDocker  = "docker"
)

var (
	knownStatus = map[string]bool{StatusStarting: true, StatusReady: true, StatusFailed: true, StatusStopping: true, StatusKept: true}
)

// File is one state: everything roofline started and still manages.
//
// Serial and Lineage are maintained by the Manager: Write assigns a lineage
// to a state that has none and bumps Serial when (and only when) the content
// changed, so callers never touch either. A File read from a missing state
// file has Serial 0 and an empty Lineage; a plan made from it records exactly
// that, and apply refuses it once any state has been written since.
type File struct {
	FormatVersion   int                `json:"format_version"`
	Serial          uint64             `json:"serial"`
	Lineage         string             `json:"lineage"`
	RooflineVersion string             `json:"roofline_version"`
	Servers         map[string]*Server `json:"servers"` // key: server name
}

// NewFile returns an empty state that has never been written.
func NewFile() *File {
	return &File{FormatVersion: CurrentFormat, Servers: map[string]*Server{}}
}

// Server is one engine process (or container) that roofline started.
type Server struct {
	Name   string    `json:"name"`
	Engine EngineRef `json:"engine"`
	Model  ModelRef  `json:"model"`

	// Argv is the rendered command line as roofline passed it, with secret
	// flag values redacted (RedactArgv). Env holds only the variables roofline
	// set on top of the driver's base environment, secrets redacted
	// (RedactEnv); compare with EnvEqual / ArgvEqual, not ==.
	Argv []string          `json:"argv"`
	Env  map[string]string `json:"env,omitempty"`
	// Sensitive lists the values that are secret beyond the name rule
	// (IsSecretName): "env.KEY" and "argv[I]" paths, from sensitive
	// variables and host secrets. They are stored hashed like the others.
	Sensitive []string `json:"sensitive,omitempty"`
	// APIKeyHash is the salted hash (internal/secret) of the API key the
	// engine was started with, so that plan sees a rotated key.
	APIKeyHash string `json:"api_key_hash,omitempty"`
	// CommandLen is how many leading words of Argv are the engine's command
	// (an install path, not a setting); plan's argv diff skips them.
	CommandLen int `json:"command_len,omitempty"`

	GPUs []int  `json:"gpus"`
	Host string `json:"host"` // address the engine binds
	Port int    `json:"port"`
	// Image is the engine image (repo@sha256:...) of a docker server.
	Image string `json:"image,omitempty"`

	// Instance is what runs: driver, id, process identity, launch id, log.
	Instance `json:"instance"`

	Status    string    `json:"status"`
	CreatedAt time.Time `json:"created_at,omitzero"`
	ReadyAt   time.Time `json:"ready_at,omitzero"`

	// ConfigHash is the planner's hash of the desired server this process was
	// started from; plan compares it to decide between no-op and replace.
	ConfigHash string `json:"config_hash"`
	// GateHash is the hash of the gate settings last applied; a change is an
	// in-place update.
	GateHash string `json:"gate_hash,omitempty"`

	// BackendPort is where the engine listens when a roofline proxy fronts
	// it on Port (servers with create_before_destroy); 0 without a proxy.
	BackendPort int `json:"backend_port,omitempty"`
	// Proxy is the front proxy process, when there is one. It outlives
	// replacements of the engine behind it.
	Proxy *Instance `json:"proxy,omitempty"`
	// Deposed is the previous instance while a create-before-destroy
	// replacement overlaps it (Terraform's deposed object): recorded so that
	// a killed apply never loses track of it.
	Deposed *Server `json:"deposed,omitempty"`

	Gate      *GateResult `json:"gate,omitempty"`
	Footprint *Footprint  `json:"footprint,omitempty"` // measured from the engine's start-up log
	Predicted *Footprint  `json:"predicted,omitempty"` // what plan's VRAM model predicted
	// ClaimBytes is the GPU memory plan predicted the engine claims on each
	// of its GPUs at this start: what a kept previous instance still holds.
	ClaimBytes uint64 `json:"claim_bytes,omitempty"`
	// ProxyLimits are the limits the server's proxy was given last (its
	// proxy block); nil: the proxy's defaults.
	ProxyLimits *ProxyLimits `json:"proxy_limits,omitempty"`
}

// WindowStart is when the rollback window (keep_previous) of s's kept
// instance began: the rollout's end, when the newer of s and its deposed
// instance became ready. Each keeps its own ready time through rollbacks
// (status's uptime), so a rollback moves neither the window nor the uptime.
func (s *Server) WindowStart() time.Time {
	if s.Deposed != nil && s.Deposed.ReadyAt.After(s.ReadyAt) {
		return s.Deposed.ReadyAt
	}
	return s.ReadyAt
}

// ProxyLimits bound what clients can cost roofline's proxy (the server's
// proxy block); a zero field is the proxy's default.
type ProxyLimits struct {
	MaxBody        int64         `json:"max_body,omitempty"`
	MaxBuffered    int64         `json:"max_buffered,omitempty"`
	MaxConnections int           `json:"max_connections,omitempty"`
	HeaderTimeout  time.Duration `json:"header_timeout,omitempty"`
	BodyTimeout    time.Duration `json:"body_timeout,omitempty"`
	IdleTimeout    time.Duration `json:"idle_timeout,omitempty"`
}

// Equal compares two limits; nil is the defaults, as an empty value.
func (l *ProxyLimits) Equal(o *ProxyLimits) bool {
	var a, b ProxyLimits
	if l != nil {
		a = *l
	}
	if o != nil {
		b = *o
	}
	return a == b
}

// Addr is the server's address in plans and commands: "server.NAME", or
// the name itself for a server of a module ("module.m.server.NAME").
func (s *Server) Addr() string { return ServerAddr(s.Name) }

// ServerAddr is the address of the server named name (see Addr).
func ServerAddr(name string) string {
	if strings.HasPrefix(name, "module.") {
		return name
	}
	return "server." + name
}

// ServerName is the inverse of ServerAddr: "server.x" and "x" name x, a
// module's address is its own name.
func ServerName(addr string) string {
	if strings.HasPrefix(addr, "module.") {
		return addr
	}
	return strings.TrimPrefix(addr, "server.")
}

// EngineRef identifies the engine install a server was started with.
type EngineRef struct {
	Name    string `json:"name"` // the engine block's name
	Kind    string `json:"kind"` // "vllm" | "sglang"
	Version string `json:"version"`
	// Identity is the engine layer's fingerprint of the install: a hash of
	// the executable's path, size and mtime, or an image digest. A change
	// means the install changed under the running server.
	Identity string `json:"identity"`
}

// ModelRef identifies the model folder a server serves.
type ModelRef struct {
	Name        string `json:"name"` // the model block's name
	Path        string `json:"path"`
	ServedName  string `json:"served_name"`
	Fingerprint string `json:"fingerprint"` // the model layer's cheap fingerprint of the folder
	// Files maps each file of the folder to "SIZE:DIGEST" (content, not
	// modification time), so a plan can name the files that changed.
	Files map[string]string `json:"files,omitempty"`
}

// GateResult is the outcome of a server's promotion gates. The per-gate
// summaries belong to the gate package; the state stores them verbatim.
type GateResult struct {
	Passed    bool            `json:"passed"`
	CheckedAt time.Time       `json:"checked_at,omitzero"`
	Health    json.RawMessage `json:"health,omitempty"`
	Smoke     json.RawMessage `json:"smoke,omitempty"`
	Bench     json.RawMessage `json:"bench,omitempty"`
	// Summary is one line per gate for apply's output ("health: ok, 6
	// checks"); not stored.
	Summary []string `json:"-"`
}

// Footprint is a server's memory use: measured from its log, or predicted.
type Footprint struct {
	WeightsGiB     float64 `json:"weights_gib"`
	KVCacheGiB     float64 `json:"kv_cache_gib"`
	KVTokens       int64   `json:"kv_tokens"`
	MaxConcurrency float64 `json:"max_concurrency"` // full-context requests the KV cache holds
}

// Names returns the server names in sorted order.
func (f *File) Names() []string {
	names := make([]string, 0, len(f.Servers))
	for n := range f.Servers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Server returns the named server, or nil.
func (f *File) Server(name string) *Server {
	if f == nil {
		return nil
	}
	return f.Servers[name]
}

// Set records s under its name, replacing any earlier record.
func (f *File) Set(s *Server) {
	if f.Servers == nil {
		f.Servers = map[string]*Server{}
	}
	f.Servers[s.Name] = s
}

// Remove forgets the named server and returns what was recorded (nil when
// there was nothing).
func (f *File) Remove(name string) *Server {
	s := f.Servers[name]
	delete(f.Servers, name)
	return s
}

// Clone returns a deep copy: a caller may change the copy without touching f.
func (f *File) Clone() *File {
	if f == nil {
		return nil
	}
	c := *f
	c.Servers = make(map[string]*Server, len(f.Servers))
	for k, s := range f.Servers {
		c.Servers[k] = s.Clone()
	}
	return &c
}

// Clone returns a deep copy of s.
func (s *Server) Clone() *Server {
	if s == nil {
		return nil
	}
	c := *s
	c.Argv = slices.Clone(s.Argv)
	c.Env = maps.Clone(s.Env)
	c.Sensitive = slices.Clone(s.Sensitive)
	c.GPUs = slices.Clone(s.GPUs)
	c.Instance = s.Instance.Clone()
	if s.Gate != nil {
		g := *s.Gate
		g.Health = slices.Clone(s.Gate.Health)
		g.Smoke = slices.Clone(s.Gate.Smoke)
		g.Bench = slices.Clone(s.Gate.Bench)
		c.Gate = &g
	}
	if s.Footprint != nil {
		fp := *s.Footprint
		c.Footprint = &fp
	}
	if s.Predicted != nil {
		fp := *s.Predicted
		c.Predicted = &fp
	}
	if s.Proxy != nil {
		p := s.Proxy.Clone()
		c.Proxy = &p
	}
	c.Deposed = s.Deposed.Clone()
	return &c
}

// Move records server from under the name to (a rename: moved block or
// state mv). It changes only the record; the caller moves the files. It
// fails when from is not recorded or to already is.
func (f *File) Move(from, to string) error {
	s := f.Server(from)
	switch {
	case s == nil:
		return fmt.Errorf("server.%s is not in the state", from)
	case f.Server(to) != nil:
		return fmt.Errorf("server.%s is already in the state", to)
	}
	delete(f.Servers, from)
	s.Name = to
	if s.Deposed != nil {
		s.Deposed.Name = to
	}
	f.Servers[to] = s
	return nil
}
