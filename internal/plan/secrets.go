package plan

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/diagfmt"
	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/fsx"
	"github.com/roofline/roofline/internal/secret"
	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/textdiff"
)

// Sensitive values in a plan. In memory a Desired holds the plain argv and
// env that start the engine; Sensitive names the paths ("env.KEY",
// "argv[I]") whose values are secret. Whatever leaves the process — plan
// -json, the plan file, the human plan, the state — carries at those paths
// the salted hash (secret.Hash, reused from the state while the value is
// unchanged), never the value. A saved plan keeps the plain values sealed
// (seal.go) for apply to start the engine with.
//
// Host secrets (env_from_file, env_from_host) are not in the plan at all:
// EnvFrom records where each comes from, and apply reads it on the host
// (ResolveHostEnv) just before the engine starts.

// apiKeyPath names the API key among a server's secrets.
const apiKeyPath = "api_key"

// Host secret sources in Desired.EnvFrom.
const (
	fromFile = "file:"
	fromEnv  = "env:"
)

// markSensitive records the sensitive paths of d: env keys and argv words
// that hold a secret of the configuration (secret.Set.In), whose names say
// secret, or that are host secrets; and the value after a flag whose name
// says secret.
func markSensitive(d *Desired, s *config.Server, secrets *secret.Set) {
	var paths []string
	for k, v := range d.Env {
		if secret.IsName(k) || secrets.In(v) || s.Sensitive.Key("env", k) {
			paths = append(paths, "env."+k)
		}
	}
	for k := range d.EnvFrom {
		paths = append(paths, "env."+k)
	}
	for i := 1; i < len(d.Argv); i++ {
		w := d.Argv[i]
		switch {
		case secrets.In(w):
			paths = append(paths, argvPath(i))
		case strings.HasPrefix(w, "-") && w != "--":
			name, _, hasVal := strings.Cut(w, "=")
			if !secret.IsName(name) {
				continue
			}
			if hasVal {
				paths = append(paths, argvPath(i))
			} else if i+1 < len(d.Argv) && !strings.HasPrefix(d.Argv[i+1], "--") {
				paths = append(paths, argvPath(i+1))
				i++
			}
		}
	}
	sort.Strings(paths)
	d.Sensitive = slices.Compact(paths)
}

func argvPath(i int) string { return "argv[" + strconv.Itoa(i) + "]" }

// hostEnvFrom lists a server's host secrets as Desired.EnvFrom.
func hostEnvFrom(s *config.Server) map[string]string {
	if len(s.EnvFromFile) == 0 && len(s.EnvFromHost) == 0 {
		return nil
	}
	out := map[string]string{}
	for k, p := range s.EnvFromFile {
		out[k] = fromFile + p
	}
	for _, k := range s.EnvFromHost {
		out[k] = fromEnv + k
	}
	return out
}

// placeholder stands for every sensitive value in the configuration hash:
// the hash must not be a fingerprint of a secret (an unsalted hash of a
// short password can be reversed by guessing). A rotated secret is found by
// secretChanges instead.
const placeholder = "(sensitive)"

// hashable returns argv and env with the sensitive values replaced by
// placeholder, and the host secrets by their source.
func hashable(d *Desired) ([]string, map[string]string) {
	envKeys, argvIdx := state.SensitivePaths(d.Sensitive)
	argv := slices.Clone(d.Argv)
	for i := range argv {
		if argvIdx[i] {
			argv[i] = maskWord(argv[i], func(string) string { return placeholder })
		}
	}
	env := maps.Clone(d.Env)
	for k := range env {
		if envKeys[k] {
			env[k] = placeholder
		}
	}
	for k, src := range d.EnvFrom {
		if env == nil {
			env = map[string]string{}
		}
		env[k] = src
	}
	return argv, env
}

// maskWord replaces the value of a "--flag=value" word, or the whole word.
func maskWord(w string, f func(string) string) string {
	if name, val, ok := strings.Cut(w, "="); ok && strings.HasPrefix(name, "-") {
		return name + "=" + f(val)
	}
	return f(w)
}

// secretChanges names the sensitive values of after that differ from what
// before recorded (the state holds their salted hashes): "env.HF_TOKEN",
// "argv --api-key". host holds the host secrets plan could read here; one
// it could not read is taken as unchanged (apply reads it).
func secretChanges(before *state.Server, after *Desired, host map[string]string) []string {
	if before == nil || after == nil {
		return nil
	}
	var out []string
	envKeys, argvIdx := state.SensitivePaths(after.Sensitive)
	for k := range envKeys {
		plain, ok := after.Env[k]
		if _, isHost := after.EnvFrom[k]; isHost {
			plain, ok = host[k]
		}
		if !ok {
			continue
		}
		if stored, had := before.Env[k]; had && !secret.Matches(stored, plain) {
			out = append(out, "env."+k)
		}
	}
	key := after.APIKey
	if after.APIKeyFile != "" {
		key = host[apiKeyPath]
	}
	if key != "" && before.APIKeyHash != "" && !secret.Matches(before.APIKeyHash, key) {
		out = append(out, apiKeyPath)
	}
	bArgv := publicArgv(before)
	if len(bArgv) == len(after.Argv) {
		for i := range argvIdx {
			if i < len(bArgv) && !argMatches(bArgv[i], after.Argv[i]) {
				out = append(out, "argv "+flagBefore(after.Argv, i))
			}
		}
	}
	sort.Strings(out)
	return out
}

// flagBefore names the flag a sensitive argv word belongs to.
func flagBefore(argv []string, i int) string {
	if name, _, ok := strings.Cut(argv[i], "="); ok && strings.HasPrefix(name, "-") {
		return name
	}
	if i > 0 && strings.HasPrefix(argv[i-1], "-") {
		return argv[i-1]
	}
	return argvPath(i)
}

func argMatches(stored, plain string) bool {
	if secret.Matches(stored, plain) {
		return true
	}
	sn, sv, ok1 := strings.Cut(stored, "=")
	pn, pv, ok2 := strings.Cut(plain, "=")
	return ok1 && ok2 && sn == pn && strings.HasPrefix(sn, "-") && secret.Matches(sv, pv)
}

// unmaskEqual returns before's argv with each word that stands for after's
// (a stored hash of the same value) replaced by after's word, so that a
// word-by-word comparison sees only real differences.
func unmaskEqual(before, after []string) []string {
	out := slices.Clone(before)
	for i := range out {
		if i < len(after) && out[i] != after[i] && argMatches(out[i], after[i]) {
			out[i] = after[i]
		}
	}
	return out
}

// Masked returns a copy of d for output: the sensitive values hashed,
// reusing before's hash where it still stands for the value, so an
// unchanged secret prints the same and a rotated one differs.
func (d *Desired) Masked(before *state.Server) *Desired {
	if d == nil {
		return nil
	}
	m := *d
	if len(d.Sensitive) == 0 {
		return &m
	}
	envKeys, argvIdx := state.SensitivePaths(d.Sensitive)
	var bArgv []string
	var bEnv map[string]string
	if before != nil {
		bArgv, bEnv = publicArgv(before), before.Env
	}
	m.Argv = slices.Clone(d.Argv)
	for i := range m.Argv {
		if !argvIdx[i] {
			continue
		}
		prev := ""
		if i < len(bArgv) {
			prev = bArgv[i]
		}
		_, pv, _ := strings.Cut(prev, "=")
		m.Argv[i] = maskWord(m.Argv[i], func(v string) string {
			if strings.Contains(prev, "=") && strings.HasPrefix(m.Argv[i], "-") {
				return secret.HashAgainst(v, pv)
			}
			return secret.HashAgainst(v, prev)
		})
	}
	if d.Env != nil {
		m.Env = maps.Clone(d.Env)
		for k, v := range m.Env {
			if envKeys[k] {
				m.Env[k] = secret.HashAgainst(v, bEnv[k])
			}
		}
	}
	return &m
}

// sensitiveMarks is Terraform's before_sensitive / after_sensitive: the
// shape of the value with true where it is sensitive, sparse (only argv
// and env, only when something is sensitive).
func sensitiveMarks(paths []string, argvLen int) map[string]any {
	if len(paths) == 0 {
		return nil
	}
	envKeys, argvIdx := state.SensitivePaths(paths)
	out := map[string]any{}
	if len(envKeys) > 0 {
		env := map[string]bool{}
		for k := range envKeys {
			env[k] = true
		}
		out["env"] = env
	}
	if len(argvIdx) > 0 {
		marks := make([]bool, argvLen)
		for i := range argvIdx {
			if i < argvLen {
				marks[i] = true
			}
		}
		out["argv"] = marks
	}
	return out
}

// beforePaths are the sensitive paths of a state record: its own list and
// the values the name rule hashed.
func beforePaths(b *state.Server) []string {
	if b == nil {
		return nil
	}
	paths := slices.Clone(b.Sensitive)
	for k, v := range b.Env {
		if secret.IsHash(v) {
			paths = append(paths, "env."+k)
		}
	}
	for i, w := range b.Argv {
		if _, v, ok := strings.Cut(w, "="); secret.IsHash(w) || ok && secret.IsHash(v) {
			paths = append(paths, argvPath(i))
		}
	}
	sort.Strings(paths)
	return slices.Compact(paths)
}

// maxHostSecret bounds a secret file (a token is a few hundred bytes).
const maxHostSecret = 64 << 10

// ReadHostSecret reads an env_from_file or api_key_file secret: a regular
// file, bounded. The CLI hands it to Inputs.ReadHostFile and ResolveHostEnv.
func ReadHostSecret(path string) (string, error) {
	b, err := fsx.ReadFile(path, maxHostSecret)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// ResolveHostEnv reads the host secrets of every change that starts an
// engine into its Env (apply calls it just before starting anything).
// read returns the content of a secret file; getenv looks up roofline's
// own environment. Every value read is added to secrets, so output is
// masked against it. An unreadable file or unset variable is an error
// naming the server and the source; nothing was started.
func ResolveHostEnv(p *Plan, read func(path string) (string, error), getenv func(string) (string, bool), secrets *secret.Set) error {
	for _, c := range p.Changes {
		d := c.After
		if d == nil || len(d.EnvFrom) == 0 || c.Action == NoOp || c.Action == Delete {
			continue
		}
		env := maps.Clone(d.Env)
		if env == nil {
			env = map[string]string{}
		}
		for _, k := range slices.Sorted(maps.Keys(d.EnvFrom)) {
			v, err := resolveOne(d.EnvFrom[k], read, getenv)
			if err != nil {
				return &HostSecretError{Addr: c.Addr, Key: k, Source: d.EnvFrom[k], Err: err}
			}
			secrets.Add(v)
			env[k] = v
		}
		d.Env = env
	}
	return nil
}

var errNoReader = errors.New("this command cannot read host secrets")

func resolveOne(src string, read func(string) (string, error), getenv func(string) (string, bool)) (string, error) {
	if p, ok := strings.CutPrefix(src, fromFile); ok {
		if read == nil {
			// A caller without a reader must not start an engine
			// without its secret, nor panic.
			return "", errNoReader
		}
		v, err := read(p)
		if err != nil {
			return "", err
		}
		return strings.TrimRight(v, "\r\n"), nil
	}
	name := strings.TrimPrefix(src, fromEnv)
	if getenv == nil {
		return "", errNoReader
	}
	v, ok := getenv(name)
	if !ok || v == "" {
		return "", errNotSet
	}
	return v, nil
}

// HostSecretError is a host secret apply could not read.
type HostSecretError struct {
	Addr, Key, Source string
	Err               error
}

func (e *HostSecretError) Error() string {
	if name, ok := strings.CutPrefix(e.Source, fromEnv); ok {
		return e.Addr + ": env_from_host " + e.Key + ": " + name + " is not set in roofline's environment; export it on this host before apply. No engine was started."
	}
	return e.Addr + ": env_from_file " + e.Key + ": " + e.Err.Error() + "; the file must exist on the host that runs apply, readable by its user. No engine was started."
}

func (e *HostSecretError) Unwrap() error { return e.Err }

type notSet struct{}

func (notSet) Error() string { return "not set" }

var errNotSet error = notSet{}

// PlanHostSecrets reads the host secrets plan can see on this machine, for
// rotation checks only (nothing read is stored or shown). Unreadable ones
// are skipped: a plan in CI has none.
func planHostSecrets(s *config.Server, read func(string) (string, error), getenv func(string) (string, bool), secrets *secret.Set) (map[string]string, map[string]error) {
	out, unreadable := map[string]string{}, map[string]error{}
	for k, src := range hostEnvFrom(s) {
		if read == nil || getenv == nil {
			break
		}
		v, err := resolveOne(src, read, getenv)
		if err == nil {
			out[k] = v
			secrets.Add(v)
		} else if p, ok := strings.CutPrefix(src, fromFile); ok {
			unreadable[p] = err
		}
	}
	return out, unreadable
}

// unwrapPathErr is the cause of a file error without the path, which the
// message names already.
func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// warnUnreadable says, on the host, that a secret file plan cannot read
// will fail the server's start at apply (apply reads it again then: plan
// may run as someone who may not read it, so it is no error here).
func (pl *planner) warnUnreadable(s *config.Server, files map[string]error) {
	for _, p := range slices.Sorted(maps.Keys(files)) {
		pl.diag(hcl.DiagWarning, ptr(s.DeclRange), "Host secret file not readable",
			"Server %q reads a secret from %s at apply, and plan cannot read it: %v. Unless apply runs as a user who can, the server will not start: create the file (mode 0600), or fix the path.", s.Name, p, unwrapPathErr(files[p]))
	}
}

// envDiffKeys lists the keys whose stored and desired values differ.
func envDiffKeys(stored, desired map[string]string) []string {
	var out []string
	for k, v := range desired {
		if s, ok := stored[k]; !ok || !secret.Matches(s, v) {
			out = append(out, k)
		}
	}
	for k := range stored {
		if _, ok := desired[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// sensitiveFlag reports whether the attribute or flag ArgvDiffFlags named
// carries a sensitive value of argv.
func sensitiveFlag(argv []string, idx map[int]bool, attr string) bool {
	for i := range idx {
		if i < len(argv) && attr == engine.FlagAttr(flagBefore(argv, i)) {
			return true
		}
	}
	return false
}

func maskDiag(d diagfmt.Diag, s *secret.Set) diagfmt.Diag {
	d.Summary, d.Detail = s.Mask(d.Summary), s.Mask(d.Detail)
	if d.Snippet != nil {
		sn := *d.Snippet
		sn.Code = s.Mask(sn.Code)
		d.Snippet = &sn
	}
	return d
}

// hashWord finds a stored hash in a rendered line.
var hashWord = regexp.MustCompile(`sha256:[0-9a-f]{16}:[0-9a-f]{64}`)

// showLine renders a line of argv or env for people: hashes become
// "(sensitive value)".
func showLine(l string) string { return hashWord.ReplaceAllString(l, secret.Shown) }

// foldRotations turns a removed line and an added line that read the same
// once hashes are hidden (a rotated secret) into one changed line.
func foldRotations(ops []textdiff.Op) []shownOp {
	var out []shownOp
	for i := 0; i < len(ops); i++ {
		op := ops[i]
		if op.Kind == '-' && i+1 < len(ops) && ops[i+1].Kind == '+' && hashWord.MatchString(op.Text) &&
			showLine(op.Text) == showLine(ops[i+1].Text) {
			out = append(out, shownOp{'~', strings.ReplaceAll(showLine(op.Text), secret.Shown, secret.ShownChanged)})
			i++
			continue
		}
		out = append(out, shownOp{op.Kind, showLine(op.Text)})
	}
	return out
}

type shownOp struct {
	Kind byte
	Text string
}

// renderEnvFrom shows where host secrets come from (never their values).
func renderEnvFrom(w io.Writer, a *Desired, c Colorizer) {
	for _, k := range slices.Sorted(maps.Keys(a.EnvFrom)) {
		src := a.EnvFrom[k]
		how := "read from " + strings.TrimPrefix(src, fromFile) + " on this host at apply"
		if name, ok := strings.CutPrefix(src, fromEnv); ok {
			how = "taken from roofline's environment ($" + name + ") at apply"
		}
		fmt.Fprintf(w, "      %s env.%s = %s (%s)\n", c("[green]+[reset]"), k, secret.Shown, how)
	}
}

// SensitiveValues returns the plain values at d's sensitive paths (for
// masking output against them).
func SensitiveValues(d *Desired) []string {
	envKeys, argvIdx := state.SensitivePaths(d.Sensitive)
	var out []string
	for k := range envKeys {
		if v, ok := d.Env[k]; ok && !secret.IsHash(v) {
			out = append(out, v)
		}
	}
	for i := range argvIdx {
		if i < len(d.Argv) {
			w := d.Argv[i]
			if name, v, ok := strings.Cut(w, "="); ok && strings.HasPrefix(name, "-") {
				w = v
			}
			if !secret.IsHash(w) {
				out = append(out, w)
			}
		}
	}
	return out
}

// effectiveEnv is a's env with each host secret (not read by plan) taken
// as unchanged from b: whether it rotated is secretChanges' call.
func effectiveEnv(b *state.Server, a *Desired) map[string]string {
	if len(a.EnvFrom) == 0 || b == nil {
		return a.Env
	}
	env := maps.Clone(a.Env)
	if env == nil {
		env = map[string]string{}
	}
	for k := range a.EnvFrom {
		if _, ok := env[k]; !ok {
			if v, had := b.Env[k]; had {
				env[k] = v
			}
		}
	}
	return env
}

// maskEnvChanges marks the changes of sensitive keys (beyond the name rule
// EnvDiff knows) and drops their values.
func maskEnvChanges(cs []EnvChange, sensitive []string) []EnvChange {
	for i := range cs {
		if slices.Contains(sensitive, "env."+cs[i].Key) || secret.IsHash(cs[i].Before) || secret.IsHash(cs[i].After) {
			cs[i].Sensitive = true
		}
		if cs[i].Sensitive {
			cs[i].Before, cs[i].After = "", ""
		}
	}
	return cs
}
