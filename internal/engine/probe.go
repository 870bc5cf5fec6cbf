package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/roofline/roofline/internal/engine/kinds"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine/refdata"
	"github.com/roofline/roofline/internal/fsx"
)

// Installed is what a probe learned about an engine install.
type Installed struct {
	Kind     string    `json:"kind"`
	Version  string    `json:"version"` // as the engine reports it
	Flags    *FlagSet  `json:"flags"`
	Identity Identity  `json:"identity"`
	ProbedAt time.Time `json:"probed_at"`
	// HelpCommand is the command whose output gave Flags ("vllm serve --help=all").
	HelpCommand string `json:"help_command"`
}

// Name is "vLLM 0.16.0" for messages.
func (i *Installed) Name() string { return displayName(i.Kind, i.Version) }

// Identity says which install was probed. A cached probe is reused while
// the identity is unchanged.
type Identity struct {
	// Executable is the program the command runs, resolved (PATH, symlinks).
	Executable string    `json:"executable"`
	Size       int64     `json:"size"`
	ModTime    time.Time `json:"mod_time"`
	// Packages are the engine's Python package records found beside the
	// command ("vllm-0.16.0.dist-info@<mtime>"): a venv's python is a
	// symlink that does not change when pip upgrades SGLang, the record does.
	Packages []string `json:"packages,omitempty"`
	Version  string   `json:"version"`
	// Image, Digest and ImageID identify a docker engine: the pinned
	// reference, its digest, and the local image's id.
	Image   string `json:"image,omitempty"`
	Digest  string `json:"digest,omitempty"`
	ImageID string `json:"image_id,omitempty"`
	// InstallHash identifies the install by content, for the lock file:
	// sha256 of the executable and of its package's RECORD (every
	// installed file's hash), so a reinstall of the same files is the
	// same install and an in-place upgrade is not.
	InstallHash string `json:"install_hash,omitempty"`
}

// where names the probed install for messages: the executable or the image.
func (id Identity) where() string {
	if id.Image != "" {
		return "image " + id.Image
	}
	return id.Executable
}

// Runner runs a command and returns its standard output. It is the one
// place a probe touches processes; tests pass a fake.
type Runner interface {
	Run(ctx context.Context, argv []string, env []string) (stdout []byte, err error)
}

// RunError is a command that failed: it did not start, exited non-zero or
// ran out of time.
type RunError struct {
	Argv     []string
	ExitCode int    // -1 when it did not exit on its own
	Stderr   []byte // the end of standard error
	Err      error
}

func (e *RunError) Error() string {
	msg := fmt.Sprintf("%q", shellJoin(e.Argv))
	switch {
	case e.ExitCode > 0:
		msg += fmt.Sprintf(" exited with status %d", e.ExitCode)
	case e.Err != nil:
		msg += ": " + e.Err.Error()
	}
	if tail := tailLines(e.Stderr, 12); tail != "" {
		msg += "; the end of its error output:\n" + tail
	}
	return msg
}

func (e *RunError) Unwrap() error { return e.Err }

// ExecRunner runs commands with os/exec.
type ExecRunner struct {
	Timeout time.Duration // 0: DefaultProbeTimeout
	// Environ builds the environment from the probe's variables: the CLI
	// passes the process driver's BuildEnv, so a probe sees exactly the
	// base environment an engine gets (plan checked vLLM 0.16.0 through
	// roofline's PATH while the engine, started without it, ran 0.8.5).
	// nil: roofline's whole environment plus env (tests).
	Environ func(env []string) []string
}

// DefaultProbeTimeout bounds one probe command; importing torch for
// `vllm serve --help` takes tens of seconds on a cold cache.
const DefaultProbeTimeout = 3 * time.Minute

var _ Runner = ExecRunner{}

// Run implements Runner.
func (x ExecRunner) Run(ctx context.Context, argv []string, env []string) ([]byte, error) {
	if len(argv) == 0 {
		return nil, &RunError{Argv: argv, ExitCode: -1, Err: errors.New("empty command")}
	}
	timeout := x.Timeout
	if timeout <= 0 {
		timeout = DefaultProbeTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	slog.Debug("engine probe: running", "argv", argv)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	if x.Environ != nil {
		cmd.Env = x.Environ(env)
	} else {
		cmd.Env = append(os.Environ(), env...)
	}
	// A child the engine started may keep the pipes open after the engine
	// is killed: stop waiting for them shortly after.
	cmd.WaitDelay = 2 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err == nil {
		return stdout.Bytes(), nil
	}
	re := &RunError{Argv: argv, ExitCode: -1, Stderr: stderr.Bytes(), Err: err}
	var exit *exec.ExitError
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		re.Err = fmt.Errorf("no answer after %s (stopped)", timeout)
	case errors.As(err, &exit) && exit.ExitCode() > 0:
		re.ExitCode = exit.ExitCode()
	}
	return stdout.Bytes(), re
}

// Command returns the command prefix that runs engine e: e.Command for a
// local install (the CLI fills it in for roofline's own rehearsal engine). A
// docker engine's is the command inside its image, which replaces the
// image's entrypoint: [vllm] or [python3 -m sglang.launch_server].
func Command(e *config.Engine) []string {
	switch {
	case e.Image != "":
		return imageCommand(e)
	case len(e.Command) > 0:
		return append([]string(nil), e.Command...)
	}
	return nil
}

// ProbeEnv is the environment probe commands get: the engine's env, a wide
// terminal so argparse does not wrap, no colour, and the air-gap variables
// (a --help must never reach the network).
func ProbeEnv(e *config.Engine) []string {
	env := []string{"COLUMNS=10000", "NO_COLOR=1"}
	env = append(env, airGapEnv...)
	keys := make([]string, 0, len(e.Env))
	for k := range e.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+e.Env[k])
	}
	return env
}

// probeFormat versions the cache record; a change re-probes everything.
const probeFormat = 2

// probeKey is what a cached probe is valid for.
type probeKey struct {
	Format     int       `json:"format"`
	Kind       string    `json:"kind"`
	Command    []string  `json:"command"`
	Env        []string  `json:"env"`
	Executable string    `json:"executable"`
	Size       int64     `json:"size"`
	ModTime    time.Time `json:"mod_time"`
	Packages   []string  `json:"packages"`
	// A docker engine: the pinned reference and the local image id.
	Image   string `json:"image,omitempty"`
	ImageID string `json:"image_id,omitempty"`
}

type probeRecord struct {
	Key       probeKey   `json:"key"`
	Installed *Installed `json:"installed"`
}

func (k probeKey) file() string {
	b, _ := json.Marshal(k)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16]) + ".json"
}

// ProbeCache is the probe cache folder of the state directory stateDir
// (Probe's cacheDir; roofline init creates it).
func ProbeCache(stateDir string) string { return filepath.Join(stateDir, "probes") }

// Probe finds out which version of engine e is installed and its complete
// flag list. The result is cached in cacheDir (one JSON file per install,
// keyed by the resolved executable, its size and modification time, the
// command and env); a cached probe is used until that identity changes or
// refresh is set. cacheDir "" disables the cache. A version different from
// the pinned one is not an error here; see CheckVersion.
func Probe(ctx context.Context, e *config.Engine, r Runner, cacheDir string, refresh bool) (*Installed, error) {
	if Lookup(e.Kind) == nil {
		return nil, fmt.Errorf("engine %q: unknown kind %q; use %s", e.Name, e.Kind, kinds.Or(true))
	}
	if e.Image != "" {
		return probeImage(ctx, e, r, cacheDir, refresh)
	}
	argv := Command(e)
	if len(argv) == 0 {
		return nil, fmt.Errorf("engine %q has no command: set command = [\"/path/to/vllm\"] (vLLM) or [\"/path/to/python\", \"-m\", \"sglang.launch_server\"] (SGLang)", e.Name)
	}
	id, err := identify(e, argv[0])
	if err != nil {
		return nil, err
	}
	env := ProbeEnv(e)
	key := probeKey{Format: probeFormat, Kind: e.Kind, Command: argv, Env: env,
		Executable: id.Executable, Size: id.Size, ModTime: id.ModTime, Packages: id.Packages}
	path := ""
	if cacheDir != "" {
		path = filepath.Join(cacheDir, key.file())
		if !refresh {
			if inst := readProbe(path, key); inst != nil {
				slog.Debug("engine probe: from the cache", "engine", e.Name, "version", inst.Version, "flags", len(inst.Flags.Flags), "cache", path)
				return inst, nil
			}
		}
	}
	inst, err := runProbe(ctx, e, argv, r, env)
	if err != nil {
		return nil, err
	}
	id.Version = inst.Version
	if e.PinnedIdentity == "" {
		id.InstallHash = installHash(id)
	}
	inst.Identity = id
	inst.ProbedAt = time.Now().UTC()
	if path != "" {
		// A cache that cannot be written only costs the next run a probe.
		_ = writeProbe(path, probeRecord{Key: key, Installed: inst})
	}
	return inst, nil
}

// identify resolves and stats the program a command runs.
func identify(e *config.Engine, prog string) (Identity, error) {
	found, err := exec.LookPath(prog)
	if err != nil {
		what := "command"
		if e.PinnedIdentity != "" {
			what = "the executable the CLI runs it from"
		}
		return Identity{}, fmt.Errorf("engine %q: executable %q not found (%v); check %s in engine %q: it must be an absolute path or a program on PATH", e.Name, prog, errors.Unwrap(err), what, e.Name)
	}
	abs, err := filepath.Abs(found)
	if err != nil {
		abs = found
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		resolved = abs
	}
	st, err := os.Stat(resolved)
	if err != nil {
		return Identity{}, fmt.Errorf("engine %q: cannot read %s: %v", e.Name, resolved, err)
	}
	id := Identity{Executable: resolved, Size: st.Size(), ModTime: st.ModTime().UTC()}
	if e.PinnedIdentity == "" {
		id.Packages = packageRecords(e.Kind, abs, resolved)
	}
	return id, nil
}

// packageRecords finds the engine package's dist-info directories in the
// Python environments the command lives in (PREFIX/bin/x →
// PREFIX/lib/python3.*/{site,dist}-packages), with their modification times.
func packageRecords(kind string, paths ...string) []string {
	var out []string
	for _, p := range paths {
		prefix := filepath.Dir(filepath.Dir(p))
		for _, pat := range []string{"lib/python3*/site-packages", "lib/python3*/dist-packages", "local/lib/python3*/dist-packages"} {
			matches, _ := filepath.Glob(filepath.Join(prefix, pat, kind+"-*.dist-info"))
			for _, m := range matches {
				if st, err := os.Stat(m); err == nil {
					out = append(out, m+"@"+st.ModTime().UTC().Format(time.RFC3339Nano))
				}
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func readProbe(path string, key probeKey) *Installed {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var rec probeRecord
	if json.Unmarshal(b, &rec) != nil || rec.Installed == nil || rec.Installed.Flags == nil ||
		len(rec.Installed.Flags.Flags) == 0 || !reflect.DeepEqual(rec.Key, key) {
		return nil // corrupt, stale or another install: probe again and rewrite
	}
	return rec.Installed
}

func writeProbe(path string, rec probeRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return fsx.WriteFile(path, b, 0o644)
}

// runProbe asks the engine for its version and flags.
func runProbe(ctx context.Context, e *config.Engine, argv []string, r Runner, env []string) (*Installed, error) {
	k := MustLookup(e.Kind)
	inst := &Installed{Kind: e.Kind}
	verArgv, err := k.versionArgv(e, argv)
	if err != nil {
		return nil, err
	}
	out, err := r.Run(ctx, verArgv, env)
	if err != nil {
		return nil, fmt.Errorf("engine %q: reading the version failed: %w. Check that %q runs in a shell with the same environment", e.Name, err, shellJoin(verArgv))
	}
	inst.Version = parseVersionOutput(out)
	if inst.Version == "" {
		return nil, fmt.Errorf("engine %q: %q printed no version number; its output ends with:\n%s", e.Name, shellJoin(verArgv), tailLines(out, 6))
	}
	inst.Flags, inst.HelpCommand, err = k.help(ctx, e, r, argv, env)
	if err != nil {
		return nil, err
	}
	return inst, nil
}

// helpCommand lists the flags with argv + --help.
func helpCommand(ctx context.Context, e *config.Engine, r Runner, argv, env []string) (*FlagSet, string, error) {
	helpArgv := append(append([]string(nil), argv...), "--help")
	fs, err := helpFlags(ctx, e, r, helpArgv, env)
	if err != nil {
		return nil, "", err
	}
	return fs, shellJoin(helpArgv), nil
}

func helpFlags(ctx context.Context, e *config.Engine, r Runner, argv, env []string) (*FlagSet, error) {
	out, err := r.Run(ctx, argv, env)
	if err != nil {
		return nil, fmt.Errorf("engine %q: listing its flags failed: %w", e.Name, err)
	}
	fs, err := ParseHelp(string(out))
	if err != nil {
		return nil, fmt.Errorf("engine %q: %q printed no flags roofline can read; its output ends with:\n%s", e.Name, shellJoin(argv), tailLines(out, 6))
	}
	return fs, nil
}

// CheckVersion reports an installed version that differs from the one the
// engine block pins.
func CheckVersion(e *config.Engine, inst *Installed) hcl.Diagnostics {
	if inst == nil || SameVersion(e.Version, inst.Version) {
		return nil
	}
	rng := e.Range("version")
	return hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  "Engine version mismatch",
		Detail: fmt.Sprintf("Engine %q pins %s %s, but %s reports %s. Install %s there, or pin version = %q after reviewing the plan against it.",
			e.Name, KindName(e.Kind), e.Version, inst.Identity.where(), inst.Version, e.Version, inst.Version),
		Subject: &rng,
	}}
}

var (
	refMu    sync.Mutex
	refCache = map[string]*Installed{}
)

// Reference returns the flag list roofline ships for kind at version (see
// refdata), as if probed: for plans on machines without the engine and for
// the rehearsal engine. ok is false for a version without reference data.
// The result is shared: do not modify it.
func Reference(kind, version string) (*Installed, bool) {
	refMu.Lock()
	defer refMu.Unlock()
	key := kind + "@" + version
	if inst, ok := refCache[key]; ok {
		return inst, true
	}
	text, ok := refdata.Help(kind, version)
	if !ok {
		return nil, false
	}
	fs, err := ParseHelp(text)
	if err != nil {
		return nil, false
	}
	inst := &Installed{Kind: kind, Version: version, Flags: fs, HelpCommand: "reference help of " + displayName(kind, version),
		Identity: Identity{Version: version}}
	refCache[key] = inst
	return inst, true
}

// shellJoin prints argv for a message, quoting what needs it.
func shellJoin(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\"'\\$;&|<>()") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// tailLines returns the last n non-empty lines of b, indented.
func tailLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n \t"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	var out []string
	for _, l := range lines {
		if l = strings.TrimRight(l, " \t\r"); l != "" {
			if len(l) > 300 {
				l = l[:300] + "…"
			}
			out = append(out, "  "+l)
		}
	}
	return strings.Join(out, "\n")
}

// installHash hashes the executable's content and the RECORD file of each
// package record (pip lists every installed file with its hash there).
func installHash(id Identity) string {
	h := sha256.New()
	if f, err := os.Open(id.Executable); err == nil {
		_, _ = io.Copy(h, f)
		f.Close()
	}
	for _, p := range id.Packages {
		dir, _, _ := strings.Cut(p, "@")
		fmt.Fprintf(h, "\x00%s\x00", filepath.Base(dir))
		if b, err := os.ReadFile(filepath.Join(dir, "RECORD")); err == nil {
			h.Write(b)
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// LockIdentity is the install identity the lock file records: the image
// digest of a docker engine, kind@version for the rehearsal engine (which
// is roofline itself, rebuilt all the time), the content hash otherwise.
func LockIdentity(e *config.Engine, inst *Installed) string {
	switch {
	case e.PinnedIdentity != "":
		return e.PinnedIdentity
	case inst.Identity.Digest != "":
		return inst.Identity.Digest
	case inst.Identity.ImageID != "":
		return inst.Identity.ImageID
	case inst.Identity.InstallHash != "":
		return inst.Identity.InstallHash
	}
	return "unknown"
}

// Hash fingerprints the flag list by what changes behaviour: names,
// aliases, values taken, choices, defaults, deprecation; not help wording.
func (fs *FlagSet) Hash() string {
	h := sha256.New()
	for _, f := range fs.Flags {
		fmt.Fprintf(h, "%s|%s|%v|%s|%s|%v|%s|%v\n", f.Name, strings.Join(f.Aliases, ","), f.TakesValue, f.NArgs,
			strings.Join(f.Choices, ","), f.HasDefault, f.Default, f.Deprecated)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
