package config

import (
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/roofline/roofline/internal/secret"
)

// Secrets returns every plain sensitive value of the configuration: the
// values of sensitive variables, and of attributes and map keys whose names
// say secret (api_key, env.HF_TOKEN; secret.IsName). Renderers and writers
// mask output against this set; host secrets (env_from_file, env_from_host)
// join it when they are read.
func (c *Config) Secrets() *secret.Set {
	s := secret.NewSet(c.SensitiveValues()...)
	s.Add(c.secrets...)
	return s
}

// noteSecrets records the strings of v that are secret: under a marked
// (sensitive) path, or under an attribute or object/map key whose name says
// secret.
func (d *decoder) noteSecrets(name string, marked cty.Value, pvm []cty.PathValueMarks) {
	v, _ := marked.UnmarkDeep()
	into := map[string]bool{}
	switch {
	case name == "env_from_file" || name == "env_from_host":
		// Where host secrets are (paths, variable names), not the secrets:
		// plans show them so a reviewer sees what the host must have.
	case secret.IsName(name):
		collectStrings(v, into)
	default:
		collectNamedSecrets(v, into)
	}
	for _, pm := range pvm {
		if _, ok := pm.Marks[SensitiveMark]; !ok {
			continue
		}
		if sub, err := pm.Path.Apply(v); err == nil {
			collectStrings(sub, into)
		}
	}
	for s := range into {
		d.cfg.secrets = append(d.cfg.secrets, s)
	}
	sort.Strings(d.cfg.secrets)
	d.cfg.secrets = slices.Compact(d.cfg.secrets)
}

// collectNamedSecrets collects the strings under keys whose name says
// secret, at any depth (env = { HF_TOKEN = "..." }).
func collectNamedSecrets(v cty.Value, into map[string]bool) {
	if !v.IsKnown() || v.IsNull() {
		return
	}
	ty := v.Type()
	switch {
	case ty.IsMapType() || ty.IsObjectType():
		for it := v.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			if k.Type() == cty.String && secret.IsName(k.AsString()) {
				collectStrings(ev, into)
			} else {
				collectNamedSecrets(ev, into)
			}
		}
	case ty.IsListType() || ty.IsSetType() || ty.IsTupleType():
		for it := v.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			collectNamedSecrets(ev, into)
		}
	}
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// checkSecrets: secrets in extra_args are refused (they would sit on the
// engine's command line, which every local user reads through ps), and the
// host-secret attributes are checked.
func checkSecrets(cfg *Config) hcl.Diagnostics {
	var ds diags
	errorf := ds.errorf
	for _, name := range cfg.ServerNames() {
		s := cfg.Servers[name]
		for i, a := range s.ExtraArgs {
			flag, val, inline := strings.Cut(a, "=")
			if !strings.HasPrefix(flag, "-") || !secret.IsName(flag) {
				continue
			}
			// The value is masked wherever roofline prints, the
			// diagnostic's own snippet included.
			if !inline && i+1 < len(s.ExtraArgs) {
				val = s.ExtraArgs[i+1]
			}
			if val != "" {
				cfg.secrets = append(cfg.secrets, val)
			}
			errorf(s.Range("extra_args"), "Secret in extra_args",
				"extra_args[%d] is %s: a secret there would be on the engine's command line, which every user of this host can read (ps, /proc/PID/cmdline), and in plans. %s",
				i, flag, secretAdvice(flag))
		}
		for k, p := range s.EnvFromFile {
			switch {
			case !envName.MatchString(k):
				errorf(s.Range("env_from_file"), "Invalid environment variable name", "%q in env_from_file is not a variable name (letters, digits and _, not starting with a digit).", k)
			case !filepath.IsAbs(p):
				errorf(s.Range("env_from_file"), "Relative secret file path",
					"env_from_file.%s is %q: give the absolute path of the file on the host that runs apply (such as \"/etc/roofline/hf_token\"), read only when the engine starts.", k, p)
			}
			if _, dup := s.Env[k]; dup {
				errorf(s.Range("env_from_file"), "Variable set twice", "%s is in both env and env_from_file; keep one.", k)
			}
		}
		for _, k := range s.EnvFromHost {
			if !envName.MatchString(k) {
				errorf(s.Range("env_from_host"), "Invalid environment variable name", "%q in env_from_host is not a variable name.", k)
			}
			if _, dup := s.Env[k]; dup {
				errorf(s.Range("env_from_host"), "Variable set twice", "%s is in both env and env_from_host; keep one.", k)
			}
			if _, dup := s.EnvFromFile[k]; dup {
				errorf(s.Range("env_from_host"), "Variable set twice", "%s is in both env_from_file and env_from_host; keep one.", k)
			}
		}
	}
	return ds.Diagnostics
}

// secretAdvice says what to use instead of a secret flag.
func secretAdvice(flag string) string {
	f := strings.ToLower(strings.TrimLeft(flag, "-"))
	switch {
	case strings.Contains(f, "api-key") || strings.Contains(f, "api_key"):
		return "Set the server's api_key attribute instead (vLLM receives it as VLLM_API_KEY, off its command line), from a sensitive variable or env_from_file."
	case strings.Contains(f, "hf") || strings.Contains(f, "hugging"):
		return "Give the token in the environment instead: env_from_file = { HF_TOKEN = \"/etc/roofline/hf_token\" } (read on the host at apply), or env = { HF_TOKEN = var.hf_token } with a sensitive variable."
	}
	return "Pass it through the environment instead (env_from_file, env_from_host, or env with a sensitive variable), if the engine reads it from there."
}
