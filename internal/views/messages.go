package views

import "fmt"

// UnknownSubcommand says that a command group (state, model) has no such
// subcommand, with a suggestion (hint, "" for none).
func (v *View) UnknownSubcommand(group, sub, hint string) {
	fmt.Fprintf(v.Err, "Error: unknown command \"%s %s\".%s\n\n", group, sub, hint)
}

// UsageErr prints a command group's help text to stderr: it was run
// without a subcommand.
func (v *View) UsageErr(text string) { fmt.Fprint(v.Err, text) }

// DiagnoseNeedsConfig follows the configuration's errors when diagnose
// SERVER cannot find the state directory.
func (v *View) DiagnoseNeedsConfig(name string) {
	fmt.Fprintf(v.Err, "\nroofline diagnose %s reads the configuration to find the state directory: run it where the .hcl files are (or with -chdir=DIR), or give the log with -file LOG.\n", name)
}
