package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine/refdata"
	"github.com/roofline/roofline/internal/testload"
)

// fakeRunner answers commands from a table keyed by the argv without its
// program, and records every call.
type fakeRunner struct {
	mu      sync.Mutex
	answers map[string]fakeAnswer
	calls   []string
	envs    [][]string
}

type fakeAnswer struct {
	out    string
	exit   int
	stderr string
}

func (f *fakeRunner) Run(_ context.Context, argv []string, env []string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := strings.Join(argv[1:], " ")
	f.calls = append(f.calls, key)
	f.envs = append(f.envs, env)
	a, ok := f.answers[key]
	if !ok {
		return nil, &RunError{Argv: argv, ExitCode: 2, Stderr: []byte("error: unrecognized arguments: " + key)}
	}
	if a.exit != 0 {
		return []byte(a.out), &RunError{Argv: argv, ExitCode: a.exit, Stderr: []byte(a.stderr)}
	}
	return []byte(a.out), nil
}

func (f *fakeRunner) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// fakeInstall writes an executable file to stand for the engine binary (the
// probe stats it; the fake runner never runs it).
func fakeInstall(t testing.TB, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bin", name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func mustHelp(t testing.TB, kind, version string, short bool) string {
	t.Helper()
	get := refdata.Help
	if short {
		get = refdata.HelpShort
	}
	text, ok := get(kind, version)
	if !ok {
		t.Fatalf("no reference help for %s %s", kind, version)
	}
	return text
}

func vllmRunner(t testing.TB, version string) *fakeRunner {
	answers := map[string]fakeAnswer{
		"--version": {out: "INFO 02-12 10:00:00 [__init__.py:216] Automatically detected platform cuda.\n" + version + "\n"},
	}
	if refdata.HasHelpAll("vllm", version) {
		answers["serve --help=all"] = fakeAnswer{out: mustHelp(t, "vllm", version, false)}
		answers["serve --help"] = fakeAnswer{out: mustHelp(t, "vllm", version, true)}
	} else {
		answers["serve --help=all"] = fakeAnswer{exit: 2, stderr: "vllm serve: error: argument -h/--help: ignored explicit argument 'all'"}
		answers["serve --help"] = fakeAnswer{out: mustHelp(t, "vllm", version, false)}
	}
	return &fakeRunner{answers: answers}
}

func TestProbeVLLM(t *testing.T) {
	for _, version := range []string{"0.16.0", "0.8.5"} {
		t.Run(version, func(t *testing.T) {
			exe := fakeInstall(t, "vllm")
			e := &config.Engine{Name: "v", Kind: "vllm", Version: version, Command: []string{exe}, Env: map[string]string{"VLLM_X": "1"}}
			r := vllmRunner(t, version)
			cache := t.TempDir()
			inst, err := Probe(context.Background(), e, r, cache, false)
			if err != nil {
				t.Fatal(err)
			}
			ref := reference(t, "vllm", version)
			if inst.Version != version || inst.Kind != "vllm" || !reflect.DeepEqual(inst.Flags.Names(), ref.Flags.Names()) {
				t.Errorf("probe: version %q kind %q, %d flags (want %d)", inst.Version, inst.Kind, len(inst.Flags.Flags), len(ref.Flags.Flags))
			}
			wantCalls := []string{"--version", "serve --help=all"}
			wantHelp := exe + " serve --help=all"
			if version == "0.8.5" {
				wantCalls = append(wantCalls, "serve --help") // --help=all is refused: fall back
				wantHelp = exe + " serve --help"
			}
			if !reflect.DeepEqual(r.calls, wantCalls) || inst.HelpCommand != wantHelp {
				t.Errorf("calls %q, help command %q", r.calls, inst.HelpCommand)
			}
			env := strings.Join(r.envs[0], " ")
			for _, kv := range []string{"COLUMNS=10000", "HF_HUB_OFFLINE=1", "VLLM_X=1"} {
				if !strings.Contains(env, kv) {
					t.Errorf("probe env %q lacks %s", env, kv)
				}
			}
			if inst.Identity.Executable == "" || inst.Identity.Size == 0 || inst.Identity.Version != version || inst.ProbedAt.IsZero() {
				t.Errorf("identity %+v, probed at %v", inst.Identity, inst.ProbedAt)
			}

			// Second probe: from the cache, no command runs.
			n := r.callCount()
			again, err := Probe(context.Background(), e, r, cache, false)
			if err != nil {
				t.Fatal(err)
			}
			if r.callCount() != n {
				t.Errorf("cached probe ran %q", r.calls[n:])
			}
			if !reflect.DeepEqual(again.Flags.Flags, inst.Flags.Flags) || again.Version != version || again.Flags.Lookup("--max-model-len") == nil {
				t.Error("the cached probe differs from the fresh one")
			}
			// refresh re-probes.
			if _, err := Probe(context.Background(), e, r, cache, true); err != nil || r.callCount() == n {
				t.Errorf("refresh did not re-probe (err %v)", err)
			}
		})
	}
}

func TestProbeSGLang(t *testing.T) {
	py := fakeInstall(t, "python")
	r := &fakeRunner{answers: map[string]fakeAnswer{
		`-c import sglang; print(sglang.__version__)`: {out: "0.5.6.post2\n"},
		"-m sglang.launch_server --help":              {out: mustHelp(t, "sglang", "0.5.6.post2", false)},
	}}
	e := &config.Engine{Name: "sg", Kind: "sglang", Version: "0.5.6.post2", Command: []string{py, "-m", "sglang.launch_server"}}
	inst, err := Probe(context.Background(), e, r, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if inst.Version != "0.5.6.post2" || len(inst.Flags.Flags) != 292 || inst.Flags.Lookup("--tp-size") == nil {
		t.Errorf("version %q, %d flags", inst.Version, len(inst.Flags.Flags))
	}
}

func TestProbeRehearsal(t *testing.T) {
	self := fakeInstall(t, "roofline")
	r := &fakeRunner{answers: map[string]fakeAnswer{
		`rehearsal sglang@0.5.6.post2 -c import sglang; print(sglang.__version__)`: {out: "0.5.6.post2\n"},
		"rehearsal sglang@0.5.6.post2 -m sglang.launch_server --help":              {out: mustHelp(t, "sglang", "0.5.6.post2", false)},
	}}
	// As the CLI resolves a rehearsal engine (rehearsal.Resolve): a command
	// and a pinned identity.
	e := &config.Engine{Name: "sim", Kind: "sglang", Version: "0.5.6.post2", Rehearsal: true,
		Command: []string{self, "rehearsal", "sglang@0.5.6.post2", "-m", "sglang.launch_server"}, PinnedIdentity: "rehearsal:sglang@0.5.6.post2"}
	inst, err := Probe(context.Background(), e, r, t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	if inst.Identity.Executable != self {
		t.Errorf("identity %s, want roofline itself (%s)", inst.Identity.Executable, self)
	}
	if inst.Identity.InstallHash != "" || LockIdentity(e, inst) != "rehearsal:sglang@0.5.6.post2" {
		t.Errorf("a pinned identity is not hashed: %+v, lock identity %q", inst.Identity, LockIdentity(e, inst))
	}
}

func TestProbeErrors(t *testing.T) {
	exe := fakeInstall(t, "vllm")
	tests := []struct {
		name string
		e    *config.Engine
		r    *fakeRunner
		want []string
	}{
		{"executable not found", &config.Engine{Name: "x", Kind: "vllm", Command: []string{"/nonexistent/vllm"}}, &fakeRunner{},
			[]string{`engine "x": executable "/nonexistent/vllm" not found`, `check command in engine "x"`}},
		{"no command", &config.Engine{Name: "x", Kind: "vllm"}, &fakeRunner{}, []string{`engine "x" has no command`}},
		{"docker without a client", &config.Engine{Name: "x", Kind: "vllm", Image: "vllm/vllm-openai@sha256:00"}, &fakeRunner{},
			[]string{`engine "x": this roofline cannot run docker images`}},
		{"SGLang without -m", &config.Engine{Name: "x", Kind: "sglang", Command: []string{exe}}, &fakeRunner{},
			[]string{`"-m", "sglang.launch_server"`}},
		{"--version fails", &config.Engine{Name: "x", Kind: "vllm", Command: []string{exe}},
			&fakeRunner{answers: map[string]fakeAnswer{"--version": {exit: 1, stderr: "Traceback (most recent call last):\nImportError: libcudart.so.12: cannot open shared object file"}}},
			[]string{"reading the version failed", "exited with status 1", "ImportError: libcudart.so.12"}},
		{"no version in the output", &config.Engine{Name: "x", Kind: "vllm", Command: []string{exe}},
			&fakeRunner{answers: map[string]fakeAnswer{"--version": {out: "hello\n"}}},
			[]string{"printed no version number", "hello"}},
		{"--help exits non-zero: stderr tail", &config.Engine{Name: "x", Kind: "vllm", Command: []string{exe}},
			&fakeRunner{answers: map[string]fakeAnswer{"--version": {out: "0.16.0"},
				"serve --help=all": {exit: 1, stderr: "Traceback\nRuntimeError: CUDA driver version is insufficient"},
				"serve --help":     {exit: 1, stderr: "Traceback\nRuntimeError: CUDA driver version is insufficient"}}},
			[]string{"listing its flags failed", "serve --help", "exited with status 1", "RuntimeError: CUDA driver version is insufficient"}},
		{"only config groups", &config.Engine{Name: "x", Kind: "vllm", Command: []string{exe}},
			&fakeRunner{answers: map[string]fakeAnswer{"--version": {out: "0.16.0"},
				"serve --help=all": {out: "usage: vllm serve\n\nConfig Groups:\n  ModelConfig  x\n"},
				"serve --help":     {out: "usage: vllm serve\n\nConfig Groups:\n  ModelConfig  x\n"}}},
			[]string{"printed no flags roofline can read", "Config Groups"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Probe(context.Background(), tt.e, tt.r, "", false)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestProbeCacheInvalidation(t *testing.T) {
	exe := fakeInstall(t, "vllm")
	e := &config.Engine{Name: "v", Kind: "vllm", Version: "0.16.0", Command: []string{exe}}
	r := vllmRunner(t, "0.16.0")
	cache := t.TempDir()
	probe := func() {
		t.Helper()
		if _, err := Probe(context.Background(), e, r, cache, false); err != nil {
			t.Fatal(err)
		}
	}
	probe()
	files, _ := filepath.Glob(filepath.Join(cache, "*.json"))
	if len(files) != 1 {
		t.Fatalf("cache files %v, want one", files)
	}

	// A corrupt cache file is ignored and rewritten.
	if err := os.WriteFile(files[0], []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	n := r.callCount()
	probe()
	if r.callCount() == n {
		t.Error("a corrupt cache was used")
	}
	n = r.callCount()
	probe()
	if r.callCount() != n {
		t.Error("the rewritten cache was not used")
	}

	// A changed executable (new mtime) is probed again.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(exe, later, later); err != nil {
		t.Fatal(err)
	}
	probe()
	if r.callCount() == n {
		t.Error("a changed executable was served from the cache")
	}

	// A changed command (another env) is another cache entry.
	n = r.callCount()
	e.Env = map[string]string{"VLLM_PLUGINS": "x"}
	probe()
	if r.callCount() == n {
		t.Error("a changed env was served from the cache")
	}
}

// TestProbeVenvUpgrade: a venv's python is a symlink that pip leaves alone
// when it upgrades SGLang; the package record it replaces changes the key.
func TestProbeVenvUpgrade(t *testing.T) {
	venv := t.TempDir()
	base := fakeInstall(t, "python3.12")
	py := filepath.Join(venv, "bin", "python")
	site := filepath.Join(venv, "lib", "python3.12", "site-packages")
	for _, d := range []string{filepath.Dir(py), filepath.Join(site, "sglang-0.5.6.post2.dist-info")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(base, py); err != nil {
		t.Skip("no symlinks here")
	}
	r := &fakeRunner{answers: map[string]fakeAnswer{
		`-c import sglang; print(sglang.__version__)`: {out: "0.5.6.post2\n"},
		"-m sglang.launch_server --help":              {out: mustHelp(t, "sglang", "0.5.6.post2", false)},
	}}
	e := &config.Engine{Name: "sg", Kind: "sglang", Version: "0.5.6.post2", Command: []string{py, "-m", "sglang.launch_server"}}
	cache := t.TempDir()
	inst, err := Probe(context.Background(), e, r, cache, false)
	if err != nil {
		t.Fatal(err)
	}
	if inst.Identity.Executable != base || len(inst.Identity.Packages) != 1 || !strings.Contains(inst.Identity.Packages[0], "sglang-0.5.6.post2.dist-info@") {
		t.Fatalf("identity %+v", inst.Identity)
	}
	n := r.callCount()
	if _, err := Probe(context.Background(), e, r, cache, false); err != nil || r.callCount() != n {
		t.Fatalf("an unchanged venv was probed again (%v)", err)
	}
	if err := os.Rename(filepath.Join(site, "sglang-0.5.6.post2.dist-info"), filepath.Join(site, "sglang-0.5.7.dist-info")); err != nil {
		t.Fatal(err)
	}
	if _, err := Probe(context.Background(), e, r, cache, false); err != nil || r.callCount() == n {
		t.Errorf("an upgraded SGLang was served from the cache (%v)", err)
	}
}

func TestCheckVersion(t *testing.T) {
	e := &config.Engine{Name: "v", Kind: "vllm", Version: "0.16.0",
		Ranges: config.Ranges{"version": lineRange("engines.hcl", 3)}}
	for _, tt := range []struct {
		installed string
		wantErr   bool
	}{{"0.16.0", false}, {"v0.16.0", false}, {"0.16.0+cu129", false}, {"0.15.1", true}, {"0.16.0.post1", true}} {
		diags := CheckVersion(e, &Installed{Kind: "vllm", Version: tt.installed, Identity: Identity{Executable: "/opt/vllm/bin/vllm"}})
		if diags.HasErrors() != tt.wantErr {
			t.Errorf("%s: %s", tt.installed, diagText(diags))
			continue
		}
		if tt.wantErr {
			d := diags[0]
			if d.Subject == nil || d.Subject.Start.Line != 3 || !strings.Contains(d.Detail, "pins vLLM 0.16.0") ||
				!strings.Contains(d.Detail, "reports "+tt.installed) || d.Severity != hcl.DiagError {
				t.Errorf("%s: %s", tt.installed, diagText(diags))
			}
		}
	}
}

func TestVersions(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"0.8.5", "0.16.0", -1}, {"0.16.0", "0.16.0", 0}, {"0.10.0rc1", "0.10.0", -1}, {"0.5.6.post2", "0.5.6", 1},
		{"0.5.6.post2", "0.5.6.post10", -1}, {"0.11.1.dev3+g123", "0.11.1", -1}, {"v0.9", "0.9.0", 0}, {"1.0", "0.99.99", 1},
	} {
		if got := CompareVersions(tt.a, tt.b); got != tt.want {
			t.Errorf("CompareVersions(%s, %s) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
	for out, want := range map[string]string{
		"0.16.0\n": "0.16.0", "INFO 02-12 [x.py:1] detected cuda.\n0.8.5\n": "0.8.5", "0.5.6.post2": "0.5.6.post2",
		"vllm v0.11.1rc2.dev3+gabc\n": "0.11.1rc2.dev3+gabc", "no version\n": "", "": "", "3\n": "",
	} {
		if got := parseVersionOutput([]byte(out)); got != want {
			t.Errorf("parseVersionOutput(%q) = %q, want %q", out, got, want)
		}
	}
}

func TestExecRunner(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	ctx := context.Background()
	out, err := ExecRunner{}.Run(ctx, []string{"/bin/sh", "-c", `printf "%s" "$COLUMNS"`}, []string{"COLUMNS=10000"})
	if err != nil || string(out) != "10000" {
		t.Errorf("env not passed: %q %v", out, err)
	}
	_, err = ExecRunner{}.Run(ctx, []string{"/bin/sh", "-c", "echo boom >&2; exit 3"}, nil)
	var re *RunError
	if !errors.As(err, &re) || re.ExitCode != 3 || !strings.Contains(err.Error(), "boom") || !strings.Contains(err.Error(), "exited with status 3") {
		t.Errorf("exit error: %v", err)
	}
	start := time.Now()
	_, err = ExecRunner{Timeout: 100 * time.Millisecond}.Run(ctx, []string{"/bin/sh", "-c", "exec sleep 5"}, nil)
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "no answer after 100ms") {
		t.Errorf("timeout: %v after %v", err, time.Since(start))
	}
	testload.Within(t, "a run with a 100ms timeout", time.Since(start), 4*time.Second)
	if _, err := (ExecRunner{}).Run(ctx, []string{"/nonexistent/prog"}, nil); err == nil {
		t.Error("a missing program must fail")
	}
}

// BenchmarkProbeCached is a probe answered from the cache: stat the
// executable, read and decode the record. Target: ≤ 5 ms.
func BenchmarkProbeCached(b *testing.B) {
	exe := fakeInstall(b, "vllm")
	e := &config.Engine{Name: "v", Kind: "vllm", Version: "0.16.0", Command: []string{exe}}
	r := vllmRunner(b, "0.16.0")
	cache := b.TempDir()
	if _, err := Probe(context.Background(), e, r, cache, false); err != nil {
		b.Fatal(err)
	}
	n := r.callCount()
	for b.Loop() {
		if _, err := Probe(context.Background(), e, r, cache, false); err != nil {
			b.Fatal(err)
		}
	}
	if r.callCount() != n {
		b.Fatal("the benchmark ran the engine")
	}
}

// TestProbeCache: the probe cache is the state directory's probes folder,
// where roofline init creates it (docs/apply.md: .roofline/probes/).
func TestProbeCache(t *testing.T) {
	if got, want := ProbeCache(filepath.Join("/srv", ".roofline")), filepath.Join("/srv", ".roofline", "probes"); got != want {
		t.Errorf("ProbeCache = %q, want %q", got, want)
	}
}
