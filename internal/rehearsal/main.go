package rehearsal

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// Env is what one run of the rehearsal engine gets from its process.
type Env struct {
	Stdout, Stderr io.Writer
	// LookupEnv reads the environment; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Self is the command line that runs this same rehearsal engine again
	// (for roofline: [executable, "rehearsal", "KIND@VERSION"]). The worker
	// child (vLLM's EngineCore, SGLang's scheduler) is started as Self plus
	// the same ARGS, with ROOFLINE_REHEARSAL_ROLE=worker.
	Self []string
}

func (env *Env) lookup(name string) (string, bool) {
	if env.LookupEnv == nil {
		return os.LookupEnv(name)
	}
	return env.LookupEnv(name)
}

// Main runs the rehearsal engine emulating spec ("vllm@0.16.0",
// "sglang@0.5.6.post2") with the emulated program's arguments: for vLLM what
// follows "vllm" ("serve MODEL ...", "--version"), for SGLang what follows
// "python" ("-m sglang.launch_server ...", "-c ..."). It returns the exit status.
func Main(spec string, args []string, env Env) int {
	kind, version, _ := strings.Cut(spec, "@")
	if kind != KindVLLM && kind != KindSGLang {
		fmt.Fprintf(env.Stderr, "rehearsal: %q is not KIND@VERSION with KIND vllm or sglang (for example vllm@0.16.0)\n", spec)
		return 2
	}
	s, err := specFor(kind, version)
	if err != nil {
		fmt.Fprintln(env.Stderr, err)
		return 1
	}
	if role, _ := env.lookup(envRole); role == "worker" {
		return workerMain(s, args, env)
	}
	if kind == KindVLLM {
		return vllmMain(s, args, env)
	}
	return pythonMain(s, args, env)
}

var vllmSubcommands = []string{"chat", "complete", "serve", "bench", "collect-env", "run-batch"}

func vllmTopUsage() string {
	return "usage: vllm [-h] [-v] {" + strings.Join(vllmSubcommands, ",") + "} ...\n"
}

func vllmMain(s *argSpec, args []string, env Env) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(env.Stdout, vllmTopUsage()+"\nvLLM CLI\n\npositional arguments:\n  {"+strings.Join(vllmSubcommands, ",")+"}\n"+
			"    serve               Launch a local OpenAI-compatible API server to serve LLM\n                        completions via HTTP.\n\n"+
			"options:\n  -h, --help            show this help message and exit\n  -v, --version         show program's version number and exit\n")
		return 0
	}
	switch a := args[0]; {
	case a == "-v" || a == "--version":
		fmt.Fprintln(env.Stdout, s.version)
		return 0
	case a == "serve":
		return serveMain(s, args, args[1:], env)
	case contains(vllmSubcommands, a):
		fmt.Fprintf(env.Stderr, "rehearsal: `vllm %s` is not emulated; the rehearsal engine runs `vllm serve ...` and `vllm --version`\n", a)
		return 1
	case strings.HasPrefix(a, "-"):
		fmt.Fprintf(env.Stderr, "%svllm: error: unrecognized arguments: %s\n", vllmTopUsage(), strings.Join(args, " "))
		return 2
	default:
		q := make([]string, len(vllmSubcommands))
		for i, c := range vllmSubcommands {
			q[i] = pyStrRepr(c)
		}
		fmt.Fprintf(env.Stderr, "%svllm: error: argument subparser: invalid choice: %s (choose from %s)\n",
			vllmTopUsage(), pyStrRepr(a), strings.Join(q, ", "))
		return 2
	}
}

// pythonMain emulates the interpreter SGLang runs in.
func pythonMain(s *argSpec, args []string, env Env) int {
	for len(args) > 0 {
		switch a := args[0]; {
		case a == "-u" || a == "-B" || a == "-E" || a == "-s" || a == "-O" || a == "-I":
			args = args[1:] // interpreter switches that change nothing here
		case a == "-V" || a == "--version":
			fmt.Fprintln(env.Stdout, "Python 3.12.3")
			return 0
		case a == "-c" && len(args) > 1:
			if strings.Contains(args[1], "sglang.__version__") && strings.Contains(args[1], "print") {
				fmt.Fprintln(env.Stdout, s.version)
				return 0
			}
			fmt.Fprintf(env.Stderr, "rehearsal: python -c is emulated only for `import sglang; print(sglang.__version__)`, not %q\n", args[1])
			return 1
		case a == "-m" && len(args) > 1:
			if args[1] == "sglang.launch_server" {
				return serveMain(s, args, args[2:], env)
			}
			fmt.Fprintf(env.Stderr, "/usr/bin/python3: No module named %s\n", args[1])
			return 1
		default:
			fmt.Fprintf(env.Stderr, "rehearsal: the SGLang rehearsal is a Python interpreter that runs `-m sglang.launch_server ARGS` or `-c \"import sglang; print(sglang.__version__)\"`; got %q\n", strings.Join(args, " "))
			return 2
		}
	}
	fmt.Fprintln(env.Stderr, "rehearsal: the SGLang rehearsal needs `-m sglang.launch_server ARGS` (an interactive interpreter is not emulated)")
	return 2
}

// helpRequest handles -h/--help/--help=KEY; done is true when it answered.
func helpRequest(s *argSpec, args []string, env Env) (code int, done bool) {
	for _, a := range args {
		if a == "--" {
			break
		}
		key, hasKey := strings.CutPrefix(a, "--help=")
		switch {
		case a == "-h" || a == "--help":
			fmt.Fprint(env.Stdout, s.helpShort)
			return 0, true
		case hasKey && !refdataHasHelpAll(s):
			fmt.Fprint(env.Stderr, s.format(&argError{fmt.Sprintf("argument -h/--help: ignored explicit argument %s", pyStrRepr(key))}))
			return 2, true
		case hasKey:
			fmt.Fprint(env.Stdout, s.keywordHelp(key))
			return 0, true
		}
	}
	return 0, false
}

// serveMain runs the server command; argv is the whole emulated command
// line (the worker child gets it again), args the part the parser reads.
func serveMain(s *argSpec, argv, args []string, env Env) int {
	if code, done := helpRequest(s, args, env); done {
		return code
	}
	maxPos := 0
	if s.kind == KindVLLM {
		maxPos = 1 // model_tag
	}
	parsed, err := s.parse(args, maxPos)
	if err != nil {
		if ae, ok := err.(*argError); ok {
			fmt.Fprint(env.Stderr, s.format(ae))
			return 2
		}
		fmt.Fprintln(env.Stderr, err)
		return 2
	}
	e, err := prepare(s.kind, s.version, s, parsed, env.lookup)
	if err != nil {
		fmt.Fprintf(env.Stderr, "rehearsal: %v\n", err)
		return 1
	}
	if e.k.fail.class == ClassBadFlag && e.failure.detail == "injected" {
		fmt.Fprint(env.Stderr, s.format(&argError{"unrecognized arguments: --rehearsal-injected-bad-flag"}))
		return 2
	}
	if exc, frames := e.postParseError(); exc != "" {
		newLogger(e.kind, e.version, env.Stdout, env.Stderr, "").raw(traceback(frames, exc)...)
		return 1
	}
	return e.apiServer(env, argv)
}

func workerMain(s *argSpec, args []string, env Env) int {
	if s.kind == KindSGLang {
		if len(args) < 2 || args[0] != "-m" {
			return 2
		}
		args = args[2:]
	} else {
		if len(args) == 0 || args[0] != "serve" {
			return 2
		}
		args = args[1:]
	}
	maxPos := 0
	if s.kind == KindVLLM {
		maxPos = 1
	}
	parsed, err := s.parse(args, maxPos)
	if err != nil {
		return 2
	}
	e, err := prepare(s.kind, s.version, s, parsed, env.lookup)
	if err != nil {
		return 1
	}
	return e.worker(env)
}
