// Package secret is what roofline knows about sensitive values: which names
// say secret, the salted hash that stands for a value wherever it is stored
// or shown, and a Set of plain values that output is masked against.
//
// A value is sensitive when it comes from a variable declared
// `sensitive = true`, from an attribute or map key whose name says secret
// (IsName), or from a host secret (env_from_file, env_from_host). It may be
// used to start an engine; everywhere else (plans, plan files, state,
// journal, logs, errors) only Hash(value) or the word "(sensitive value)"
// appears.
package secret

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"strings"
)

// Shown is what a sensitive value is rendered as for people.
const Shown = "(sensitive value)"

// ShownChanged is a sensitive value that changed.
const ShownChanged = "(sensitive value changed)"

const hashPrefix = "sha256:"

// words are the name segments that mark a secret. Names are split on '-',
// '_' and '.', so HF_TOKEN, OPENAI_API_KEY, api_key and --api-key are
// secrets, while TOKENIZERS_PARALLELISM and --max-num-batched-tokens are not
// (a plain substring match would hide those and make plan diffs unreadable).
var words = map[string]bool{
	"key": true, "apikey": true, "token": true, "secret": true, "secrets": true,
	"password": true, "passwd": true, "credential": true, "credentials": true,
}

// places are name endings that say the value is where a secret is kept,
// not the secret: api_key_file and HF_TOKEN_PATH hold paths, which plans
// show so that a reviewer sees which file the host must have.
var places = map[string]bool{"file": true, "path": true, "dir": true}

// IsName reports whether an environment variable, attribute or flag name
// (leading dashes allowed) names a secret.
func IsName(name string) bool {
	name = strings.ToLower(strings.TrimLeft(name, "-"))
	segs := strings.FieldsFunc(name, func(r rune) bool { return r == '-' || r == '_' || r == '.' })
	if len(segs) > 1 && places[segs[len(segs)-1]] {
		return false
	}
	for _, seg := range segs {
		if words[seg] {
			return true
		}
	}
	return false
}

// Secrets are stored as "sha256:<salt>:<hash>" with a random 8-byte salt per
// value and hash = sha256(salt || value): a changed secret is still seen as
// a change, and a short password cannot be looked up in a precomputed table.
// The salt makes two hashes of one value differ, so hash against the
// previous record (HashAgainst) to keep an unchanged secret byte-equal.

// IsHash reports whether v has the form Hash produces.
func IsHash(v string) bool {
	salt, sum, ok := split(v)
	return ok && len(salt) == 8 && len(sum) == sha256.Size
}

func split(v string) (salt, sum []byte, ok bool) {
	rest, ok := strings.CutPrefix(v, hashPrefix)
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

// Hash returns the stored form of a value, salted at random. A value that
// is already a hash is returned unchanged.
func Hash(v string) string {
	if IsHash(v) {
		return v
	}
	salt := make([]byte, 8)
	_, _ = rand.Read(salt) // crypto/rand.Read never fails on Linux
	return HashWith(salt, v)
}

// HashWith hashes v with a given salt (for fixtures).
func HashWith(salt []byte, v string) string {
	h := sha256.New()
	h.Write(salt)
	h.Write([]byte(v))
	return hashPrefix + hex.EncodeToString(salt) + ":" + hex.EncodeToString(h.Sum(nil))
}

// Matches reports whether stored stands for plain: equal strings, or a
// hash of plain.
func Matches(stored, plain string) bool {
	if stored == plain {
		return true
	}
	salt, sum, ok := split(stored)
	if !ok {
		return false
	}
	h := sha256.New()
	h.Write(salt)
	h.Write([]byte(plain))
	return subtle.ConstantTimeCompare(h.Sum(nil), sum) == 1
}

// HashAgainst hashes plain, reusing prev when prev already stands for it.
func HashAgainst(plain, prev string) string {
	if prev != "" && IsHash(prev) && Matches(prev, plain) {
		return prev
	}
	return Hash(plain)
}
