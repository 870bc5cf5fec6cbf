package engine

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/engine/kinds"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/config"
)

// serverAttrs are the attributes a test server sets, one per line of a
// pretend servers.hcl, so each diagnostic's line says which attribute it
// points at.
var serverAttrs = []string{"engine", "model", "gpus", "port", "host", "tensor_parallel", "pipeline_parallel",
	"max_model_len", "gpu_memory_utilization", "tool_call_parser", "reasoning_parser", "chat_template",
	"quantization", "kv_cache_dtype", "max_num_seqs", "max_num_batched_tokens", "chunked_prefill_size",
	"enforce_eager", "enable_prefix_caching", "speculative_config", "extra_args", "env"}

func lineRange(file string, line int) hcl.Range {
	return hcl.Range{Filename: file, Start: hcl.Pos{Line: line, Column: 3, Byte: 0}, End: hcl.Pos{Line: line, Column: 20, Byte: 0}}
}

// attrLine is the line of attribute attr in the pretend servers.hcl.
func attrLine(attr string) int {
	for i, a := range serverAttrs {
		if a == attr {
			return i + 2
		}
	}
	return 1
}

func testModel() *config.Model {
	return &config.Model{Name: "qwen3_8b", Path: "/models/Qwen3-8B", ServedName: "qwen3-8b",
		DeclRange: lineRange("models.hcl", 1), Ranges: config.Ranges{}}
}

func testEngine(kind, version string) *config.Engine {
	e := &config.Engine{Name: kind + "_" + strings.ReplaceAll(version, ".", ""), Kind: kind, Version: version,
		Env: map[string]string{"VLLM_ATTENTION_BACKEND": "FLASHINFER"}, DeclRange: lineRange("engines.hcl", 1),
		Ranges: config.Ranges{"version": lineRange("engines.hcl", 3), "env": lineRange("engines.hcl", 5)}}
	if kind == kinds.SGLang {
		e.Command = []string{"/opt/sglang/bin/python", "-m", "sglang.launch_server"}
		e.Env = map[string]string{"SGLANG_ENABLE_TORCH_COMPILE": "0"}
	} else {
		e.Command = []string{"/opt/vllm/bin/vllm"}
	}
	return e
}

// testServer is the one server the golden tests render for every engine.
// Only the parser names differ: they are per-engine names.
func testServer(kind string) *config.Server {
	pf := true
	s := &config.Server{
		Name: "qwen3", Engine: "e", Model: "qwen3_8b", GPUs: []int{0, 1}, Port: 8000, Host: "127.0.0.1",
		TensorParallel: 2, PipelineParallel: 1, MaxModelLen: 32768, GPUMemoryUtilization: 0.9,
		ToolCallParser: "mistral", ReasoningParser: "deepseek_r1", ChatTemplate: "/models/Qwen3-8B/tool_chat.jinja",
		Quantization: "fp8", KVCacheDtype: "fp8_e4m3", MaxNumSeqs: 64, MaxNumBatchedTokens: 8192,
		EnablePrefixCaching: &pf,
		SpeculativeConfig:   `{"method":"eagle3","model":"/models/Qwen3-8B-eagle3","num_speculative_tokens":3}`,
		ExtraArgs:           []string{"--seed", "0"},
		Env:                 map[string]string{"NCCL_DEBUG": "WARN"},
		DeclRange:           lineRange("servers.hcl", 1),
		Ranges:              config.Ranges{},
	}
	if kind == kinds.SGLang {
		s.ReasoningParser = "deepseek-r1"
		s.ExtraArgs = []string{"--random-seed", "0"}
	}
	for _, a := range serverAttrs {
		s.Ranges[a] = lineRange("servers.hcl", attrLine(a))
	}
	return s
}

func reference(t *testing.T, kind, version string) *Installed {
	t.Helper()
	inst, ok := Reference(kind, version)
	if !ok {
		t.Fatalf("no reference for %s %s", kind, version)
	}
	return inst
}

// TestRenderGolden renders the same server for vLLM 0.8.5, vLLM 0.16.0 and
// SGLang 0.5.6.post2, checked against each version's flag list.
func TestRenderGolden(t *testing.T) {
	for _, c := range refCases {
		t.Run(c.String(), func(t *testing.T) {
			e := testEngine(c.kind, c.version)
			l, diags := Render(testServer(c.kind), testModel(), e, reference(t, c.kind, c.version))
			if diags.HasErrors() || l == nil {
				t.Fatalf("diagnostics: %s", diagText(diags))
			}
			var b strings.Builder
			b.WriteString("# argv\n")
			for _, a := range l.Argv {
				b.WriteString(a + "\n")
			}
			b.WriteString("# env\n")
			for _, kv := range l.EnvList() {
				b.WriteString(kv + "\n")
			}
			b.WriteString("# diagnostics\n" + diagText(diags))
			golden(t, filepath.Join("testdata", "render", c.String()+".golden"), []byte(b.String()))
		})
	}
}

func diagText(diags hcl.Diagnostics) string {
	var b strings.Builder
	for _, d := range diags {
		sev := "error"
		if d.Severity == hcl.DiagWarning {
			sev = "warning"
		}
		where := "-"
		if d.Subject != nil {
			where = fmt.Sprintf("%s:%d", d.Subject.Filename, d.Subject.Start.Line)
		}
		fmt.Fprintf(&b, "%s %s: %s: %s\n", sev, where, d.Summary, d.Detail)
	}
	return b.String()
}

// TestRenderDiagnostics covers each check with the diagnostic it must give.
func TestRenderDiagnostics(t *testing.T) {
	type want struct {
		sev     hcl.DiagnosticSeverity
		attr    string   // the attribute the diagnostic points at
		summary string   // exact
		detail  []string // substrings
	}
	tests := []struct {
		name    string
		kind    string
		version string
		edit    func(s *config.Server, e *config.Engine)
		want    []want // in order; no other diagnostics allowed
	}{
		{
			name: "removed flag: --num-scheduler-steps on vLLM 0.16.0", kind: "vllm", version: "0.16.0",
			edit: func(s *config.Server, e *config.Engine) { s.ExtraArgs = []string{"--num-scheduler-steps", "8"} },
			want: []want{{hcl.DiagError, "extra_args", "Unknown flag in extra_args",
				[]string{"--num-scheduler-steps is not a flag of vLLM 0.16.0", "removed by upstream PR #22138", "drop it"}}},
		},
		{
			name: "removed flag with a replacement: --enable-reasoning", kind: "vllm", version: "0.16.0",
			edit: func(s *config.Server, e *config.Engine) { s.ExtraArgs = []string{"--enable-reasoning"} },
			want: []want{{hcl.DiagError, "extra_args", "Unknown flag in extra_args",
				[]string{"removed in vLLM 0.10.0", "setting reasoning_parser alone"}}},
		},
		{
			name: "removed flag: --task", kind: "vllm", version: "0.16.0",
			edit: func(s *config.Server, e *config.Engine) { s.ExtraArgs = []string{"--task", "generate"} },
			want: []want{{hcl.DiagError, "extra_args", "Unknown flag in extra_args", []string{"use --runner"}}},
		},
		{
			name: "bad tool-call parser name (SGLang's spelling on vLLM)", kind: "vllm", version: "0.16.0",
			edit: func(s *config.Server, e *config.Engine) { s.ToolCallParser = "qwen25" },
			want: []want{{hcl.DiagError, "tool_call_parser", "Unknown tool-call parser",
				[]string{`vLLM 0.16.0 has no tool-call parser named "qwen25"`, `"qwen25" is SGLang's name; vLLM calls it "hermes"`, "Valid names: deepseek_v3,"}}},
		},
		{
			name: "bad reasoning parser name on SGLang", kind: "sglang", version: "0.5.6.post2",
			edit: func(s *config.Server, e *config.Engine) { s.ReasoningParser = "deepseek_r1" },
			want: []want{{hcl.DiagError, "reasoning_parser", "Unknown reasoning parser",
				[]string{`SGLang calls it "deepseek-r1"`, "Valid names: deepseek-r1, deepseek-v3,"}}},
		},
		{
			name: "reasoning parser newer than the version", kind: "vllm", version: "0.8.5",
			edit: func(s *config.Server, e *config.Engine) { s.ReasoningParser = "qwen3" },
			want: []want{{hcl.DiagError, "reasoning_parser", "Unknown reasoning parser", []string{"Valid names: deepseek_r1, granite."}}},
		},
		{
			name: "bad choice from an attribute", kind: "vllm", version: "0.8.5",
			edit: func(s *config.Server, e *config.Engine) { s.KVCacheDtype = "bfloat16" },
			want: []want{{hcl.DiagError, "kv_cache_dtype", "Invalid value for kv_cache_dtype",
				[]string{`vLLM 0.8.5 accepts --kv-cache-dtype auto, fp8, fp8_e4m3, fp8_e5m2; "bfloat16" is not one of them.`}}},
		},
		{
			name: "bad choice in extra_args", kind: "vllm", version: "0.16.0",
			edit: func(s *config.Server, e *config.Engine) { s.ExtraArgs = []string{"--dtype", "bf16"} },
			want: []want{{hcl.DiagError, "extra_args", "Invalid value in extra_args",
				[]string{"--dtype auto, bfloat16, float, float16, float32, half", `"bf16" is not one of them`}}},
		},
		{
			name: "vLLM's fp8 KV dtype has no SGLang name", kind: "sglang", version: "0.5.6.post2",
			edit: func(s *config.Server, e *config.Engine) { s.KVCacheDtype = "fp8" },
			want: []want{{hcl.DiagError, "kv_cache_dtype", "KV cache dtype has no SGLang equivalent",
				[]string{"fp8_e4m3 and fp8_e5m2", "valid values: auto, fp8_e5m2, fp8_e4m3, bf16, bfloat16, fp4_e2m1"}}},
		},
		{
			name: "deprecated flag warns", kind: "vllm", version: "0.16.0",
			edit: func(s *config.Server, e *config.Engine) { s.ExtraArgs = []string{"--disable-log-requests"} },
			want: []want{{hcl.DiagWarning, "extra_args", "Deprecated flag in extra_args", []string{"[DEPRECATED] Disable logging requests."}}},
		},
		{
			name: "typo gets did-you-mean", kind: "vllm", version: "0.16.0",
			edit: func(s *config.Server, e *config.Engine) { s.ExtraArgs = []string{"--max-num-seqz", "4"} },
			want: []want{{hcl.DiagError, "extra_args", "Unknown flag in extra_args", []string{`Did you mean "--max-num-seqs"?`}}},
		},
		{
			name: "the other engine's flag", kind: "sglang", version: "0.5.6.post2",
			edit: func(s *config.Server, e *config.Engine) { s.ExtraArgs = []string{"--gpu-memory-utilization", "0.8"} },
			want: []want{{hcl.DiagError, "extra_args", "Unknown flag in extra_args",
				[]string{"--gpu-memory-utilization is vLLM's; SGLang's equivalent is --mem-fraction-static", "attribute gpu_memory_utilization"}}},
		},
		{
			name: "flag set by an attribute and extra_args", kind: "vllm", version: "0.16.0",
			edit: func(s *config.Server, e *config.Engine) { s.ExtraArgs = []string{"--max_model_len", "4096"} },
			want: []want{{hcl.DiagError, "extra_args", "Flag set twice", []string{"attribute max_model_len"}}},
		},
		{
			name: "--model in extra_args on vLLM", kind: "vllm", version: "0.16.0",
			edit: func(s *config.Server, e *config.Engine) { s.ExtraArgs = []string{"--model", "/models/other"} },
			want: []want{{hcl.DiagError, "extra_args", "Flag set twice", []string{"positional argument", "model.qwen3_8b"}}},
		},
		{
			name: "SGLang does not read underscores", kind: "sglang", version: "0.5.6.post2",
			edit: func(s *config.Server, e *config.Engine) { s.ExtraArgs = []string{"--log_level", "warning"} },
			want: []want{{hcl.DiagError, "extra_args", "Unknown flag in extra_args", []string{"Write --log-level"}}},
		},
		{
			name: "missing value, switch with a value, stray value", kind: "vllm", version: "0.16.0",
			edit: func(s *config.Server, e *config.Engine) {
				s.ExtraArgs = []string{"--enforce-eager=true", "/models/x", "--seed"}
			},
			want: []want{
				{hcl.DiagError, "extra_args", "Flag takes no value", []string{"--enforce-eager is a switch"}},
				{hcl.DiagError, "extra_args", "Unexpected value in extra_args", []string{`"/models/x"`, "model block"}},
				{hcl.DiagError, "extra_args", "Missing value in extra_args", []string{"--seed needs a value (SEED)"}},
			},
		},
		{
			name: "ambiguous and abbreviated options", kind: "vllm", version: "0.16.0",
			edit: func(s *config.Server, e *config.Engine) {
				s.MaxNumSeqs = 0
				s.ExtraArgs = []string{"--max-num", "5", "--max-num-se", "5"}
			},
			want: []want{
				{hcl.DiagError, "extra_args", "Ambiguous flag in extra_args", []string{"--max-num-batched-tokens", "--max-num-seqs"}},
				{hcl.DiagWarning, "extra_args", "Abbreviated flag in extra_args", []string{"read as --max-num-seqs"}},
			},
		},
		{
			name: "accepted forms: -O3, dotted JSON keys, negative values, nargs", kind: "vllm", version: "0.8.5",
			edit: func(s *config.Server, e *config.Engine) {
				s.ExtraArgs = []string{"-O3", "--compilation-config.level", "3", "--seed=-1", "--api-key", "k",
					"--allowed-local-media-path", "/data", "--override-generation-config", `{"temperature": 0.5}`}
			},
		},
		{
			name: "env overrides", kind: "vllm", version: "0.16.0",
			edit: func(s *config.Server, e *config.Engine) {
				s.Env = map[string]string{"CUDA_VISIBLE_DEVICES": "3", "HF_HUB_OFFLINE": "0"}
			},
			want: []want{
				{hcl.DiagError, "env", "CUDA_VISIBLE_DEVICES set in env", []string{"set gpus = [...]"}},
				{hcl.DiagWarning, "env", "Air-gap variable overridden", []string{"HF_HUB_OFFLINE=0"}},
			},
		},
		{
			name: "conflicting batch settings on vLLM", kind: "vllm", version: "0.16.0",
			edit: func(s *config.Server, e *config.Engine) { s.ChunkedPrefillSize = 4096 },
			want: []want{{hcl.DiagError, "chunked_prefill_size", "Conflicting batch settings", []string{"--max-num-batched-tokens"}}},
		},
		{
			name: "unknown speculative key for SGLang", kind: "sglang", version: "0.5.6.post2",
			edit: func(s *config.Server, e *config.Engine) {
				s.SpeculativeConfig = `{"method":"eagle","model":"/d","num_speculative_tokens":2,"draft_tensor_parallel_size":1}`
			},
			want: []want{{hcl.DiagError, "speculative_config", "Unsupported speculative_config key for SGLang", []string{`"draft_tensor_parallel_size"`}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, e := testServer(tt.kind), testEngine(tt.kind, tt.version)
			tt.edit(s, e)
			l, diags := Render(s, testModel(), e, reference(t, tt.kind, tt.version))
			if l == nil {
				t.Fatal("no launch")
			}
			if len(diags) != len(tt.want) {
				t.Fatalf("got %d diagnostics, want %d:\n%s", len(diags), len(tt.want), diagText(diags))
			}
			for i, w := range tt.want {
				d := diags[i]
				if d.Severity != w.sev || d.Summary != w.summary {
					t.Errorf("diagnostic %d: %s", i, diagText(hcl.Diagnostics{d}))
				}
				if d.Subject == nil || d.Subject.Start.Line != attrLine(w.attr) || d.Subject.Filename != "servers.hcl" {
					t.Errorf("diagnostic %d points at %v, want servers.hcl line %d (%s)", i, d.Subject, attrLine(w.attr), w.attr)
				}
				for _, sub := range w.detail {
					if !strings.Contains(d.Detail, sub) {
						t.Errorf("diagnostic %d detail %q lacks %q", i, d.Detail, sub)
					}
				}
			}
		})
	}
}

// TestRenderShapes checks rendering rules that the golden server does not
// exercise.
func TestRenderShapes(t *testing.T) {
	no := false
	tests := []struct {
		name        string
		kind, ver   string
		edit        func(s *config.Server)
		has, hasNot []string // argv must (not) contain these, as space-joined runs
	}{
		{"defaults render nothing", "vllm", "0.16.0", func(s *config.Server) { *s = *bareServer(s) },
			[]string{"serve /models/Qwen3-8B --served-model-name qwen3-8b --port 8000"},
			[]string{"--tensor-parallel-size", "--max-model-len", "--gpu-memory-utilization", "--enable-auto-tool-choice", "--host"}},
		{"SGLang always gets --enable-metrics and its names", "sglang", "0.5.6.post2", func(s *config.Server) { *s = *bareServer(s) },
			[]string{"-m sglang.launch_server --model-path /models/Qwen3-8B --served-model-name qwen3-8b --port 8000", "--enable-metrics"}, []string{" serve "}},
		{"vLLM 0.8.5 needs --enable-reasoning", "vllm", "0.8.5", func(s *config.Server) {},
			[]string{"--enable-reasoning --reasoning-parser deepseek_r1", "--enable-auto-tool-choice --tool-call-parser mistral"}, nil},
		{"vLLM 0.16.0 has no --enable-reasoning", "vllm", "0.16.0", func(s *config.Server) {}, nil, []string{"--enable-reasoning"}},
		{"chunked prefill off, prefix caching off, eager", "vllm", "0.16.0", func(s *config.Server) {
			s.ChunkedPrefillSize, s.MaxNumBatchedTokens, s.EnforceEager, s.EnablePrefixCaching = -1, 0, true, &no
		}, []string{"--no-enable-chunked-prefill --enforce-eager --no-enable-prefix-caching"}, []string{"--max-num-batched-tokens"}},
		{"chunk size is vLLM's token budget", "vllm", "0.16.0", func(s *config.Server) {
			s.ChunkedPrefillSize, s.MaxNumBatchedTokens = 2048, 0
		}, []string{"--max-num-batched-tokens 2048"}, nil},
		{"SGLang batching, eager, radix cache off", "sglang", "0.5.6.post2", func(s *config.Server) {
			s.ChunkedPrefillSize, s.EnforceEager, s.EnablePrefixCaching = -1, true, &no
		}, []string{"--max-running-requests 64 --max-prefill-tokens 8192 --chunked-prefill-size -1 --disable-cuda-graph --disable-radix-cache"}, nil},
		{"bf16 is bfloat16 for vLLM", "vllm", "0.16.0", func(s *config.Server) { s.KVCacheDtype = "bf16" },
			[]string{"--kv-cache-dtype bfloat16"}, nil},
		{"pipeline parallel", "sglang", "0.5.6.post2", func(s *config.Server) { s.PipelineParallel = 2 },
			[]string{"--tp-size 2 --pp-size 2"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testServer(tt.kind)
			tt.edit(s)
			l, diags := Render(s, testModel(), testEngine(tt.kind, tt.ver), reference(t, tt.kind, tt.ver))
			if diags.HasErrors() {
				t.Fatal(diagText(diags))
			}
			argv := strings.Join(l.Argv, " ")
			for _, h := range tt.has {
				if !strings.Contains(argv, h) {
					t.Errorf("argv lacks %q:\n%s", h, argv)
				}
			}
			for _, h := range tt.hasNot {
				if strings.Contains(argv, h) {
					t.Errorf("argv has %q:\n%s", h, argv)
				}
			}
		})
	}
}

// bareServer keeps only what every server has.
func bareServer(s *config.Server) *config.Server {
	return &config.Server{Name: s.Name, GPUs: []int{0}, Port: 8000, TensorParallel: 1, PipelineParallel: 1,
		DeclRange: s.DeclRange, Ranges: s.Ranges}
}

func TestRenderCommandAndEnv(t *testing.T) {
	s := testServer("vllm")
	e := testEngine("vllm", "0.16.0")
	e.Env = map[string]string{"NCCL_DEBUG": "INFO", "VLLM_LOGGING_LEVEL": "DEBUG"}
	l, _ := Render(s, testModel(), e, nil)
	want := map[string]string{"CUDA_VISIBLE_DEVICES": "0,1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
		"VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1", "NCCL_DEBUG": "WARN", "VLLM_LOGGING_LEVEL": "DEBUG"}
	if fmt.Sprint(l.Env) != fmt.Sprint(want) {
		t.Errorf("env %v, want %v (the server's env wins over the engine's)", l.Env, want)
	}

	for _, tt := range []struct {
		e    *config.Engine
		want string
	}{
		{&config.Engine{Kind: "vllm", Command: []string{"/opt/v/bin/vllm"}}, "/opt/v/bin/vllm"},
		{&config.Engine{Kind: "vllm", Image: "vllm/vllm-openai@sha256:00"}, "vllm"},
		{&config.Engine{Kind: "sglang", Image: "lmsysorg/sglang@sha256:00"}, "python3 -m sglang.launch_server"},
	} {
		if got := strings.Join(Command(tt.e), " "); got != tt.want {
			t.Errorf("Command(%+v) = %q, want %q", tt.e, got, tt.want)
		}
	}

	e = &config.Engine{Name: "none", Kind: "vllm", Version: "0.16.0", DeclRange: lineRange("engines.hcl", 7)}
	l, diags := Render(s, testModel(), e, nil)
	if l != nil || len(diags) != 1 || !strings.Contains(diags[0].Detail, "has no command") || diags[0].Subject.Start.Line != 7 {
		t.Errorf("engine without a command: %v %s", l, diagText(diags))
	}
}

// TestRenderUnknownVersion checks the fallbacks for a version roofline has
// not read: parser names come from the flag's choices, or are not checked.
func TestRenderUnknownVersion(t *testing.T) {
	help := "options:\n  --port PORT  p\n  --served-model-name NAME [NAME ...]  n\n  --tool-call-parser {alpha,beta}  t\n  --reasoning-parser REASONING_PARSER  r\n"
	fs, err := ParseHelp(help)
	if err != nil {
		t.Fatal(err)
	}
	inst := &Installed{Kind: "vllm", Version: "0.99.0", Flags: fs}
	s := bareServer(testServer("vllm"))
	s.ToolCallParser, s.ReasoningParser = "gamma", "anything"
	_, diags := Render(s, testModel(), testEngine("vllm", "0.99.0"), inst)
	text := diagText(diags)
	for _, want := range []string{
		"servers.hcl:" + itoa(attrLine("tool_call_parser")) + ": Flag not supported by the installed engine: roofline adds --enable-auto-tool-choice because vLLM needs it",
		`servers.hcl:` + itoa(attrLine("tool_call_parser")) + `: Unknown tool-call parser: vLLM 0.99.0 has no tool-call parser named "gamma". Valid names: alpha, beta.`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("diagnostics lack %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "reasoning") {
		t.Errorf("a parser flag without choices must not be checked:\n%s", text)
	}
	if n := len(diags); n != 2 {
		t.Errorf("%d diagnostics, want 2:\n%s", n, text)
	}
}

func TestEnvListSorted(t *testing.T) {
	l := &Launch{Env: map[string]string{"B": "2", "A": "1", "C": "3"}}
	got := l.EnvList()
	if !sort.StringsAreSorted(got) || len(got) != 3 || got[0] != "A=1" {
		t.Errorf("EnvList = %v", got)
	}
}

// FuzzRenderExtraArgs feeds arbitrary extra_args (NUL-separated) through
// the checks: no panic, and every diagnostic points somewhere.
func FuzzRenderExtraArgs(f *testing.F) {
	for _, s := range []string{"--max-num-seqs\x00256", "-O3", "--compilation-config.level\x003", "--x=\x00--",
		"--api-key\x00a\x00b\x00--seed", "-\x00--\x00-1\x00--dtype=bf16", "--max\x00--model\x00m", "-tp4"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	vllm, _ := Reference("vllm", "0.16.0")
	sgl, _ := Reference("sglang", "0.5.6.post2")
	f.Fuzz(func(t *testing.T, extra string, sglang bool) {
		kind, inst := "vllm", vllm
		if sglang {
			kind, inst = "sglang", sgl
		}
		s := testServer(kind)
		s.ExtraArgs = strings.Split(extra, "\x00")
		l, diags := Render(s, testModel(), testEngine(kind, inst.Version), inst)
		if l == nil {
			t.Fatal("no launch")
		}
		for _, d := range diags {
			if d.Subject == nil || d.Summary == "" || d.Detail == "" {
				t.Fatalf("diagnostic without subject or text: %+v", d)
			}
		}
	})
}
