package rehearsal

import (
	"bytes"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/engine/refdata"
)

// runMain runs Main in-process (no server is started by these arguments).
func runMain(t *testing.T, spec string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(spec, args, Env{Stdout: &out, Stderr: &errb, LookupEnv: func(string) (string, bool) { return "", false }})
	return code, out.String(), errb.String()
}

func TestArgparseErrors(t *testing.T) {
	const v16, v085, sgl = "vllm@0.16.0", "vllm@0.8.5", "sglang@0.5.6.post2"
	tests := []struct {
		name string
		spec string
		args []string
		want string // the error line after the usage block
	}{
		{"unknown flag and its value", v16, []string{"serve", "/m", "--foo", "1"}, "vllm serve: error: unrecognized arguments: --foo 1"},
		{"removed flag", v16, []string{"serve", "/m", "--swap-space-x", "4"}, "vllm serve: error: unrecognized arguments: --swap-space-x 4"},
		{"flag removed after 0.8.5", v16, []string{"serve", "/m", "--use-v2-block-manager"}, "vllm serve: error: unrecognized arguments: --use-v2-block-manager"},
		{"second positional", v16, []string{"serve", "/m", "/n"}, "vllm serve: error: unrecognized arguments: /n"},
		{"bad choice", v16, []string{"serve", "/m", "--dtype", "fp7"}, "vllm serve: error: argument --dtype: invalid choice: 'fp7' (choose from 'auto', 'bfloat16', 'float', 'float16', 'float32', 'half')"},
		{"bad choice 0.8.5 kv dtype", v085, []string{"serve", "/m", "--kv-cache-dtype", "bfloat16"}, "vllm serve: error: argument --kv-cache-dtype: invalid choice: 'bfloat16' (choose from 'auto', 'fp8', 'fp8_e4m3', 'fp8_e5m2')"},
		{"0.8.5 reasoning parser is a choice", v085, []string{"serve", "/m", "--reasoning-parser", "qwen3"}, "vllm serve: error: argument --reasoning-parser: invalid choice: 'qwen3' (choose from 'deepseek_r1', 'granite')"},
		{"missing value", v16, []string{"serve", "/m", "--port"}, "vllm serve: error: argument --port: expected one argument"},
		{"value looks like a flag", v16, []string{"serve", "/m", "--port", "--host"}, "vllm serve: error: argument --port: expected one argument"},
		{"bad int", v16, []string{"serve", "/m", "--port", "80a"}, "vllm serve: error: argument --port: invalid int value: '80a'"},
		{"bad optional int", v16, []string{"serve", "/m", "--max-num-seqs", "many"}, "vllm serve: error: argument --max-num-seqs: Value many cannot be converted to <class 'int'>."},
		{"bad float", v16, []string{"serve", "/m", "--gpu-memory-utilization", "high"}, "vllm serve: error: argument --gpu-memory-utilization: invalid float value: 'high'"},
		{"bad human int", v16, []string{"serve", "/m", "--max-model-len", "32q"}, "vllm serve: error: argument --max-model-len: invalid human_readable_int_or_auto value: '32q'"},
		{"bad human int 0.8.5", v085, []string{"serve", "/m", "--max-model-len", "32q"}, "vllm serve: error: argument --max-model-len: invalid human_readable_int value: '32q'"},
		{"ambiguous prefix", v16, []string{"serve", "/m", "--max-num", "3"}, "vllm serve: error: ambiguous option: --max-num could match --max-num-batched-tokens, --max-num-partial-prefills, --max-num-seqs"},
		{"switch with a value", v16, []string{"serve", "/m", "--enforce-eager=yes"}, "vllm serve: error: argument --enforce-eager/--no-enforce-eager: ignored explicit argument 'yes'"},
		{"alias named with all its strings", v16, []string{"serve", "/m", "-tp", "two"}, "vllm serve: error: argument -tp/--tensor-parallel-size: invalid int value: 'two'"},
		{"nargs + without values", v16, []string{"serve", "/m", "--served-model-name"}, "vllm serve: error: argument --served-model-name: expected at least one argument"},
		{"sglang unknown", sgl, []string{"-m", "sglang.launch_server", "--model-path", "/m", "--max-model-len", "9"}, "launch_server.py: error: unrecognized arguments: --max-model-len 9"},
		{"sglang required", sgl, []string{"-m", "sglang.launch_server", "--port", "1"}, "launch_server.py: error: the following arguments are required: --model/--model-path"},
		{"sglang parser choice", sgl, []string{"-m", "sglang.launch_server", "--model-path", "/m", "--tool-call-parser", "hermes"},
			"launch_server.py: error: argument --tool-call-parser: invalid choice: 'hermes' (choose from 'deepseekv3', 'deepseekv31', 'deepseekv32', 'glm', 'glm45', 'gpt-oss', 'kimi_k2', 'llama3', 'mistral', 'pythonic', 'qwen', 'qwen25', 'qwen3_coder', 'step3', 'minimax-m2')"},
		{"sglang no underscore spelling", sgl, []string{"-m", "sglang.launch_server", "--model_path", "/m"}, "launch_server.py: error: the following arguments are required: --model/--model-path"},
		{"sglang bad float", sgl, []string{"-m", "sglang.launch_server", "--model-path", "/m", "--mem-fraction-static", "0,8"}, "launch_server.py: error: argument --mem-fraction-static: invalid float value: '0,8'"},
		{"vllm unknown subcommand", v16, []string{"sreve"}, "vllm: error: argument subparser: invalid choice: 'sreve' (choose from 'chat', 'complete', 'serve', 'bench', 'collect-env', 'run-batch')"},
		{"0.8.5 has no --help=all", v085, []string{"serve", "--help=all"}, "vllm serve: error: argument -h/--help: ignored explicit argument 'all'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runMain(t, tt.spec, tt.args...)
			if code != 2 {
				t.Fatalf("exit status %d, want 2 (argparse); stderr:\n%s", code, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout should be empty, got %q", stdout)
			}
			if !strings.HasPrefix(stderr, "usage: ") {
				t.Errorf("stderr does not start with the usage block:\n%s", stderr)
			}
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			if got := lines[len(lines)-1]; got != tt.want {
				t.Errorf("error line\n got: %s\nwant: %s", got, tt.want)
			}
		})
	}
}

// The usage block printed before an error is the one --help prints.
func TestArgparseUsageIsTheHelpUsage(t *testing.T) {
	for _, c := range []struct{ spec, kind, version string }{
		{"vllm@0.16.0", "vllm", "0.16.0"}, {"sglang@0.5.6.post2", "sglang", "0.5.6.post2"},
	} {
		args := []string{"serve", "--bogus"}
		if c.kind == KindSGLang {
			args = []string{"-m", "sglang.launch_server", "--bogus"}
		}
		_, _, stderr := runMain(t, c.spec, args...)
		help, _ := refdata.Help(c.kind, c.version)
		usage := help[:strings.Index(help, "\n\n")+1]
		if !strings.HasPrefix(stderr, usage) {
			t.Errorf("%s: stderr does not start with the help's usage block", c.spec)
		}
	}
}

func TestArgparseAccepts(t *testing.T) {
	s16, err := specFor(KindVLLM, "0.16.0")
	if err != nil {
		t.Fatal(err)
	}
	ssg, err := specFor(KindSGLang, "0.5.6.post2")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		spec  *argSpec
		args  []string
		check func(a *Args) bool
	}{
		{"underscores", s16, []string{"/m", "--max_model_len", "4096"}, func(a *Args) bool { return a.Int("max_model_len", 0) == 4096 }},
		{"unique prefix", s16, []string{"/m", "--max-model", "8k"}, func(a *Args) bool { return a.Int("max_model_len", 0) == 8000 }},
		{"binary suffix", s16, []string{"/m", "--max-model-len=32K"}, func(a *Args) bool { return a.Int("max_model_len", 0) == 32768 }},
		{"auto length", s16, []string{"/m", "--max-model-len", "-1"}, func(a *Args) bool { return a.Str("max_model_len", "") == "-1" }},
		{"short alias", s16, []string{"/m", "-tp", "2"}, func(a *Args) bool { return a.Int("tensor_parallel_size", 0) == 2 }},
		{"equals", s16, []string{"/m", "--tensor-parallel-size=4"}, func(a *Args) bool { return a.Int("tensor_parallel_size", 0) == 4 }},
		{"negated switch", s16, []string{"/m", "--no-enable-prefix-caching"}, func(a *Args) bool { return a.Has("enable_prefix_caching") && !a.Bool("enable_prefix_caching") }},
		{"nargs plus", s16, []string{"/m", "--served-model-name", "a", "b", "--port", "1"}, func(a *Args) bool {
			return strings.Join(a.Strings("served_model_name"), ",") == "a,b" && a.Int("port", 0) == 1
		}},
		{"model after flags", s16, []string{"--port", "1", "/m"}, func(a *Args) bool { return len(a.Pos) == 1 && a.Pos[0] == "/m" }},
		{"double dash", s16, []string{"--port", "1", "--", "/m"}, func(a *Args) bool { return len(a.Pos) == 1 && a.Pos[0] == "/m" }},
		{"dotted json key", s16, []string{"/m", "--compilation-config.level", "3"}, func(a *Args) bool { return a.Has("compilation_config") }},
		{"none for optional", s16, []string{"/m", "--max-num-seqs", "None"}, func(a *Args) bool { return a.Int("max_num_seqs", 7) == 7 }},
		{"sglang alias", ssg, []string{"--model", "/m", "--tp-size", "2"}, func(a *Args) bool {
			return a.Str("model_path", "") == "/m" && a.Int("tensor_parallel_size", 0) == 2
		}},
		{"sglang switch", ssg, []string{"--model-path", "/m", "--enable-metrics"}, func(a *Args) bool { return a.Bool("enable_metrics") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			maxPos := 1
			if tt.spec.kind == KindSGLang {
				maxPos = 0
			}
			a, err := tt.spec.parse(tt.args, maxPos)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if !tt.check(a) {
				t.Errorf("parsed values wrong: %+v pos=%v", a.values, a.Pos)
			}
		})
	}
}

// Post-parse checks end with a traceback and exit status 1, as vLLM's do.
func TestPostParseChecks(t *testing.T) {
	tests := []struct {
		spec string
		args []string
		want string
	}{
		{"vllm@0.16.0", []string{"serve", "/m", "--enable-auto-tool-choice"}, "TypeError: Error: --enable-auto-tool-choice requires --tool-call-parser"},
		{"vllm@0.8.5", []string{"serve", "/m", "--enable-reasoning"}, "TypeError: Error: --enable-reasoning requires --reasoning-parser"},
	}
	for _, tt := range tests {
		code, _, stderr := runMain(t, tt.spec, tt.args...)
		if code != 1 || !strings.Contains(stderr, "Traceback (most recent call last):") || !strings.HasSuffix(stderr, tt.want+"\n") {
			t.Errorf("%v: exit %d, stderr:\n%s", tt.args, code, stderr)
		}
	}
}

func TestVersionAndHelp(t *testing.T) {
	all16, _ := refdata.Help(KindVLLM, "0.16.0")
	short16, _ := refdata.HelpShort(KindVLLM, "0.16.0")
	all085, _ := refdata.Help(KindVLLM, "0.8.5")
	sgl, _ := refdata.Help(KindSGLang, "0.5.6.post2")
	tests := []struct {
		spec string
		args []string
		want string
	}{
		{"vllm@0.16.0", []string{"--version"}, "0.16.0\n"},
		{"vllm@0.8.5", []string{"-v"}, "0.8.5\n"},
		{"vllm@0.16.0", []string{"serve", "--help"}, short16},
		{"vllm@0.16.0", []string{"serve", "--help=all"}, all16},
		{"vllm@0.16.0", []string{"serve", "/m", "-h"}, short16},
		{"vllm@0.8.5", []string{"serve", "--help"}, all085},
		{"sglang@0.5.6.post2", []string{"-m", "sglang.launch_server", "--help"}, sgl},
		{"sglang@0.5.6.post2", []string{"-c", "import sglang; print(sglang.__version__)"}, "0.5.6.post2\n"},
	}
	for _, tt := range tests {
		code, stdout, stderr := runMain(t, tt.spec, tt.args...)
		if code != 0 || stdout != tt.want {
			t.Errorf("%s %v: exit %d, stdout differs from the reference (%d vs %d bytes); stderr %q", tt.spec, tt.args, code, len(stdout), len(tt.want), stderr)
		}
	}
}

func TestHelpKeyword(t *testing.T) {
	_, out, _ := runMain(t, "vllm@0.16.0", "serve", "--help=max_model_len")
	if !strings.HasPrefix(out, "Arguments matching 'max-model-len':\n  --max-model-len") {
		t.Errorf("--help=max_model_len:\n%s", out)
	}
	_, out, _ = runMain(t, "vllm@0.16.0", "serve", "--help=cacheconfig")
	if !strings.Contains(out, "CacheConfig:\n") || !strings.Contains(out, "--gpu-memory-utilization") || strings.Contains(out, "--port") {
		t.Errorf("--help=cacheconfig:\n%s", out)
	}
	_, out, _ = runMain(t, "vllm@0.16.0", "serve", "--help=nothing-like-this")
	if !strings.HasPrefix(out, "No group or arguments matching 'nothing-like-this'.") {
		t.Errorf("no match:\n%s", out)
	}
}

func TestUnknownVersion(t *testing.T) {
	code, _, stderr := runMain(t, "vllm@0.9.1", "--version")
	if code != 1 || !strings.Contains(stderr, "vllm@0.8.5, vllm@0.16.0") || !strings.Contains(stderr, "sglang@0.5.6.post2") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = runMain(t, "tgi@1.0", "--version")
	if code != 2 || !strings.Contains(stderr, "vllm or sglang") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// FuzzParse: the argv parser never panics, and every error is one argparse could print.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"/m\x00--port\x008000", "--max_model_len\x0032k", "--max-num\x003", "-tp\x00x", "--\x00/m\x00/n",
		"--served-model-name\x00a\x00b", "--enforce-eager=1", "--compilation-config.level\x003", "-O3", "--=x", "-\x00--",
		"--model-path\x00/m\x00--tp-size=2",
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	s16, _ := specFor(KindVLLM, "0.16.0")
	ssg, _ := specFor(KindSGLang, "0.5.6.post2")
	f.Fuzz(func(t *testing.T, joined string, sglang bool) {
		args := strings.Split(joined, "\x00")
		s, maxPos := s16, 1
		if sglang {
			s, maxPos = ssg, 0
		}
		a, err := s.parse(args, maxPos)
		if err != nil {
			ae, ok := err.(*argError)
			if !ok || ae.msg == "" {
				t.Fatalf("non-argparse error %v", err)
			}
			return
		}
		if len(a.Pos) > maxPos {
			t.Fatalf("%d positionals accepted, at most %d", len(a.Pos), maxPos)
		}
	})
}

func TestMemorySkew(t *testing.T) {
	for _, tt := range []struct {
		in   string
		ok   bool
		act  uint64
		nt   uint64
		base uint64
	}{
		{"activation=+1GiB", true, 2 << 30, 1 << 30, 1 << 30},
		{"activation=-512MiB,non_torch=x2", true, 512 << 20, 2 << 30, 1 << 30},
		{"non_torch=+100", true, 1 << 30, 1<<30 + 100, 1 << 30},
		{"activation=-4GiB", true, 0, 1 << 30, 1 << 30},
		{"activation=1GiB", false, 0, 0, 0},
		{"weights=+1GiB", false, 0, 0, 0},
		{"activation=x0", false, 0, 0, 0},
	} {
		m, err := parseSkew(tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("%q: %v", tt.in, err)
			continue
		}
		if tt.ok && (m.activation.apply(tt.base) != tt.act || m.nonTorch.apply(tt.base) != tt.nt) {
			t.Errorf("%q: activation %d non-torch %d", tt.in, m.activation.apply(tt.base), m.nonTorch.apply(tt.base))
		}
	}
}
