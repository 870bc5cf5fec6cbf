package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine/kinds"
	"github.com/roofline/roofline/internal/engine/logdiag"
)

// Kind is what roofline knows about one engine kind: how its command line
// is rendered and checked, how it serves (address, API key, errors,
// readiness, metrics), and how its memory is modelled. Each kind is one
// file set in this package (vllm.go, sglang.go) registered in registry;
// callers ask the kind (Lookup) instead of comparing kind names.
type Kind struct {
	// Name is the kind attribute's value (kinds.VLLM).
	Name string
	// Display is how messages name the kind: "vLLM".
	Display string

	// subcommand comes before the model path, a positional argument, on
	// the command line ("serve"); "" for an engine that takes the path as
	// a flag (modelFlag).
	subcommand string
	// executables and modules are how a running engine's command line
	// starts (roofline import): its executable's base name, or the module
	// after "python -m".
	executables, modules []string

	// launchModule is the module an engine launched as `python -m MODULE`
	// runs ("sglang.launch_server"); "" for an executable.
	launchModule string
	// imageCommand is the command inside an engine image. roofline replaces
	// the image's entrypoint with it, because the official images differ
	// (vllm/vllm-openai runs `vllm serve` since 0.9 and the api_server
	// module before; lmsysorg/sglang has none) while these programs are on
	// the PATH of all of them.
	imageCommand []string
	// versionArgv is the command that prints the installed version, for
	// the engine command argv.
	versionArgv func(e *config.Engine, argv []string) ([]string, error)
	// help lists the installed flags and the command that printed them.
	help func(ctx context.Context, e *config.Engine, r Runner, argv, env []string) (*FlagSet, string, error)

	// flags names the engine flags of the common server attributes.
	flags flagNames
	// modelFlag passes the model path ("--model-path"); "" for an engine
	// that takes it as the positional argument after subcommand, where
	// modelOption is the flag that would set it twice ("--model").
	modelFlag, modelOption string
	// requirePort: a server must set its port, because the engine's own
	// default (defaultPort) is not what clients expect.
	requirePort bool
	defaultPort int
	// autoMaxModelLenFrom is the first version that takes max_model_len
	// "auto"; "" for none.
	autoMaxModelLenFrom string
	// toolChoiceFlag goes with a tool-call parser; reasoningFlag with a
	// reasoning parser, in versions before reasoningFlag.before (or where
	// the installed engine lists it); metricsFlag with every server.
	toolChoiceFlag, reasoningFlag, metricsFlag impliedFlag
	// batching renders max_num_batched_tokens and chunked_prefill_size.
	batching func(r *renderer) []arg
	// prefixCachingOn and Off render enable_prefix_caching; "" leaves the
	// engine's default.
	prefixCachingOn, prefixCachingOff string
	// kvDtype translates a kv_cache_dtype name to the engine's spelling;
	// nil takes it as written.
	kvDtype func(r *renderer, v string) (string, bool)
	// speculation renders speculative_config (js, parsed as cfg).
	speculation func(r *renderer, js string, cfg map[string]any) []arg
	// dottedFlags: "--compilation-config.level 3" sets a key of a JSON
	// flag in extra_args.
	dottedFlags bool
	// dashesOnly: the engine does not read a flag spelt with underscores.
	dashesOnly bool
	// removed lists flags that were removed, with what replaces them.
	removed map[string]Removal
	// attrs maps every flag the renderer writes to the attribute that
	// renders it; "" for a flag the engine needs whatever the attributes.
	attrs map[string]string

	// DefaultHost is where the engine listens when a server sets no host.
	DefaultHost string
	// APIKeyEnv is the variable the engine reads its API key from; "" for
	// an engine that takes a key only on its command line, where every
	// local user can read it, so that roofline's proxy enforces the key.
	APIKeyEnv string
	// APIKeyVia says, in a plan, how the key is enforced.
	APIKeyVia string
	// DefaultMemoryUtilization is the share of GPU memory a server takes
	// when the configuration does not say and nothing better is known
	// (vram.md): vLLM's --gpu-memory-utilization default, a typical SGLang
	// mem_fraction_static.
	DefaultMemoryUtilization float64
	// ProfilesMemory: the engine measures activations and non-torch memory
	// at start-up (vLLM); without it (SGLang) the KV pool is what is left,
	// so a calibration corrects the pool itself.
	ProfilesMemory bool
	// nestedErrorsFrom is the first version whose errors are wrapped as
	// {"error": {...}}; "" for never.
	nestedErrorsFrom string

	// VersionPaths are the HTTP paths that answer {"version": ...}, in the
	// order to try.
	VersionPaths []string
	// MetricPrefix starts every series of the kind's /metrics ("vllm:").
	MetricPrefix string
	// ExpectedMetrics are the series the health gate requires (engines.md
	// §7); a group is met by any one of its names.
	ExpectedMetrics []MetricGroup
	// GenerationCounter is the server-side count of generated tokens.
	GenerationCounter string
	// CacheConfigMetric is the series that reports the KV cache the engine
	// sized (blocks and block size as labels); "" when it has none.
	CacheConfigMetric string
	// NoMetrics explains a /metrics that answers 404.
	NoMetrics string
	// NoSeries explains a /metrics without the kind's series; "" for the
	// generic wording.
	NoSeries string
	// ToolParserHint says what makes tool calls come back parsed.
	ToolParserHint string

	// vramWords names the attributes the memory report shows.
	vramWords VRAMWords

	// logs are the kind's log lines (failures, launch banner, footprint);
	// classifier classifies with them and the shared rules (logs.go).
	logs       logdiag.Rules
	classifier *logdiag.Classifier

	// multiNode adds the flags of a multi-node launch (Kubernetes
	// LeaderWorkerSet) to the leader's and the workers' argv.
	multiNode func(argv []string, nodes int, leaderAddr, workerRank string) (leader, worker []string)
}

// MetricGroup is one required metric, met by any of its names.
type MetricGroup struct {
	What  string
	Names []string
}

// VRAMWords are the attribute names and notes of the memory report.
type VRAMWords struct {
	Utilization string // "gpu_memory_utilization"
	Batch       string // the attribute the batch token budget is
	GraphsNote  string // where the estimated CUDA graphs and activations go
}

// impliedFlag is a flag the renderer adds, and why.
type impliedFlag struct {
	flag, why string
	before    string // for reasoningFlag: the first version without it
}

// flagNames are the engine's flags for the attributes both kinds have.
type flagNames struct {
	tensorParallel, pipelineParallel, maxModelLen, memoryUtilization, maxNumSeqs, enforceEager string
}

// registry is every engine kind; a new kind is one entry here and one in
// kinds (TestRegistry checks they agree). It is filled in init because the
// kinds' functions reach Lookup.
var registry []*Kind

func init() {
	registry = []*Kind{vllmKind, sglangKind}
	initLogs()
}

// Lookup returns the kind named name, nil when roofline runs no such kind.
func Lookup(name string) *Kind {
	for _, k := range registry {
		if k.Name == name {
			return k
		}
	}
	return nil
}

// MustLookup returns the kind named name; name must be one (a configuration
// that passed validation, a state roofline wrote).
func MustLookup(name string) *Kind {
	k := Lookup(name)
	if k == nil {
		panic(fmt.Sprintf("engine: unknown kind %q (not one of %v)", name, kinds.Names()))
	}
	return k
}

// Default is the kind assumed where none is named: vLLM, as in `roofline
// vram` (vram.Input's Engine "").
func Default() *Kind { return vllmKind }

// LookupOrDefault returns the kind named name, or Default when it names
// none (a hand-built plan in a test, a state record without a kind).
func LookupOrDefault(name string) *Kind {
	if k := Lookup(name); k != nil {
		return k
	}
	return Default()
}

// Kinds returns every registered kind, in kinds.Names order.
func Kinds() []*Kind { return slices.Clone(registry) }

// NestedErrors reports whether this version of the engine wraps its errors
// as {"error": {...}}.
func (k *Kind) NestedErrors(version string) bool {
	return k.nestedErrorsFrom != "" && CompareVersions(version, k.nestedErrorsFrom) >= 0
}

// ModuleArgs are the arguments that launch the kind as a Python module
// (["-m", "sglang.launch_server"]); nil for a kind launched as a program.
func (k *Kind) ModuleArgs() []string {
	if k.launchModule == "" {
		return nil
	}
	return []string{"-m", k.launchModule}
}

// AttrOf returns the server attribute that renders flag for this kind.
func (k *Kind) AttrOf(flag string) (string, bool) {
	a, ok := k.attrs[flag]
	return a, ok
}

// VRAM returns the attribute names and notes of the memory report.
func (k *Kind) VRAM() VRAMWords { return k.vramWords }

// MultiNode returns the argv of the leader and of the workers of a launch
// over nodes nodes: leaderAddr is how workers reach the leader, workerRank
// a worker's node rank (both may be references the platform expands).
func (k *Kind) MultiNode(argv []string, nodes int, leaderAddr, workerRank string) (leader, worker []string) {
	return k.multiNode(argv, nodes, leaderAddr, workerRank)
}

// multiNodeArgv appends the flags every node gets, then the node rank (0
// on the leader), then what only workers get.
func multiNodeArgv(argv, common []string, workerRank string, workerOnly ...string) (leader, worker []string) {
	leader = append(slices.Clone(argv), common...)
	leader = append(leader, "--node-rank", "0")
	worker = append(slices.Clone(argv), common...)
	worker = append(worker, "--node-rank", workerRank)
	return leader, append(worker, workerOnly...)
}

// FlagAttr returns the attribute that renders flag for any kind, or
// "extra_args FLAG": what plan names when a recorded command line and the
// desired one differ.
func FlagAttr(flag string) string {
	for _, k := range registry {
		if a, ok := k.attrs[flag]; ok && a != "" {
			return a
		}
	}
	return "extra_args " + flag
}
