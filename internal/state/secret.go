package state

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"strings"
)

// Secrets (API keys, tokens, passwords) never reach the state file in plain
// text. They are stored as "sha256:<salt>:<hash>" with a random 8-byte salt
// per value and hash = sha256(salt || value): a changed secret is still seen
// as a change, and a short password cannot be looked up in a precomputed
// table. The salt makes the stored string differ between two redactions of
// the same value, so redact against the previous record (the prev argument)
// to get identical strings for an unchanged secret; then plain string
// comparison of argv and env tells what changed.

const redactedPrefix = "sha256:"

// secretWords are the name segments that mark a secret. Names are split on
// '-', '_' and '.', so HF_TOKEN, OPENAI_API_KEY and --api-key are secrets,
// while TOKENIZERS_PARALLELISM and --max-num-batched-tokens are not (a plain
// substring match would hide those and make plan diffs unreadable).
var secretWords = map[string]bool{
	"key": true, "apikey": true, "token": true, "secret": true, "secrets": true,
	"password": true, "passwd": true, "credential": true, "credentials": true,
}

// IsSecretName reports whether an environment variable or flag name (leading
// dashes allowed) names a secret.
func IsSecretName(name string) bool {
	name = strings.ToLower(strings.TrimLeft(name, "-"))
	for _, seg := range strings.FieldsFunc(name, func(r rune) bool { return r == '-' || r == '_' || r == '.' }) {
		if secretWords[seg] {
			return true
		}
	}
	return false
}

// IsRedacted reports whether v has the form RedactValue produces.
func IsRedacted(v string) bool {
	salt, sum, ok := splitRedacted(v)
	return ok && len(salt) == 8 && len(sum) == sha256.Size
}

func splitRedacted(v string) (salt, sum []byte, ok bool) {
	rest, ok := strings.CutPrefix(v, redactedPrefix)
	if !ok {
		return nil, nil, false
	}
	s, h, ok := strings.Cut(rest, ":")
	if !ok {
		return nil, nil, false
	}
	salt, err1 := hex.DecodeString(s)
	sum, err2 := hex.DecodeString(h)
	if err1 != nil || err2 != nil {
		return nil, nil, false
	}
	return salt, sum, true
}

// RedactValue returns the stored form of a secret value, salted at random.
// A value that is already redacted is returned unchanged.
func RedactValue(v string) string {
	if IsRedacted(v) {
		return v
	}
	salt := make([]byte, 8)
	_, _ = rand.Read(salt) // crypto/rand.Read never fails on Linux
	return redactWith(salt, v)
}

func redactWith(salt []byte, v string) string {
	h := sha256.New()
	h.Write(salt)
	h.Write([]byte(v))
	return redactedPrefix + hex.EncodeToString(salt) + ":" + hex.EncodeToString(h.Sum(nil))
}

// Matches reports whether the stored value stored stands for plain: equal
// strings, or a redaction of plain.
func Matches(stored, plain string) bool {
	if stored == plain {
		return true
	}
	salt, sum, ok := splitRedacted(stored)
	if !ok {
		return false
	}
	h := sha256.New()
	h.Write(salt)
	h.Write([]byte(plain))
	return subtle.ConstantTimeCompare(h.Sum(nil), sum) == 1
}

// redactAgainst redacts plain, reusing prev when prev already stands for it.
func redactAgainst(plain, prev string) string {
	if prev != "" && IsRedacted(prev) && Matches(prev, plain) {
		return prev
	}
	return RedactValue(plain)
}

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
