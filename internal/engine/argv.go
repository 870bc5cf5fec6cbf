package engine

import (
	"slices"
	"strings"
)

// ArgvFlag is one option of an argv with its values.
type ArgvFlag struct {
	Name   string
	Values []string
}

// ParseArgv splits an engine argv (after the command prefix) into positional
// words and flags, in order. A word that starts with "-" followed by a digit is
// a value (SGLang's --chunked-prefill-size -1).
func ParseArgv(argv []string) (positional []string, flags []ArgvFlag) {
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		if !isFlag(a) {
			if len(flags) > 0 {
				flags[len(flags)-1].Values = append(flags[len(flags)-1].Values, a)
			} else {
				positional = append(positional, a)
			}
			continue
		}
		name, val, hasVal := strings.Cut(a, "=")
		f := ArgvFlag{Name: name}
		if hasVal {
			f.Values = []string{val}
		}
		flags = append(flags, f)
	}
	return
}

func isFlag(a string) bool {
	if len(a) < 2 || a[0] != '-' {
		return false
	}
	if a[1] >= '0' && a[1] <= '9' || a[1] == '.' {
		return false
	}
	return true
}

// ArgvDiffAttrs returns the attributes (or "extra_args FLAG") whose values
// differ between two argvs, for a plan's "max_model_len changed" rather
// than a flag name. The argvs are compared as written: a recorded one has
// no attributes, so each flag is named through the kinds' flag tables.
func ArgvDiffAttrs(a, b []string) []string {
	fa, fb := flagValues(a), flagValues(b)
	var out []string
	for name, va := range fa {
		if vb, ok := fb[name]; !ok || !slices.Equal(va, vb) {
			out = append(out, FlagAttr(name))
		}
	}
	for name := range fb {
		if _, ok := fa[name]; !ok {
			out = append(out, FlagAttr(name))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func flagValues(argv []string) map[string][]string {
	_, flags := ParseArgv(argv)
	out := map[string][]string{}
	for _, f := range flags {
		out[f.Name] = append(out[f.Name], f.Values...)
		if len(f.Values) == 0 {
			out[f.Name] = append(out[f.Name], "")
		}
	}
	return out
}

// ArgvLines renders an argv as one line per flag with its values, for the
// flag-by-flag diff in the human plan.
func ArgvLines(argv []string) []string {
	pos, flags := ParseArgv(argv)
	var out []string
	if len(pos) > 0 {
		out = append(out, strings.Join(pos, " "))
	}
	for _, f := range flags {
		out = append(out, strings.TrimSpace(f.Name+" "+strings.Join(f.Values, " ")))
	}
	return out
}
