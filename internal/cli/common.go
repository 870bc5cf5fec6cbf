package cli

import (
	"fmt"
	"os"

	"strings"

	"github.com/spf13/pflag"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/views"
)

// loadConfig loads the configuration in the current directory (after
// -chdir) and prints its diagnostics. ok is false when there were errors.
func loadConfig(m *Meta) (cfg *config.Config, ok bool) {
	cfg, diags := config.LoadDirInputs(".", m.inputs())
	m.noteSecrets(cfg)
	if m.diagSink != nil {
		*m.diagSink = append(*m.diagSink, diags...)
		if cfg != nil {
			m.diagFiles = cfg.Files
		}
	} else if len(diags) > 0 {
		printDiags(m, cfg, diags)
	}
	return cfg, cfg != nil && !diags.HasErrors()
}

// printDiags writes diagnostics with file, line and a source snippet.
func printDiags(m *Meta, cfg *config.Config, diags hcl.Diagnostics) {
	var files map[string]*hcl.File
	if cfg != nil {
		files = cfg.Files
	}
	views.WriteDiagnostics(m.Err, files, diags, m.Color)
}

// stateDir returns the state directory of cfg (absolute).
func stateDir(cfg *config.Config) string { return cfg.StateDirPath() }

// view is the base of every command's view; built after the flags are
// parsed, since -no-color and -compact-warnings are per command.
func (m *Meta) view() *views.View {
	return &views.View{Out: m.Out, Err: m.Err, Color: m.Color, CompactWarnings: m.CompactWarnings}
}

// varFlags registers -var NAME=VALUE and -var-file=FILE (both repeatable)
// on a command. Both go to one list, in command-line order, because a later
// one wins (Terraform's precedence); setVars hands them to loadConfig.
func varFlags(fs *pflag.FlagSet) *[]string {
	vals := &[]string{}
	fs.Var(&orderedFlag{prefix: "var:", dst: vals}, "var", "")
	fs.Var(&orderedFlag{prefix: "file:", dst: vals}, "var-file", "")
	return vals
}

// orderedFlag appends prefix+value to a list shared with other flags.
type orderedFlag struct {
	prefix string
	dst    *[]string
}

func (f *orderedFlag) String() string { return "" }
func (f *orderedFlag) Type() string   { return "string" }
func (f *orderedFlag) Set(v string) error {
	*f.dst = append(*f.dst, f.prefix+v)
	return nil
}

// setVars checks the -var and -var-file values and keeps them for loadConfig.
func setVars(m *Meta, cmd string, vals []string) bool {
	for _, v := range vals {
		if file, ok := strings.CutPrefix(v, "file:"); ok {
			if file == "" {
				usageError(m, cmd, "-var-file needs a file name: -var-file=FILE")
				return false
			}
			m.VarArgs = append(m.VarArgs, config.VarArg{File: file})
			continue
		}
		kv := strings.TrimPrefix(v, "var:")
		name, value, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(name) == "" {
			usageError(m, cmd, fmt.Sprintf("-var %q: write -var NAME=VALUE", kv))
			return false
		}
		m.VarArgs = append(m.VarArgs, config.VarArg{Name: strings.TrimSpace(name), Value: value})
	}
	return true
}

// inputs are the variable inputs of the command: its -var and -var-file
// flags and the ROOFLINE_VAR_* environment.
func (m *Meta) inputs() config.Inputs {
	return config.Inputs{Args: m.VarArgs, Env: os.Environ(), AsDir: m.asDir, SecretsUnknown: m.secretsUnknown}
}

// parseConfigFlags is parseFlags for a command that reads the configuration:
// it also takes -var and -var-file, so that values the configuration depends
// on (a state_dir per host, say) are the same as for plan and apply.
func parseConfigFlags(m *Meta, fs *pflag.FlagSet, args []string) bool {
	vars := varFlags(fs)
	return parseFlags(m, fs, args) && setVars(m, fs.Name(), *vars)
}

// noteSecrets adds the configuration's sensitive values to what output is
// masked against.
func (m *Meta) noteSecrets(cfg *config.Config) {
	if cfg != nil && m.secrets != nil {
		m.secrets.Add(cfg.Secrets().Values()...)
	}
}

// readHostSecret reads an env_from_file secret (plan and apply hand it on).
var readHostSecret = plan.ReadHostSecret
