package config

import (
	"strings"
	"testing"
)

const secretsBase = `
engine "e" {
  kind      = "vllm"
  version   = "0.16.0"
  rehearsal = true
}
model "m" {
  path = "/models/m"
}
`

func TestSecretsInExtraArgsAreErrors(t *testing.T) {
	for _, tc := range []struct{ args, want, value string }{
		{`["--api-key", "sk-1"]`, "api_key attribute", "sk-1"},
		{`["--api-key=sk-1"]`, "api_key attribute", "sk-1"},
		{`["--hf-token", "hf_1"]`, "env_from_file = { HF_TOKEN", "hf_1"},
		{`["--ssl-keyfile", "/k.pem"]`, "", ""}, // "keyfile" is not the word "key"
	} {
		src := secretsBase + `server "s" {
  engine     = engine.e
  model      = model.m
  gpus       = [0]
  port       = 8000
  extra_args = ` + tc.args + `
}
`
		cfg, diags := Load("/tmp", []string{"main.hcl"}, map[string][]byte{"main.hcl": []byte(src)})
		if tc.value != "" && (cfg == nil || !cfg.Secrets().In(tc.value)) {
			// The error's own snippet shows the line: the value must be
			// masked there as everywhere.
			t.Errorf("%s: %q is not among the configuration's secrets", tc.args, tc.value)
		}
		if tc.want == "" {
			if diags.HasErrors() {
				t.Errorf("%s: %v", tc.args, diags)
			}
			continue
		}
		if !diags.HasErrors() || diags[0].Summary != "Secret in extra_args" || !strings.Contains(diags[0].Detail, tc.want) ||
			diags[0].Subject == nil || diags[0].Subject.Start.Line != 15 {
			t.Errorf("%s: %v", tc.args, diags)
		}
	}
}

func TestSecretsCollectsNamedAndMarkedValues(t *testing.T) {
	src := secretsBase + `
variable "rev" {
  type      = string
  sensitive = true
  default   = "marked-value"
}
server "s" {
  engine        = engine.e
  model         = model.m
  gpus          = [0]
  port          = 8000
  extra_args    = ["--revision", "pre-${var.rev}"]
  env           = { HF_TOKEN = "named-value", TOKENIZERS_PARALLELISM = "false" }
  env_from_file = { OTHER_TOKEN = "/etc/roofline/t" }
  env_from_host = ["THIRD"]
}
`
	cfg, diags := Load("/tmp", []string{"main.hcl"}, map[string][]byte{"main.hcl": []byte(src)})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	set := cfg.Secrets()
	for _, v := range []string{"marked-value", "pre-marked-value", "named-value"} {
		if !set.Is(v) {
			t.Errorf("%q not in %v", v, set.Values())
		}
	}
	if set.Is("false") {
		t.Errorf("a non-secret value is masked: %v", set.Values())
	}
	s := cfg.Servers["s"]
	if s.EnvFromFile["OTHER_TOKEN"] != "/etc/roofline/t" || len(s.EnvFromHost) != 1 {
		t.Errorf("host secrets %v %v", s.EnvFromFile, s.EnvFromHost)
	}
}

func TestHostSecretAttributesAreChecked(t *testing.T) {
	for _, tc := range []struct{ attrs, want string }{
		{`env_from_file = { T = "relative/path" }`, "Relative secret file path"},
		{`env_from_file = { "1BAD" = "/x" }`, "Invalid environment variable name"},
		{"env_from_host = [\"HF_TOKEN\"]\n  env = { HF_TOKEN = \"x\" }", "Variable set twice"},
	} {
		src := secretsBase + "server \"s\" {\n  engine = engine.e\n  model = model.m\n  gpus = [0]\n  port = 8000\n  " + tc.attrs + "\n}\n"
		_, diags := Load("/tmp", []string{"main.hcl"}, map[string][]byte{"main.hcl": []byte(src)})
		if !diags.HasErrors() || !strings.Contains(diags.Error(), tc.want) {
			t.Errorf("%s: %v", tc.attrs, diags)
		}
	}
}
