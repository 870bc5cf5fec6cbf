package state

import (
	"slices"
	"strconv"
	"strings"

	"github.com/roofline/roofline/internal/secret"
)

// Secrets (API keys, tokens, passwords) never reach the state file in plain
// text: they are stored as internal/secret's salted hashes. Redact against
// the previous record (the prev arguments) so that an unchanged secret keeps
// its stored string; then plain string comparison of argv and env tells
// what changed.

// IsSecretName reports whether an environment variable or flag name (leading
// dashes allowed) names a secret (secret.IsName).
func IsSecretName(name string) bool { return secret.IsName(name) }

// IsRedacted reports whether v has the form RedactValue produces.
func IsRedacted(v string) bool { return secret.IsHash(v) }

// RedactValue returns the stored form of a secret value, salted at random.
// A value that is already redacted is returned unchanged.
func RedactValue(v string) string { return secret.Hash(v) }

// Matches reports whether the stored value stored stands for plain: equal
// strings, or a redaction of plain.
func Matches(stored, plain string) bool { return secret.Matches(stored, plain) }

// redactAgainst redacts plain, reusing prev when prev already stands for it.
func redactAgainst(plain, prev string) string { return secret.HashAgainst(plain, prev) }

// RedactEnv returns env with the values of secret names redacted. Where prev
// (the env recorded before, may be nil) holds a redaction of the same value,
// that string is reused, so an unchanged secret compares equal.
func RedactEnv(env, prev map[string]string) map[string]string {
	if env == nil {
		return nil
	}
	out := make(map[string]string, len(env))
	for k, v := range env {
		if IsSecretName(k) {
			v = redactAgainst(v, prev[k])
		}
		out[k] = v
	}
	return out
}

// RedactArgv returns argv with the values of secret flags redacted, in both
// spellings ("--api-key=X" and "--api-key", "X"). prev (the argv recorded
// before, may be nil) plays the same part as in RedactEnv.
func RedactArgv(argv, prev []string) []string {
	if argv == nil {
		return nil
	}
	prevVals := secretFlagValues(prev)
	out := make([]string, len(argv))
	copy(out, argv)
	for i := 1; i < len(out); i++ {
		a := out[i]
		if !strings.HasPrefix(a, "-") || a == "--" {
			continue
		}
		name, val, hasVal := strings.Cut(a, "=")
		if !IsSecretName(name) {
			continue
		}
		if hasVal {
			out[i] = name + "=" + redactAgainst(val, prevVals[name])
			continue
		}
		// The value is the next word unless that is another long flag.
		if i+1 < len(out) && !strings.HasPrefix(out[i+1], "--") {
			out[i+1] = redactAgainst(out[i+1], prevVals[name])
			i++
		}
	}
	return out
}

// secretFlagValues maps each secret flag of argv to its (stored) value.
func secretFlagValues(argv []string) map[string]string {
	vals := map[string]string{}
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, val, hasVal := strings.Cut(a, "=")
		if !IsSecretName(name) {
			continue
		}
		switch {
		case hasVal:
			vals[name] = val
		case i+1 < len(argv) && !strings.HasPrefix(argv[i+1], "--"):
			vals[name] = argv[i+1]
			i++
		}
	}
	return vals
}

// EnvEqual reports whether the stored env (redacted) stands for desired
// (plain or redacted): the same names, and each stored value Matches.
func EnvEqual(stored, desired map[string]string) bool {
	if len(stored) != len(desired) {
		return false
	}
	for k, v := range stored {
		d, ok := desired[k]
		if !ok || !Matches(v, d) {
			return false
		}
	}
	return true
}

// ArgvEqual reports whether the stored argv (redacted) stands for desired:
// the same words in the same order, a redacted word matching its plain
// value, also in the --flag=value spelling.
func ArgvEqual(stored, desired []string) bool {
	if len(stored) != len(desired) {
		return false
	}
	for i := range stored {
		if !argMatches(stored[i], desired[i]) {
			return false
		}
	}
	return true
}

func argMatches(stored, plain string) bool {
	if Matches(stored, plain) {
		return true
	}
	sn, sv, ok1 := strings.Cut(stored, "=")
	pn, pv, ok2 := strings.Cut(plain, "=")
	return ok1 && ok2 && sn == pn && strings.HasPrefix(sn, "-") && Matches(sv, pv)
}

// SensitivePaths splits Server.Sensitive into env keys and argv indices.
func SensitivePaths(paths []string) (env map[string]bool, argv map[int]bool) {
	env, argv = map[string]bool{}, map[int]bool{}
	for _, p := range paths {
		if k, ok := strings.CutPrefix(p, "env."); ok {
			env[k] = true
			continue
		}
		if i, ok := strings.CutPrefix(p, "argv["); ok {
			if n, err := strconv.Atoi(strings.TrimSuffix(i, "]")); err == nil {
				argv[n] = true
			}
		}
	}
	return env, argv
}

// redactPaths redacts the values at s.Sensitive's paths (reusing prev's
// redactions) and returns the plain values it hid, so that the observed
// command line can be cleaned of them too.
func redactPaths(s, prev *Server) []string {
	if len(s.Sensitive) == 0 {
		return nil
	}
	envKeys, argvIdx := SensitivePaths(s.Sensitive)
	var plain []string
	if len(envKeys) > 0 && s.Env != nil {
		env := make(map[string]string, len(s.Env))
		for k, v := range s.Env {
			if envKeys[k] && !IsRedacted(v) {
				plain = append(plain, v)
				v = redactAgainst(v, prev.Env[k])
			}
			env[k] = v
		}
		s.Env = env
	}
	if len(argvIdx) > 0 {
		argv := slices.Clone(s.Argv)
		for i := range argv {
			if !argvIdx[i] {
				continue
			}
			var p string
			if i < len(prev.Argv) {
				p = prev.Argv[i]
			}
			var v string
			argv[i], v = redactWord(argv[i], p)
			if v != "" {
				plain = append(plain, v)
			}
		}
		s.Argv = argv
	}
	return plain
}

// redactWord redacts one argv word: the value of "--flag=value", else the
// whole word. It returns the plain value it hid ("" when already redacted).
func redactWord(word, prev string) (string, string) {
	if name, val, ok := strings.Cut(word, "="); ok && strings.HasPrefix(name, "-") {
		if IsRedacted(val) {
			return word, ""
		}
		_, pv, _ := strings.Cut(prev, "=")
		return name + "=" + redactAgainst(val, pv), val
	}
	if IsRedacted(word) {
		return word, ""
	}
	return redactAgainst(word, prev), word
}

// redactWords redacts every word of argv that holds one of the plain values
// (the observed /proc cmdline repeats the argv's secrets in its own layout).
func redactWords(argv, plain, prev []string) []string {
	if len(plain) == 0 || argv == nil {
		return argv
	}
	out := slices.Clone(argv)
	for i, w := range out {
		for _, v := range plain {
			if v != "" && strings.Contains(w, v) {
				var p string
				if i < len(prev) {
					p = prev[i]
				}
				out[i], _ = redactWord(w, p)
				break
			}
		}
	}
	return out
}
