// Package refdata embeds the reference help texts and flag lists of the engine
// versions roofline knows offline (vLLM 0.8.5 and 0.16.0, SGLang 0.5.6.post2).
//
// The texts are what those versions print, rendered by Python's argparse from
// their real flag lists (see shared/reference/engines). The rehearsal engine
// prints them so that it behaves like the version it emulates, tests parse
// them, and plan can use them as an offline hint when an engine is not installed.
package refdata

import (
	"embed"
	"sort"
)

//go:embed data
var files embed.FS

// entry names the files of one engine version.
type entry struct {
	help      string // full flag list: vLLM --help=all (or --help before 0.11), SGLang --help
	helpShort string // plain --help; "" when it is the same as help
	csv       string
}

// known maps kind → version → files. Kinds are the config's ("vllm", "sglang").
var known = map[string]map[string]entry{
	"vllm": {
		"0.8.5":  {help: "vllm-0.8.5.serve-help.txt", csv: "vllm_flags_0.8.5.csv"},
		"0.16.0": {help: "vllm-0.16.0.serve-help-all.txt", helpShort: "vllm-0.16.0.serve-help.txt", csv: "vllm_flags_0.16.0.csv"},
	},
	"sglang": {
		"0.5.6.post2": {help: "sglang-0.5.6.post2.launch-server-help.txt", csv: "sglang_flags_0.5.6.post2.csv"},
	},
}

func read(name string) (string, bool) {
	if name == "" {
		return "", false
	}
	b, err := files.ReadFile("data/" + name)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// Help returns the help text that lists every flag of kind at version: for
// vLLM 0.16.0 the output of `vllm serve --help=all`, for vLLM 0.8.5 `vllm
// serve --help`, for SGLang `python -m sglang.launch_server --help`.
func Help(kind, version string) (text string, ok bool) {
	e, ok := known[kind][version]
	if !ok {
		return "", false
	}
	return read(e.help)
}

// HelpShort returns what a plain --help prints. For vLLM 0.16.0 that is only
// the usage and the list of config groups; for the others it is the same as Help.
func HelpShort(kind, version string) (text string, ok bool) {
	e, ok := known[kind][version]
	if !ok {
		return "", false
	}
	if e.helpShort == "" {
		return read(e.help)
	}
	return read(e.helpShort)
}

// HasHelpAll reports whether kind at version understands `--help=all` (vLLM
// versions whose plain --help lists only groups). Older versions reject it
// with argparse's exit status 2.
func HasHelpAll(kind, version string) bool {
	e, ok := known[kind][version]
	return ok && kind == "vllm" && e.helpShort != ""
}

// CSV returns the flag table of kind at version, read from the engine's source.
func CSV(kind, version string) ([]byte, bool) {
	e, ok := known[kind][version]
	if !ok {
		return nil, false
	}
	b, err := files.ReadFile("data/" + e.csv)
	return b, err == nil
}

// Versions returns the versions of kind with reference data, oldest first.
func Versions(kind string) []string {
	out := make([]string, 0, len(known[kind]))
	for v := range known[kind] {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return naturalLess(out[i], out[j]) })
	return out
}

// naturalLess orders strings with their digit runs compared as numbers, so
// that 0.8.5 sorts before 0.16.0.
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, ra := digits(a)
		db, rb := digits(b)
		switch {
		case da != "" && db != "":
			if len(da) != len(db) {
				return len(da) < len(db)
			}
			if da != db {
				return da < db
			}
			a, b = ra, rb
		case a[0] != b[0]:
			return a[0] < b[0]
		default:
			a, b = a[1:], b[1:]
		}
	}
	return len(a) < len(b)
}

// digits splits s into its leading digit run (without leading zeros) and the rest.
func digits(s string) (run, rest string) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	run = s[:i]
	for len(run) > 1 && run[0] == '0' {
		run = run[1:]
	}
	return run, s[i:]
}

// Kinds returns the engine kinds with reference data, sorted.
func Kinds() []string {
	out := make([]string, 0, len(known))
	for k := range known {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
