package plan

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/roofline/roofline/internal/state"
)

// A saved plan is sealed with the state directory's plan key
// (state.Filesystem.PlanKey, 0600):
//
//   - mac is HMAC-SHA256 over the plan's canonical JSON (the file as Save
//     writes it, with mac empty). Any edit — an argv changed to /bin/sh, a
//     port, a hash — changes it, and apply refuses the file.
//   - sealed_secrets holds the plain sensitive values apply must start the
//     engines with, encrypted (AES-256-GCM). The rest of the file shows only
//     their salted hashes. Host secrets are not in it: apply reads them.
//
// Separate keys for the two are derived from the plan key.

// ErrTampered is a plan file that does not verify.
var ErrTampered = errors.New("the plan file does not match what roofline plan wrote")

func derive(key []byte, label string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(label))
	return m.Sum(nil)
}

func macOf(j *JSONPlan, key []byte) (string, error) {
	c := *j
	c.MAC = ""
	b, err := json.Marshal(&c)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, derive(key, "roofline plan file mac"))
	m.Write(b)
	return "hmac-sha256:" + hex.EncodeToString(m.Sum(nil)), nil
}

// seal fills j.SealedSecrets and j.MAC.
func seal(j *JSONPlan, p *Plan, key []byte) error {
	if len(key) == 0 {
		return errors.New("no plan key: saved plans are sealed with the state directory's key (this is a bug in roofline)")
	}
	plain := map[string]map[string]string{}
	for _, c := range p.Changes {
		d := c.After
		if d == nil || len(d.Sensitive) == 0 && d.APIKey == "" {
			continue
		}
		envKeys, argvIdx := state.SensitivePaths(d.Sensitive)
		vals := map[string]string{}
		for k := range envKeys {
			if v, ok := d.Env[k]; ok {
				if _, host := d.EnvFrom[k]; !host {
					vals["env."+k] = v
				}
			}
		}
		for i := range argvIdx {
			if i < len(d.Argv) {
				vals[argvPath(i)] = d.Argv[i]
			}
		}
		if d.APIKey != "" {
			vals[apiKeyPath] = d.APIKey
		}
		if len(vals) > 0 {
			plain[c.Addr] = vals
		}
	}
	if len(plain) > 0 {
		b, _ := json.Marshal(plain)
		gcm, err := newGCM(key)
		if err != nil {
			return err
		}
		nonce := make([]byte, gcm.NonceSize())
		_, _ = rand.Read(nonce)
		j.SealedSecrets = base64.StdEncoding.EncodeToString(gcm.Seal(nonce, nonce, b, nil))
	}
	mac, err := macOf(j, key)
	if err != nil {
		return err
	}
	j.MAC = mac
	return nil
}

func newGCM(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(derive(key, "roofline plan file secrets"))
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// unseal checks j.MAC and returns the sealed plain values.
func unseal(j *JSONPlan, key []byte) (map[string]map[string]string, error) {
	if j.MAC == "" {
		return nil, fmt.Errorf("%w: it has no seal. Make it again with roofline plan -out", ErrTampered)
	}
	want, err := macOf(j, key)
	if err != nil {
		return nil, err
	}
	if !hmac.Equal([]byte(want), []byte(j.MAC)) {
		return nil, fmt.Errorf("%w: it was edited after it was saved, or saved with another state directory (each keeps its own plan key). "+
			"Nothing was applied. Make the plan again with roofline plan -out, on this host", ErrTampered)
	}
	if j.SealedSecrets == "" {
		return nil, nil
	}
	raw, err := base64.StdEncoding.DecodeString(j.SealedSecrets)
	gcm, gerr := newGCM(key)
	if err != nil || gerr != nil || len(raw) < gcm.NonceSize() {
		return nil, fmt.Errorf("%w: its sealed secrets are damaged", ErrTampered)
	}
	b, err := gcm.Open(nil, raw[:gcm.NonceSize()], raw[gcm.NonceSize():], nil)
	if err != nil {
		return nil, fmt.Errorf("%w: its sealed secrets do not open with this state directory's key", ErrTampered)
	}
	var plain map[string]map[string]string
	if err := json.Unmarshal(b, &plain); err != nil {
		return nil, fmt.Errorf("%w: its sealed secrets are damaged", ErrTampered)
	}
	return plain, nil
}

// restorePlain puts the unsealed values back at their paths.
func restorePlain(p *Plan, plain map[string]map[string]string) {
	for _, c := range p.Changes {
		vals := plain[c.Addr]
		if c.After == nil || len(vals) == 0 {
			continue
		}
		d := c.After
		for path, v := range vals {
			if path == apiKeyPath {
				d.APIKey = v
				continue
			}
			if k, ok := strings.CutPrefix(path, "env."); ok && d.Env != nil {
				d.Env[k] = v
				continue
			}
			_, idx := state.SensitivePaths([]string{path})
			for i := range idx {
				if i < len(d.Argv) {
					d.Argv[i] = v
				}
			}
		}
	}
}
