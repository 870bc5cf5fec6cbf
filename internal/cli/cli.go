// Package cli is roofline's command line: one file per command. It is the
// only package that builds real NVML, process drivers and the clock, and passes
// interfaces down to the layers below.
package cli

import (
	"errors"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/envargs"
	"github.com/roofline/roofline/internal/logging"
	"github.com/roofline/roofline/internal/secret"
	"github.com/roofline/roofline/internal/suggest"
	"github.com/spf13/pflag"
	"golang.org/x/term"
)

// Streams are the standard streams of one invocation; tests pass buffers.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
	// OutTerminal / ErrTerminal / InTerminal say whether the streams are terminals
	// (colour, progress bars and prompts depend on it).
	OutTerminal bool
	ErrTerminal bool
	InTerminal  bool
}

// StdStreams returns the process's standard streams.
func StdStreams() Streams {
	return Streams{
		In: os.Stdin, Out: os.Stdout, Err: os.Stderr,
		OutTerminal: term.IsTerminal(int(os.Stdout.Fd())),
		ErrTerminal: term.IsTerminal(int(os.Stderr.Fd())),
		InTerminal:  term.IsTerminal(int(os.Stdin.Fd())),
	}
}

// Meta is what every command gets: streams and the global flags.
type Meta struct {
	Streams
	// Color is true when output may be coloured (-no-color unset, NO_COLOR
	// unset, stdout a terminal).
	Color bool
	// Chdir is the -chdir value ("" when not given); the process has already
	// changed into it.
	Chdir string
	// VarArgs are the -var and -var-file values of the command, in order.
	VarArgs []config.VarArg
	// InAutomation (ROOFLINE_IN_AUTOMATION set): no "run this next" advice,
	// as Terraform's TF_IN_AUTOMATION.
	InAutomation bool
	// NoInput (-input=false, or ROOFLINE_INPUT=0): never prompt; an
	// operation that needs approval fails before it renders anything.
	NoInput bool
	// NoLock (-lock=false): this operation takes no state lock.
	NoLock bool
	// CompactWarnings (-compact-warnings): one line per warning.
	CompactWarnings bool

	// diagSink, when set, collects the configuration's load-time
	// diagnostics instead of printing them: plan prints warnings after the
	// plan, and -json puts every diagnostic in its output.
	diagSink  *hcl.Diagnostics
	diagFiles map[string]*hcl.File
	// asDir: relative paths of the configuration resolve against this
	// directory (a review plan reads the checkout as the host's copy).
	asDir string

	// secrets are the plain sensitive values this command has seen (the
	// configuration's, host secrets read); Out, Err and the log are masked
	// against them, so no message, error or log line shows one.
	secrets *secret.Set
	// plainOut is stdout unmasked, for the one place a secret is printed on
	// purpose: output -raw/-json NAME, asked by name (as Terraform does).
	plainOut io.Writer
	// secretsUnknown: the command reads the state only (readsState).
	secretsUnknown bool
}

// Command is one roofline subcommand. Commands register themselves in init()
// so that each lives in its own file.
type Command struct {
	Name     string // "plan", or "state list" for a nested one
	Synopsis string // one line for `roofline help`
	Usage    string // full help text, starting with the usage line
	// Hidden commands are not listed (internal entry points such as rehearsal).
	Hidden bool
	// RawArgs passes the arguments through untouched, -h included: the
	// rehearsal engine answers its emulated program's own --help.
	RawArgs bool
	Run     func(m *Meta, args []string) int
}

// readsState are the commands that only read the state and the logs, and
// those that never start a server (init, flags, snapshot, force-unlock,
// state mv and rm): a sensitive variable they are not given stays unknown,
// so looking at a server or keeping house needs no secret (Terraform's
// init and state commands need no variables either).
var readsState = map[string]bool{"status": true, "logs": true, "show": true, "journal": true, "state list": true, "state show": true,
	"init": true, "flags": true, "snapshot": true, "force-unlock": true, "state mv": true, "state rm": true}

var commands = map[string]*Command{}

// register adds a command; each file registers its own in init.
func register(c *Command) {
	if _, dup := commands[c.Name]; dup {
		panic("cli: command registered twice: " + c.Name)
	}
	commands[c.Name] = c
}

// Exit codes shared by commands.
const (
	ExitOK      = 0
	ExitError   = 1
	ExitChanges = 2 // plan -detailed-exitcode
	ExitFmt     = 3 // fmt -check found files to change (as Terraform)
	// ExitPolicy: plan -fail-on found a change the policy forbids.
	ExitPolicy = 4
)

// Main runs roofline with args (without the program name) and returns the exit code.
func Main(args []string, streams Streams) int {
	m := &Meta{Streams: streams, secrets: secret.NewSet()}
	m.plainOut = streams.Out
	m.Out, m.Err = m.secrets.Writer(streams.Out), m.secrets.Writer(streams.Err)
	noColor := os.Getenv("NO_COLOR") != ""
	m.InAutomation = os.Getenv("ROOFLINE_IN_AUTOMATION") != ""
	switch strings.ToLower(os.Getenv("ROOFLINE_INPUT")) {
	case "0", "false":
		m.NoInput = true
	}

	// Global flags come before the command, as in Terraform.
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		name, value, hasValue := strings.Cut(strings.TrimLeft(args[0], "-"), "=")
		switch name {
		case "chdir":
			if !hasValue {
				if len(args) < 2 {
					m.view().Errorf("-chdir needs a directory: roofline -chdir=DIR COMMAND")
					return ExitError
				}
				value = args[1]
				args = args[1:]
			}
			m.Chdir = value
		case "no-color":
			noColor = true
		case "h", "help":
			args = []string{"help"}
			continue
		case "v", "version":
			args = []string{"version"}
			continue
		default:
			m.view().Errorf("unknown global flag %s.%s\n\nGlobal flags are -chdir=DIR and -no-color; they come before the command. Run \"roofline help\".",
				args[0], suggest.DidYouMeanFlag(name, []string{"chdir", "no-color", "help", "version"}))
			return ExitError
		}
		args = args[1:]
	}
	m.Color = !noColor && streams.OutTerminal
	if m.Chdir != "" {
		// Tests call Main many times in one process: put the working
		// directory back afterwards.
		if wd, err := os.Getwd(); err == nil {
			defer os.Chdir(wd)
		}
		if err := os.Chdir(m.Chdir); err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err // without Go's "chdir DIR:"
			}
			if os.IsNotExist(err) {
				m.view().Errorf("-chdir=%s: no such directory", m.Chdir)
			} else {
				m.view().Errorf("-chdir=%s: %v", m.Chdir, err)
			}
			return ExitError
		}
	}
	if len(args) == 0 {
		printHelp(m)
		return ExitError
	}

	cmd, rest := lookup(args)
	if cmd == nil {
		m.view().Errorf("unknown command %q.%s\n\nRun \"roofline help\" for the list of commands.", args[0], suggest.DidYouMean(args[0], topLevelNames()))
		return ExitError
	}
	if !cmd.Hidden && !cmd.RawArgs {
		// Engines and proxies that roofline starts inherit the environment:
		// they are hidden commands and never take these.
		env, err := envargs.For(cmd.Name)
		if err != nil {
			m.view().Errorf("%v", err)
			return ExitError
		}
		rest = append(env, rest...)
	}
	closeLog, err := logging.Setup(m.Err, m.secrets, cmd.Name)
	if err != nil {
		m.view().Errorf("%v", err)
		return ExitError
	}
	defer closeLog()
	for _, a := range rest {
		if cmd.RawArgs || a == "--" {
			break
		}
		if a == "-h" || a == "-help" || a == "--help" {
			m.view().Usage(cmd.Usage)
			return ExitOK
		}
	}
	m.secretsUnknown = readsState[cmd.Name]
	return cmd.Run(m, rest)
}

// lookup finds the longest registered command name that prefixes args
// ("state list" before "state").
func lookup(args []string) (*Command, []string) {
	for n := min(len(args), 3); n > 0; n-- {
		if c, ok := commands[strings.Join(args[:n], " ")]; ok {
			return c, args[n:]
		}
	}
	return nil, nil
}

// topLevelNames are the first words of the visible commands, sorted.
func topLevelNames() []string {
	var out []string
	for _, name := range visibleNames() {
		if first, _, _ := strings.Cut(name, " "); !slices.Contains(out, first) {
			out = append(out, first)
		}
	}
	return out
}

// visibleNames are the names of the commands that are not hidden, sorted.
func visibleNames() []string {
	var names []string
	for n, c := range commands {
		if !c.Hidden {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// newFlags returns a pflag set for a command that prints the command's usage
// on error and does not exit.
func newFlags(name string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SortFlags = false
	fs.SetOutput(io.Discard)
	return fs
}

// parseFlags parses args with fs, accepting Terraform's single-dash long flags
// (-auto-approve, -json, -chdir=DIR) as well as GNU's double dash. It prints a
// clear error and returns false on bad input.
func parseFlags(m *Meta, fs *pflag.FlagSet, args []string) bool {
	// Terraform's per-command automation flags, on every command.
	var noColor, compact bool
	input, lock := true, true
	if fs.Lookup("no-color") == nil {
		fs.BoolVar(&noColor, "no-color", false, "")
	}
	if fs.Lookup("input") == nil {
		fs.BoolVar(&input, "input", true, "")
	}
	if fs.Lookup("compact-warnings") == nil {
		fs.BoolVar(&compact, "compact-warnings", false, "")
	}
	if fs.Lookup("lock-timeout") != nil && fs.Lookup("lock") == nil {
		fs.BoolVar(&lock, "lock", true, "")
	}
	defer func() {
		if noColor {
			m.Color = false
		}
		if !input {
			m.NoInput = true
		}
		if !lock {
			m.NoLock = true
		}
		if compact {
			m.CompactWarnings = true
		}
	}()
	norm := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			norm = append(norm, args[i:]...)
			break
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' {
			name, _, _ := strings.Cut(a[1:], "=")
			if fs.Lookup(name) != nil && len(name) > 1 {
				a = "-" + a
			}
		}
		norm = append(norm, a)
	}
	if err := fs.Parse(norm); err != nil {
		msg := err.Error()
		if strings.HasPrefix(msg, "unknown flag: ") || strings.HasPrefix(msg, "unknown shorthand flag") {
			var names []string
			fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
			bad := strings.TrimPrefix(msg, "unknown flag: ")
			if i := strings.LastIndex(bad, " in "); i >= 0 {
				bad = bad[i+4:]
			}
			msg = "unknown flag " + bad + "." + suggest.DidYouMeanFlag(strings.TrimLeft(bad, "-"), names)
			if n, _, _ := strings.Cut(strings.TrimLeft(bad, "-"), "="); n == "chdir" {
				msg = "-chdir is a global option: put it before the command: roofline -chdir=DIR " + fs.Name()
			}
			for _, a := range args {
				if strings.TrimLeft(a, "-") == strings.TrimLeft(bad, "-") {
					if from := envargs.Origin(fs.Name(), a); from != "" {
						msg += " It comes from " + from + "."
					}
					break
				}
			}
		}
		m.view().UsageError(fs.Name(), msg)
		return false
	}
	return true
}

// usageError prints msg and the command's usage hint and returns ExitError.
func usageError(m *Meta, cmd, msg string) int {
	m.view().UsageError(cmd, msg)
	return ExitError
}
