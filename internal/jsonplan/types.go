package jsonplan

import "time"

// StateServer is a server as the state records it: the before of a change (secret values as salted hashes).
type StateServer struct {
	Name        string            `json:"name"`
	Engine      EngineRef         `json:"engine"`
	Model       ModelRef          `json:"model"`
	Argv        []string          `json:"argv"`
	Env         map[string]string `json:"env,omitempty"`
	Sensitive   []string          `json:"sensitive,omitempty"`
	APIKeyHash  string            `json:"api_key_hash,omitempty"`
	CommandLen  int               `json:"command_len,omitempty"`
	GPUs        []int             `json:"gpus"`
	Host        string            `json:"host"`
	Port        int               `json:"port"`
	Image       string            `json:"image,omitempty"`
	Instance    Instance          `json:"instance"`
	Status      string            `json:"status"`
	CreatedAt   time.Time         `json:"created_at,omitzero"`
	ReadyAt     time.Time         `json:"ready_at,omitzero"`
	ConfigHash  string            `json:"config_hash"`
	GateHash    string            `json:"gate_hash,omitempty"`
	BackendPort int               `json:"backend_port,omitempty"`
	Proxy       *Instance         `json:"proxy,omitempty"`
	Deposed     *StateServer      `json:"deposed,omitempty"`
	Gate        *GateResult       `json:"gate,omitempty"`
	Footprint   *Footprint        `json:"footprint,omitempty"`
	Predicted   *Footprint        `json:"predicted,omitempty"`
	ClaimBytes  uint64            `json:"claim_bytes,omitempty"`
	ProxyLimits *ProxyLimits      `json:"proxy_limits,omitempty"`
}

// ProxyLimits are a server's proxy block: sizes in bytes, timeouts in
// nanoseconds; absent fields are the proxy's defaults.
type ProxyLimits struct {
	MaxBody        int64         `json:"max_body,omitempty"`
	MaxBuffered    int64         `json:"max_buffered,omitempty"`
	MaxConnections int           `json:"max_connections,omitempty"`
	HeaderTimeout  time.Duration `json:"header_timeout,omitempty"`
	BodyTimeout    time.Duration `json:"body_timeout,omitempty"`
	IdleTimeout    time.Duration `json:"idle_timeout,omitempty"`
}

// KeptInstance is the previous instance a server keeps for rollback
// (lifecycle keep_previous): its window, the GPU memory it holds, and
// whether the plan's apply stops it.
type KeptInstance struct {
	PID          int       `json:"pid"`
	Engine       EngineRef `json:"engine"`
	GPUs         []int     `json:"gpus"`
	Until        time.Time `json:"until,omitzero"`
	MemoryBytes  uint64    `json:"memory_bytes"`
	MemorySource string    `json:"memory_source"`
	Gone         bool      `json:"gone,omitempty"`
	Detail       string    `json:"detail,omitempty"`
	Stop         string    `json:"stop,omitempty"`
}

// Instance is what runs for a server: the driver, its id for it, and the process identity roofline checks before stopping anything.
type Instance struct {
	Driver    string   `json:"driver"`
	ID        string   `json:"id,omitempty"`
	Name      string   `json:"name,omitempty"`
	PID       int      `json:"pid,omitempty"`
	Group     int      `json:"group,omitempty"`
	StartTime uint64   `json:"start_time,omitempty"`
	BootID    string   `json:"boot_id,omitempty"`
	Cmdline   []string `json:"cmdline,omitempty"`
	LaunchID  string   `json:"launch_id,omitempty"`
	LogPath   string   `json:"log_path,omitempty"`
}

// EngineRef is the engine install a server runs or will run.
type EngineRef struct {
	Name     string `json:"name"`
	Kind     string `json:"kind"`
	Version  string `json:"version"`
	Identity string `json:"identity"`
}

// ModelRef is the model folder a server serves.
type ModelRef struct {
	Name        string            `json:"name"`
	Path        string            `json:"path"`
	ServedName  string            `json:"served_name"`
	Fingerprint string            `json:"fingerprint"`
	Files       map[string]string `json:"files,omitempty"`
}

// GateResult is the outcome of a server's gates as the state records it:
// the verdict and each gate's report (absent: the gate did not run).
type GateResult struct {
	Passed    bool          `json:"passed"`
	CheckedAt time.Time     `json:"checked_at,omitzero"`
	Health    *HealthReport `json:"health,omitempty"`
	Smoke     *SmokeReport  `json:"smoke,omitempty"`
	Bench     *BenchResult  `json:"bench,omitempty"`
}

// HealthReport is the health gate's report (roofline health -json): the
// engine's own version report and one check per step.
type HealthReport struct {
	Target  GateTarget  `json:"target"`
	OK      bool        `json:"ok"`
	Version string      `json:"version,omitempty"`
	Engine  string      `json:"engine,omitempty"`
	Checks  []GateCheck `json:"checks"`
}

// SmokeReport is the tool-call smoke test's report (roofline smoke -json),
// one check per step.
type SmokeReport struct {
	Target GateTarget  `json:"target"`
	OK     bool        `json:"ok"`
	Steps  []GateCheck `json:"steps"`
}

// GateTarget is the server a gate ran against (never its API key).
type GateTarget struct {
	BaseURL string `json:"base_url"`
	Model   string `json:"model"`
	Engine  string `json:"engine"`
}

// GateCheck is one step of a gate.
type GateCheck struct {
	Name      string  `json:"name"`
	OK        bool    `json:"ok"`
	Skipped   bool    `json:"skipped,omitempty"`
	Detail    string  `json:"detail"`
	ElapsedMS float64 `json:"elapsed_ms"`
}

// Footprint is a server's GPU memory: measured from its log, or predicted.
type Footprint struct {
	WeightsGiB     float64 `json:"weights_gib"`
	KVCacheGiB     float64 `json:"kv_cache_gib"`
	KVTokens       int64   `json:"kv_tokens"`
	MaxConcurrency float64 `json:"max_concurrency"`
}

// CalibrationKey is what a memory measurement is valid for: engine, GPU, model and the settings that size memory.
type CalibrationKey struct {
	Engine              string  `json:"engine"`
	EngineIdentity      string  `json:"engine_identity"`
	GPU                 string  `json:"gpu"`
	GPUMemoryBytes      uint64  `json:"gpu_memory_bytes"`
	ModelFingerprint    string  `json:"model_fingerprint"`
	TP                  int     `json:"tp"`
	PP                  int     `json:"pp"`
	DtypeBytes          int     `json:"dtype_bytes"`
	KVCacheDtype        string  `json:"kv_cache_dtype"`
	MaxModelLen         int     `json:"max_model_len"`
	MaxNumSeqs          int     `json:"max_num_seqs"`
	MaxNumBatchedTokens int     `json:"max_num_batched_tokens"`
	BlockSize           int     `json:"block_size"`
	Utilization         float64 `json:"utilization"`
	EnforceEager        bool    `json:"enforce_eager"`
}

// PlannedServer is a server as apply would start it: the after of a change (secret values as salted hashes).
type PlannedServer struct {
	Name            string            `json:"name"`
	Engine          EngineRef         `json:"engine"`
	Model           ModelRef          `json:"model"`
	Argv            []string          `json:"argv"`
	CommandLen      int               `json:"command_len"`
	Env             map[string]string `json:"env"`
	Sensitive       []string          `json:"sensitive,omitempty"`
	EnvFrom         map[string]string `json:"env_from,omitempty"`
	GPUs            []int             `json:"gpus"`
	Host            string            `json:"host"`
	Port            int               `json:"port"`
	Driver          string            `json:"driver"`
	Image           string            `json:"image,omitempty"`
	ConfigHash      string            `json:"config_hash"`
	GateHash        string            `json:"gate_hash"`
	Gate            *GateSpec         `json:"gate"`
	Predicted       *Footprint        `json:"predicted,omitempty"`
	AutoMaxModelLen int               `json:"auto_max_model_len,omitempty"`
	Calibration     *Calibration      `json:"calibration,omitempty"`
	Proxy           bool              `json:"proxy,omitempty"`
	Keyed           bool              `json:"api_key,omitempty"`
	APIKeyFile      string            `json:"api_key_file,omitempty"`
	DrainTimeout    time.Duration     `json:"drain_timeout,omitempty"`
	KeepPrevious    time.Duration     `json:"keep_previous,omitempty"`
	ProxyLimits     *ProxyLimits      `json:"proxy_limits,omitempty"`
	BackendPorts    [2]int            `json:"backend_ports,omitzero"`
	Sources         map[string]string `json:"sources,omitempty"`
	ClaimBytes      uint64            `json:"claim_bytes"`
}

// GateSpec is the gates a new instance must pass (durations in nanoseconds).
type GateSpec struct {
	HealthTimeout time.Duration `json:"health_timeout"`
	SmokeToolcall bool          `json:"smoke_toolcall"`
	Reasoning     bool          `json:"reasoning"`
	Bench         *BenchGate    `json:"bench,omitempty"`
}

// BenchGate is the bench gate: the load it runs and the thresholds it enforces, named as in HCL (durations in nanoseconds).
type BenchGate struct {
	Concurrency              int           `json:"concurrency"`
	RequestRate              float64       `json:"request_rate"`
	Requests                 int           `json:"requests"`
	InputTokens              int           `json:"input_tokens"`
	OutputTokens             int           `json:"output_tokens"`
	MinOutputTokensPerSecond float64       `json:"min_output_tokens_per_second"`
	MinRequestsPerSecond     float64       `json:"min_requests_per_second"`
	MaxTTFTP99               time.Duration `json:"max_ttft_p99"`
	MaxTPOTP99               time.Duration `json:"max_tpot_p99"`
	MaxITLP99                time.Duration `json:"max_itl_p99"`
	MaxFailedRequests        int           `json:"max_failed_requests"`
}

// Calibration is how a memory prediction was made (measured, estimated, uncalibrated).
type Calibration struct {
	Status            string         `json:"status"`
	Key               CalibrationKey `json:"key"`
	Arch              string         `json:"arch"`
	Residual          float64        `json:"residual,omitempty"`
	FromServer        string         `json:"from_server,omitempty"`
	FromTime          time.Time      `json:"from_time,omitzero"`
	RequestedBytes    int64          `json:"requested_bytes"`
	BareWeightsBytes  int64          `json:"bare_weights_bytes"`
	BareOverheadBytes int64          `json:"bare_overhead_bytes"`
	BareKVBudgetBytes int64          `json:"bare_kv_budget_bytes"`
	BareKVTokens      int64          `json:"bare_kv_tokens"`
	PickedMaxModelLen int            `json:"picked_max_model_len,omitempty"`
}

// Importing is a server taken over from a process that runs already (an import block).
type Importing struct {
	ID          string   `json:"id"`
	PID         int      `json:"pid"`
	Uptime      string   `json:"uptime,omitempty"`
	OwnGroup    bool     `json:"own_group"`
	Differences []string `json:"differences,omitempty"`
}

// EnvChange is one environment variable's change; a sensitive one carries no values.
type EnvChange struct {
	Key       string `json:"key"`
	Action    string `json:"action"`
	Before    string `json:"before,omitempty"`
	After     string `json:"after,omitempty"`
	Sensitive bool   `json:"sensitive,omitempty"`
}

// DefaultChange is an effective setting that the new engine version changes although the configuration does not set it.
type DefaultChange struct {
	Setting string `json:"setting"`
	Before  string `json:"before"`
	After   string `json:"after"`
	Source  string `json:"source"`
	Memory  string `json:"memory,omitempty"`
}

// Drift is something that changed outside roofline.
type Drift struct {
	Addr    string `json:"address"`
	Summary string `json:"summary"`
	Detail  string `json:"detail,omitempty"`
}

// VRAM is the memory model's verdict for a server, with the settings it used.
type VRAM struct {
	Engine               string     `json:"engine"`
	EngineVersion        string     `json:"engine_version"`
	Mode                 string     `json:"mode"`
	Fits                 bool       `json:"fits"`
	Reasons              []string   `json:"reasons"`
	Warnings             []string   `json:"warnings"`
	Suggestions          []string   `json:"suggestions"`
	Ranks                []VRAMRank `json:"ranks"`
	KVTokens             int64      `json:"kv_tokens"`
	KVBudgetBytes        int64      `json:"kv_budget_bytes"`
	WeightsBytes         uint64     `json:"weights_bytes"`
	KVBytesPerToken      uint64     `json:"kv_bytes_per_token"`
	NeededBytes          uint64     `json:"needed_bytes"`
	MaxConcurrency       float64    `json:"max_concurrency"`
	MaxModelLenFit       int64      `json:"max_model_len_fit"`
	MinTPFit             int        `json:"min_tp_fit"`
	RequestedBytes       uint64     `json:"requested_bytes"`
	TP                   int        `json:"tp"`
	PP                   int        `json:"pp"`
	MaxModelLen          int        `json:"max_model_len"`
	GPUMemoryBytes       uint64     `json:"gpu_memory_bytes"`
	GPUMemoryUtilization float64    `json:"gpu_memory_utilization"`
	KVCacheDtype         string     `json:"kv_cache_dtype"`
	BlockSize            int        `json:"block_size"`
	MaxNumSeqs           int        `json:"max_num_seqs"`
	MaxNumBatchedTokens  int        `json:"max_num_batched_tokens"`
	Concurrency          int        `json:"concurrency"`
}

// VRAMRank is one GPU rank's share of the memory model.
type VRAMRank struct {
	Rank              int      `json:"rank"`
	PPStage           int      `json:"pp_stage"`
	TPRank            int      `json:"tp_rank"`
	Layers            int      `json:"layers"`
	FreeBytes         uint64   `json:"free_bytes"`
	RequestedBytes    uint64   `json:"requested_bytes"`
	WeightsBytes      uint64   `json:"weights_bytes"`
	ActivationBytes   uint64   `json:"activation_bytes"`
	NonTorchBytes     uint64   `json:"non_torch_bytes"`
	CUDAGraphBytes    uint64   `json:"cuda_graph_bytes"`
	CUDAGraphDeducted bool     `json:"cuda_graph_deducted"`
	KVBudgetBytes     int64    `json:"kv_budget_bytes"`
	KVBytesPerToken   uint64   `json:"kv_bytes_per_token"`
	NumBlocks         int64    `json:"num_blocks"`
	KVTokens          int64    `json:"kv_tokens"`
	NeededBytes       uint64   `json:"needed_bytes"`
	Concurrency       float64  `json:"concurrency"`
	Measured          []string `json:"measured,omitempty"`
}

// JournalEntry is a journal entry (roofline journal -json): here, the running server's last bench.
type JournalEntry struct {
	Time          time.Time       `json:"time"`
	Kind          string          `json:"kind"`
	Server        string          `json:"server"`
	From          string          `json:"from,omitempty"`
	URL           string          `json:"url,omitempty"`
	Engine        JournalEngine   `json:"engine"`
	Model         JournalModel    `json:"model"`
	GPUs          []string        `json:"gpus,omitempty"`
	DriverVersion string          `json:"driver_version,omitempty"`
	CUDAVersion   string          `json:"cuda_version,omitempty"`
	Argv          []string        `json:"argv,omitempty"`
	Gate          *JournalGate    `json:"gate,omitempty"`
	Failure       *JournalFailure `json:"failure,omitempty"`
	Bench         *BenchResult    `json:"bench,omitempty"`
	Agent         *AgentEvent     `json:"agent,omitempty"`
}

// JournalEngine is the engine of a journal entry.
type JournalEngine struct {
	Kind     string `json:"kind,omitempty"`
	Version  string `json:"version,omitempty"`
	Identity string `json:"identity,omitempty"`
}

// JournalModel is the model of a journal entry.
type JournalModel struct {
	Name        string `json:"name,omitempty"`
	Path        string `json:"path,omitempty"`
	Fingerprint string `json:"fingerprint,omitempty"`
}

// JournalGate is the gates of a journal entry.
type JournalGate struct {
	Passed   bool     `json:"passed"`
	Health   string   `json:"health,omitempty"`
	Smoke    string   `json:"smoke,omitempty"`
	Bench    string   `json:"bench,omitempty"`
	Failures []string `json:"failures,omitempty"`
}

// JournalFailure is why a rollout of a journal entry failed.
type JournalFailure struct {
	Phase   string `json:"phase"`
	Class   string `json:"class,omitempty"`
	Error   string `json:"error"`
	KeptOld bool   `json:"kept_old,omitempty"`
}

// BenchResult is a bench run's figures, as the journal records them.
type BenchResult struct {
	Endpoint             string   `json:"endpoint,omitempty"`
	MaxConcurrency       int      `json:"max_concurrency,omitempty"`
	RequestRate          float64  `json:"request_rate,omitempty"`
	NumPrompts           int      `json:"num_prompts"`
	InputTokens          int      `json:"input_tokens"`
	OutputTokens         int      `json:"output_tokens"`
	Duration             float64  `json:"duration"`
	Completed            int      `json:"completed"`
	Failed               int      `json:"failed"`
	RequestThroughput    float64  `json:"request_throughput"`
	OutputThroughput     float64  `json:"output_throughput"`
	TotalTokenThroughput float64  `json:"total_token_throughput"`
	MedianTTFTMs         float64  `json:"median_ttft_ms"`
	P99TTFTMs            float64  `json:"p99_ttft_ms"`
	MedianTPOTMs         float64  `json:"median_tpot_ms"`
	P99TPOTMs            float64  `json:"p99_tpot_ms"`
	MedianITLMs          float64  `json:"median_itl_ms"`
	P99ITLMs             float64  `json:"p99_itl_ms"`
	MedianE2ELMs         float64  `json:"median_e2el_ms"`
	P99E2ELMs            float64  `json:"p99_e2el_ms"`
	Passed               *bool    `json:"passed,omitempty"`
	Violations           []string `json:"violations,omitempty"`
}

// AgentEvent is what the agent did, in a journal entry.
type AgentEvent struct {
	Action  string `json:"action"`
	Reason  string `json:"reason,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
	Class   string `json:"class,omitempty"`
	Cause   string `json:"cause,omitempty"`
	PID     int    `json:"pid,omitempty"`
}

// Diagnostic is an error or warning, in Terraform's JSON shape.
type Diagnostic struct {
	Severity string   `json:"severity"`
	Summary  string   `json:"summary"`
	Detail   string   `json:"detail,omitempty"`
	Range    *Range   `json:"range,omitempty"`
	Snippet  *Snippet `json:"snippet,omitempty"`
}

// Range is where a diagnostic points.
type Range struct {
	Filename string `json:"filename"`
	Start    Pos    `json:"start"`
	End      Pos    `json:"end"`
}

// Pos is a position in a file.
type Pos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
	Byte   int `json:"byte"`
}

// Snippet is the configuration line a diagnostic points at.
type Snippet struct {
	Code      string `json:"code"`
	StartLine int    `json:"start_line"`
}
