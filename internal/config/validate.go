package config

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/roofline/roofline/internal/engine/kinds"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/suggest"
)

// digestRef matches an image pinned by digest: repo[:tag]@sha256:<64 hex>.
var digestRef = regexp.MustCompile(`^[a-z0-9][a-z0-9._/:-]*(:[A-Za-z0-9_.-]+)?@sha256:[0-9a-f]{64}$`)

// MemoryUtilizationWarn is where the seed says prefill starts to OOM.
const MemoryUtilizationWarn = 0.95

// diags collects the diagnostics of the checks.
type diags struct{ hcl.Diagnostics }

func (ds *diags) errorf(rng hcl.Range, summary, detail string, args ...any) {
	r := rng
	ds.Diagnostics = append(ds.Diagnostics, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: fmt.Sprintf(detail, args...), Subject: &r})
}

func (ds *diags) warnf(rng hcl.Range, summary, detail string, args ...any) {
	r := rng
	ds.Diagnostics = append(ds.Diagnostics, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: summary, Detail: fmt.Sprintf(detail, args...), Subject: &r})
}

// validate runs the checks that need the whole configuration but nothing
// outside it: references, ports, GPU lists, value ranges. Each block kind
// has its own function.
func validate(cfg *Config) hcl.Diagnostics {
	ds := diags{checkSecrets(cfg)}
	for _, name := range cfg.EngineNames() {
		ds.engine(cfg.Engines[name])
	}
	for _, name := range cfg.ModelNames() {
		m := cfg.Models[name]
		if m.Ranges.Has("path") && m.Path == "" {
			ds.errorf(m.Range("path"), "Empty model path", "path is the model folder (safetensors, config.json, tokenizer files).")
		}
	}
	ports := map[int]portUse{}
	for _, name := range cfg.ServerNames() {
		s := cfg.Servers[name]
		ds.references(cfg, s)
		ds.port(s, ports)
		ds.parallelism(s)
		ds.serverValues(s)
		ds.Diagnostics = append(ds.Diagnostics, validateGate(s)...)
	}
	ds.Diagnostics = append(ds.Diagnostics, validateClusters(cfg)...)
	return ds.Diagnostics
}

func (ds *diags) engine(e *Engine) {
	if e.Ranges.Has("kind") && !kinds.Known(e.Kind) {
		ds.errorf(e.Range("kind"), "Unsupported engine kind",
			"Engine %q has kind %q; roofline runs %s.%s", e.Name, e.Kind, kinds.Or(true), suggest.DidYouMean(e.Kind, kinds.Names()))
	}
	if e.Ranges.Has("version") && strings.TrimSpace(e.Version) == "" {
		ds.errorf(e.Range("version"), "Empty engine version", "Pin the engine's exact version, such as \"0.16.0\"; plan compares it with the installed one.")
	}
	n := 0
	for _, set := range []bool{e.Ranges.Has("command") || e.Unknown["command"], e.Ranges.Has("image") || e.Unknown["image"], e.Rehearsal || e.Unknown["rehearsal"]} {
		if set {
			n++
		}
	}
	switch {
	case n == 0:
		ds.errorf(e.DeclRange, "Engine has no install",
			"Engine %q needs exactly one of command (a local install), image (a docker image by digest) or rehearsal = true (the built-in rehearsal engine).", e.Name)
	case n > 1:
		ds.errorf(e.DeclRange, "Engine has more than one install",
			"Engine %q sets more than one of command, image and rehearsal; keep exactly one. Declare a second engine block to run the other one side by side.", e.Name)
	}
	if e.Ranges.Has("command") && len(e.Command) == 0 {
		ds.errorf(e.Range("command"), "Empty command", "command is the engine's argv prefix, such as [\"/opt/vllm/bin/vllm\"] or [\"/opt/sglang/bin/python\", \"-m\", \"sglang.launch_server\"].")
	}
	if e.Image != "" && !digestRef.MatchString(e.Image) {
		detail := "Images are pinned by digest so that what was reviewed is what runs: write repo@sha256:<64 hex digits>. Find the digest with `docker images --digests` or `docker inspect --format '{{index .RepoDigests 0}}' IMAGE`."
		if i := strings.LastIndex(e.Image, ":"); i > 0 && !strings.Contains(e.Image, "@") && !strings.Contains(e.Image[i:], "/") {
			detail = fmt.Sprintf("The tag %q can point at a different image tomorrow. ", e.Image[i+1:]) + detail
		}
		ds.errorf(e.Range("image"), "Image not pinned by digest", "%s", detail)
	}
}

type portUse struct {
	server string // address
	rng    hcl.Range
}

func (ds *diags) references(cfg *Config, s *Server) {
	if s.Ranges.Has("engine") && s.Engine != "" {
		if _, ok := cfg.Engines[s.Engine]; !ok {
			ds.errorf(s.Range("engine"), "Reference to undeclared engine",
				"There is no engine block named %q.%s Declare it, or fix the reference.", s.Engine, suggest.DidYouMean(s.Engine, cfg.EngineNames()))
		}
	}
	if s.Ranges.Has("model") && s.Model != "" {
		if _, ok := cfg.Models[s.Model]; !ok {
			ds.errorf(s.Range("model"), "Reference to undeclared model",
				"There is no model block named %q.%s Declare it, or fix the reference.", s.Model, suggest.DidYouMean(s.Model, cfg.ModelNames()))
		}
	}
}

func (ds *diags) port(s *Server, ports map[int]portUse) {
	if !s.Ranges.Has("port") {
		return
	}
	if s.Port < 1 || s.Port > 65535 {
		ds.errorf(s.Range("port"), "Invalid port", "Port %d is outside 1-65535.", s.Port)
		return
	}
	if s.OnCluster() {
		return // each cluster server has its own Service and pods
	}
	if prev, dup := ports[s.Port]; dup {
		ds.errorf(s.Range("port"), "Duplicate port",
			"Port %d is also used by %s (%s). Two servers cannot listen on one port; to run two engine versions side by side, give each its own port.", s.Port, prev.server, prev.rng)
		return
	}
	ports[s.Port] = portUse{s.Addr(), s.Range("port")}
}

func (ds *diags) parallelism(s *Server) {
	gpusBad := false
	if s.Ranges.Has("gpus") {
		if len(s.GPUs) == 0 {
			ds.errorf(s.Range("gpus"), "No GPUs", "%s needs at least one GPU index, such as gpus = [0].", s.Addr())
		}
		seen := map[int]bool{}
		for _, g := range s.GPUs {
			if seen[g] {
				ds.errorf(s.Range("gpus"), "Duplicate GPU index", "GPU %d is listed twice in %s; each GPU runs one rank.", g, s.Addr())
				gpusBad = true
			}
			seen[g] = true
		}
	}
	if s.TensorParallel < 1 {
		ds.errorf(s.Range("tensor_parallel"), "Invalid tensor_parallel", "tensor_parallel must be 1 or more.")
	}
	if s.PipelineParallel < 1 {
		ds.errorf(s.Range("pipeline_parallel"), "Invalid pipeline_parallel", "pipeline_parallel must be 1 or more.")
	}
	if gpusBad || s.Unknown["tensor_parallel"] || s.Unknown["pipeline_parallel"] || s.TensorParallel < 1 || s.PipelineParallel < 1 ||
		len(s.GPUs) == 0 || s.TensorParallel*s.PipelineParallel == len(s.GPUs) {
		return
	}
	rng := s.Range("tensor_parallel")
	if !s.Ranges.Has("tensor_parallel") {
		rng = s.Range("gpus")
	}
	ds.errorf(rng, "Parallelism does not match the GPUs",
		"tensor_parallel (%d) × pipeline_parallel (%d) = %d, but %s lists %d GPUs. Each rank needs one GPU: set tensor_parallel = %d, or list %d GPU(s).",
		s.TensorParallel, s.PipelineParallel, s.TensorParallel*s.PipelineParallel, s.Addr(), len(s.GPUs), len(s.GPUs)/max(1, s.PipelineParallel), s.TensorParallel*s.PipelineParallel)
}

func (ds *diags) serverValues(s *Server) {
	if s.Ranges.Has("gpu_memory_utilization") {
		u := s.GPUMemoryUtilization
		switch {
		case u <= 0 || u > 1:
			ds.errorf(s.Range("gpu_memory_utilization"), "Invalid gpu_memory_utilization",
				"gpu_memory_utilization is a fraction of each GPU's memory in (0, 1]; %g is outside it. Engines are usually run with 0.85-0.92.", u)
		case u > MemoryUtilizationWarn:
			ds.warnf(s.Range("gpu_memory_utilization"), "gpu_memory_utilization above 0.95",
				"At %g there is too little headroom for activations: engines run out of memory in prefill. Use 0.85-0.92 unless a benchmark at full load proves otherwise.", u)
		}
	}
	if s.Ranges.Has("max_model_len") && s.MaxModelLen <= 0 && !s.MaxModelLenAuto {
		ds.errorf(s.Range("max_model_len"), "Invalid max_model_len", "max_model_len must be a positive number of tokens (take the value from `roofline vram`) or \"auto\" (vLLM 0.12 and later).")
	}
	if s.Ranges.Has("concurrency") && s.Concurrency <= 0 {
		ds.errorf(s.Range("concurrency"), "Invalid concurrency", "concurrency is how many full-context requests the KV cache must hold at once; it must be 1 or more.")
	}
	for _, attr := range []struct {
		name string
		v    int
	}{{"max_num_seqs", s.MaxNumSeqs}, {"max_num_batched_tokens", s.MaxNumBatchedTokens}} {
		if s.Ranges.Has(attr.name) && attr.v <= 0 {
			ds.errorf(s.Range(attr.name), "Invalid "+attr.name, "%s must be a positive number.", attr.name)
		}
	}
	if !s.Ranges.Has("extra_args") {
		return
	}
	for _, a := range s.ExtraArgs {
		shown := fmt.Sprintf("%q", a)
		if s.Sensitive.Attr("extra_args") {
			shown = "(an element from a sensitive value)"
		}
		if strings.TrimSpace(a) != a || a == "" {
			ds.errorf(s.Range("extra_args"), "Invalid extra argument",
				"extra_args has %s: each element is one argv word, without surrounding spaces. Write [\"--max-num-seqs\", \"256\"], not [\"--max-num-seqs 256\"].", shown)
		} else if strings.HasPrefix(a, "--") && strings.Contains(a, " ") && !strings.Contains(a, "=") {
			ds.errorf(s.Range("extra_args"), "Invalid extra argument",
				"extra_args has %s: a flag and its value are two elements (or one with =), as roofline starts the engine without a shell.", shown)
		}
	}
}

func validateGate(s *Server) hcl.Diagnostics {
	var ds diags
	g := s.Gate
	if g == nil {
		return nil
	}
	errorf := ds.errorf
	b := g.Bench
	if b == nil {
		return ds.Diagnostics
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"concurrency", b.Concurrency}, {"requests", b.Requests}, {"input_tokens", b.InputTokens}, {"output_tokens", b.OutputTokens}} {
		if b.Ranges.Has(f.name) && f.v <= 0 {
			errorf(b.Ranges[f.name], "Invalid bench "+f.name, "%s must be 1 or more.", f.name)
		}
	}
	if b.Ranges.Has("request_rate") && b.RequestRate <= 0 {
		errorf(b.Ranges["request_rate"], "Invalid bench request_rate", "request_rate is requests per second of an open-loop load; it must be above 0 (omit it for a closed loop at concurrency).")
	}
	if b.Ranges.Has("max_failed_requests") && b.MaxFailedRequests < 0 {
		errorf(b.Ranges["max_failed_requests"], "Invalid max_failed_requests", "max_failed_requests cannot be negative.")
	}
	if b.Ranges.Has("max_failed_requests") && b.MaxFailedRequests >= b.Requests && b.Requests > 0 {
		errorf(b.Ranges["max_failed_requests"], "Threshold that cannot fail",
			"max_failed_requests (%d) is not below requests (%d): the gate would pass even if every request failed.", b.MaxFailedRequests, b.Requests)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"min_output_tokens_per_second", b.MinOutputTokensPerSecond}, {"min_requests_per_second", b.MinRequestsPerSecond}} {
		if b.Ranges.Has(f.name) && f.v <= 0 {
			errorf(b.Ranges[f.name], "Threshold that cannot fail", "%s = %g is always met; set a positive figure from a bench of the server it replaces, or remove it.", f.name, f.v)
		}
	}
	if (b.Ranges.Has("max_tpot_p99") || b.Ranges.Has("max_itl_p99")) && b.OutputTokens == 1 {
		rng := b.Ranges["max_tpot_p99"]
		if !b.Ranges.Has("max_tpot_p99") {
			rng = b.Ranges["max_itl_p99"]
		}
		errorf(rng, "Threshold that can never pass", "TPOT and ITL are measured between output tokens; with output_tokens = 1 there are none. Raise output_tokens or drop the threshold.")
	}
	if s.MaxModelLen > 0 && b.InputTokens+b.OutputTokens > s.MaxModelLen {
		rng := b.Ranges.Get("input_tokens", b.Ranges.Get("output_tokens", b.DeclRange))
		errorf(rng, "Bench requests longer than max_model_len",
			"input_tokens + output_tokens = %d exceeds the server's max_model_len (%d): the engine rejects every request, so the gate can never pass.", b.InputTokens+b.OutputTokens, s.MaxModelLen)
	}
	if b.RequestRate == 0 && b.Concurrency > b.Requests && b.Requests > 0 {
		ds.warnf(b.Ranges.Get("concurrency", b.DeclRange), "Bench concurrency above requests",
			"With %d requests the load never reaches concurrency %d; raise requests to measure at that load.", b.Requests, b.Concurrency)
	}
	return ds.Diagnostics
}
