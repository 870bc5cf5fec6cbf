package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/suggest"
)

func init() {
	register(&Command{
		Name:     "flags",
		Synopsis: "List the flags of an installed engine",
		Usage: `Usage: roofline flags ENGINE [QUERY] [-json] [-refresh]

  Lists the flags of the engine that the engine block ENGINE runs, read from
  its own --help (vLLM: "serve --help=all", or "serve --help" before 0.11;
  SGLang: "launch_server --help"), with their aliases, value, choices, default
  and whether they are deprecated. The probe is cached in the state directory
  until the engine's executable changes.

  QUERY keeps the flags whose name, an alias or the help contains it ("_" and
  "-" alike): flags that match by name first, then by help. It may start
  with dashes.

    roofline flags vllm_016 max-model-len
    roofline flags vllm_016 --max-model-len -json

Options:
  -json      Print a JSON array: name, aliases, metavar, choices, suggested,
             default (null when the engine prints none), deprecated,
             takes_value, nargs, negatable, group, help.
  -refresh   Probe the engine again instead of using the cache.
` + varsUsage,
		Run: runFlags,
	})
}

// selfExecutable is roofline's own path: the rehearsal engine runs it.
var selfExecutable = os.Executable

// flagsRunner runs the probe commands; tests keep the real one and point the
// engine at a stand-in script.
var flagsRunner engine.Runner = probeRunner()

func runFlags(m *Meta, args []string) int {
	fs := newFlags("flags")
	jsonOut := fs.Bool("json", false, "")
	refresh := fs.Bool("refresh", false, "")
	// A query is often a flag itself ("--max-model-len"): only -json and
	// -refresh are options here, everything else is an argument.
	var opts, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case strings.HasPrefix(a, "-") && (name == "json" || name == "refresh"):
			opts = append(opts, a)
		case strings.HasPrefix(a, "-") && (name == "var" || name == "var-file"):
			opts = append(opts, a)
			if !hasValue && i+1 < len(args) {
				i++
				opts = append(opts, args[i])
			}
		case a != "--":
			pos = append(pos, a)
		}
	}
	if !parseConfigFlags(m, fs, opts) {
		return ExitError
	}
	if len(pos) < 1 || len(pos) > 2 {
		return usageError(m, "flags", "expected an engine block name and at most one query, such as: roofline flags vllm_016 max-model-len")
	}
	name, query := pos[0], ""
	if len(pos) == 2 {
		query = pos[1]
	}
	cfg, ok := loadConfig(m)
	if !ok {
		return ExitError
	}
	e := cfg.Engines[strings.TrimPrefix(name, "engine.")]
	if e == nil {
		names := cfg.EngineNames()
		list := "The configuration has no engine blocks."
		if len(names) > 0 {
			list = "Engine blocks: " + strings.Join(names, ", ") + "."
		}
		fmt.Fprintf(m.Err, "Error: no engine block named %q.%s\n\n%s\n", name, suggest.DidYouMean(name, names), list)
		return ExitError
	}
	self, err := selfExecutable()
	if err != nil {
		fmt.Fprintf(m.Err, "Error: cannot find roofline's own executable: %v\n", err)
		return ExitError
	}
	inst, err := engine.Probe(context.Background(), e, self, flagsRunner, filepath.Join(stateDir(cfg), "probes"), *refresh)
	if err != nil {
		fmt.Fprintf(m.Err, "Error: %v\n", err)
		return ExitError
	}
	if !engine.SameVersion(e.Version, inst.Version) {
		fmt.Fprintf(m.Err, "Warning: engine %q pins %s %s, but %s is installed; these are the flags of %s.\n\n",
			e.Name, engine.KindName(e.Kind), e.Version, inst.Version, inst.Name())
	}
	found := inst.Flags.Filter(query)
	if *jsonOut {
		b, err := flagsJSON(found)
		if err != nil {
			fmt.Fprintf(m.Err, "Error: %v\n", err)
			return ExitError
		}
		fmt.Fprintln(m.Out, string(b))
		return ExitOK
	}
	if len(found) == 0 {
		fmt.Fprintf(m.Err, "Error: no flag of %s matches %q.%s\n\nRun \"roofline flags %s\" for the full list.\n",
			inst.Name(), query, suggest.DidYouMean("--"+strings.TrimLeft(query, "-"), inst.Flags.OptionStrings()), e.Name)
		return ExitError
	}
	writeFlags(m.Out, inst, found, query)
	return ExitOK
}

// flagJSON is one flag in -json output.
type flagJSON struct {
	Name       string   `json:"name"`
	Aliases    []string `json:"aliases"`
	Metavar    string   `json:"metavar"`
	Choices    []string `json:"choices"`
	Suggested  []string `json:"suggested"`
	Default    *string  `json:"default"`
	Deprecated bool     `json:"deprecated"`
	TakesValue bool     `json:"takes_value"`
	NArgs      string   `json:"nargs"`
	Negatable  bool     `json:"negatable"`
	Group      string   `json:"group"`
	Help       string   `json:"help"`
}

// flagsJSON renders flags as the -json array; lists are never null.
func flagsJSON(flags []*engine.Flag) ([]byte, error) {
	out := make([]flagJSON, 0, len(flags))
	for _, f := range flags {
		j := flagJSON{Name: f.Name, Aliases: nonNil(f.Aliases), Metavar: f.Metavar, Choices: nonNil(f.Choices),
			Suggested: nonNil(f.Suggested), Deprecated: f.Deprecated, TakesValue: f.TakesValue, NArgs: f.NArgs,
			Negatable: f.Negatable, Group: f.Group, Help: f.Help}
		if f.HasDefault {
			d := f.Default
			j.Default = &d
		}
		out = append(out, j)
	}
	return json.MarshalIndent(out, "", "  ")
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// writeFlags prints flags for people: a header naming the install, then per
// flag its option strings and value, help, choices and default.
func writeFlags(w io.Writer, inst *engine.Installed, flags []*engine.Flag, query string) {
	fmt.Fprintf(w, "%s, from %q\n", inst.Name(), inst.HelpCommand)
	if query == "" {
		fmt.Fprintf(w, "%d flags\n", len(flags))
	} else {
		fmt.Fprintf(w, "%d of %d flags match %q\n", len(flags), len(inst.Flags.Flags), query)
	}
	for _, f := range flags {
		head := strings.Join(f.OptionStrings(), ", ")
		if v := valueText(f); v != "" {
			head += "  " + v
		}
		var tags []string
		if f.Group != "" {
			tags = append(tags, f.Group)
		}
		if f.Deprecated {
			tags = append(tags, "DEPRECATED")
		}
		if len(tags) > 0 {
			head += "  [" + strings.Join(tags, ", ") + "]"
		}
		fmt.Fprintf(w, "\n%s\n", head)
		for _, l := range wrapWords(f.Help, 76) {
			fmt.Fprintf(w, "    %s\n", l)
		}
		if len(f.Choices) > 0 && !strings.HasPrefix(valueText(f), "{") {
			fmt.Fprintf(w, "    choices: %s\n", strings.Join(f.Choices, ", "))
		}
		if len(f.Suggested) > 0 {
			fmt.Fprintf(w, "    suggested (not enforced): %s\n", strings.Join(f.Suggested, ", "))
		}
		if f.HasDefault {
			fmt.Fprintf(w, "    default: %s\n", f.Default)
		}
	}
}

// valueText is the value a flag takes, as argparse shows it: "N", "[N]",
// "N [N ...]", "{a,b}"; a long choice list or a hint becomes VALUE (listed
// below instead).
func valueText(f *engine.Flag) string {
	if !f.TakesValue {
		return ""
	}
	mv := f.Metavar
	short := len(f.Choices) > 0 && len(mv) <= 50
	if strings.HasPrefix(mv, "{") && !short || mv == "" {
		mv = "VALUE"
	}
	switch f.NArgs {
	case "?":
		return "[" + mv + "]"
	case "*":
		return "[" + mv + " ...]"
	case "+":
		return mv + " [" + mv + " ...]"
	case "...":
		return "..."
	case "":
		return mv
	}
	return mv + " ×" + f.NArgs
}

// wrapWords wraps text at width columns on spaces.
func wrapWords(text string, width int) []string {
	var lines []string
	cur := ""
	for _, w := range strings.Fields(text) {
		if cur != "" && len(cur)+1+len(w) > width {
			lines = append(lines, cur)
			cur = w
			continue
		}
		if cur != "" {
			cur += " "
		}
		cur += w
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}
