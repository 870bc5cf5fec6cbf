package cli

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/views"
)

func init() {
	register(&Command{
		Name:     "validate",
		Synopsis: "Check the configuration files",
		Usage:    views.UsageValidate,
		Run:      runValidate,
	})
}

func runValidate(m *Meta, args []string) int {
	fs := newFlags("validate")
	jsonOut := fs.Bool("json", false, "")
	vars := varFlags(fs)
	if !parseFlags(m, fs, args) || !setVars(m, "validate", *vars) {
		return ExitError
	}
	if fs.NArg() > 0 {
		return usageError(m, "validate", fmt.Sprintf("unexpected argument %q; validate reads the current directory (use -chdir=DIR before the command)", fs.Arg(0)))
	}
	// As Terraform's validate: variables without a value are unknown, and
	// what depends on them is not checked.
	in := m.inputs()
	in.Partial = true
	cfg, diags := config.LoadDirInputs(".", in)
	m.noteSecrets(cfg)
	var files map[string]*hcl.File
	if cfg != nil {
		files = cfg.Files
	}
	views.NewValidate(views.TypeOf(*jsonOut), m.view()).Results(files, diags)
	if diags.HasErrors() {
		return ExitError
	}
	return ExitOK
}
