package engine

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
)

// Flag is one command-line option of an installed engine, as its --help
// describes it.
type Flag struct {
	// Name is the primary long option, e.g. "--max-model-len": the one whose
	// name gives argparse's dest (it matches the metavar when there is one).
	Name string `json:"name"`
	// Aliases are the other option strings: short ones ("-tp"), other long
	// spellings ("--tp-size") and the generated "--no-x" of a negatable flag.
	Aliases []string `json:"aliases"`
	// Metavar is the value placeholder as printed ("MAX_MODEL_LEN",
	// "{auto,fp8}"), without the nargs decoration; "" for switches.
	Metavar string `json:"metavar,omitempty"`
	// Choices are the values argparse enforces ({a,b,c} in the help).
	Choices []string `json:"choices"`
	// Suggested are values the help lists but argparse does not enforce
	// ("{suggested: a,b}", or a registry checked at startup).
	Suggested []string `json:"suggested,omitempty"`
	// Default is the text of the "(default: ...)" suffix vLLM prints;
	// HasDefault says whether there was one (SGLang prints none).
	Default    string `json:"default,omitempty"`
	HasDefault bool   `json:"has_default"`
	// Deprecated is set when the help marks the flag deprecated.
	Deprecated bool `json:"deprecated"`
	// TakesValue is false for switches (store_true, --x/--no-x).
	TakesValue bool `json:"takes_value"`
	// NArgs is argparse's nargs: "" (one value), "?", "*", "+", "..." or a count.
	NArgs string `json:"nargs,omitempty"`
	// Negatable marks a --x/--no-x pair (BooleanOptionalAction).
	Negatable bool `json:"negatable"`
	// Help is the help text, unwrapped, without the default suffix.
	Help string `json:"help"`
	// Group is the argparse group title ("ModelConfig"); "" for the
	// default options section.
	Group string `json:"group,omitempty"`
}

// OptionStrings returns the name followed by the aliases.
func (f *Flag) OptionStrings() []string {
	return append([]string{f.Name}, f.Aliases...)
}

// FlagSet is the flag list of one installed engine.
type FlagSet struct {
	Flags []*Flag `json:"flags"`
	// Groups are the section titles in the order the help printed them.
	Groups []string `json:"groups,omitempty"`

	index map[string]*Flag // every option string → its flag
}

// NewFlagSet builds a FlagSet over flags (a decoded cache record, a test).
func NewFlagSet(flags []*Flag, groups []string) *FlagSet {
	fs := &FlagSet{Flags: flags, Groups: groups}
	fs.reindex()
	return fs
}

func (fs *FlagSet) reindex() {
	fs.index = make(map[string]*Flag, len(fs.Flags)*2)
	for _, f := range fs.Flags {
		for _, o := range f.OptionStrings() {
			if _, dup := fs.index[o]; !dup {
				fs.index[o] = f
			}
		}
	}
}

// UnmarshalJSON decodes a FlagSet and builds its index, so a cached flag
// list is ready for lookups without re-parsing the help text.
func (fs *FlagSet) UnmarshalJSON(b []byte) error {
	type plain FlagSet
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*fs = FlagSet(p)
	fs.reindex()
	return nil
}

func (fs *FlagSet) get(opt string) *Flag {
	if fs.index == nil { // a FlagSet literal: scan rather than write an index under readers
		for _, f := range fs.Flags {
			if slices.Contains(f.OptionStrings(), opt) {
				return f
			}
		}
		return nil
	}
	return fs.index[opt]
}

// Lookup finds a flag by any of its option strings. It accepts "--x", "x"
// and "-tp", and vLLM's equivalence of "_" and "-" in the name
// ("--max_model_len"). It does not expand abbreviations; see Resolve.
func (fs *FlagSet) Lookup(name string) *Flag {
	if fs == nil {
		return nil
	}
	name = strings.TrimSpace(name)
	if name == "" {
		return nil
	}
	for _, c := range candidates(name) {
		if f := fs.get(c); f != nil {
			return f
		}
	}
	return nil
}

// candidates are the option strings name may stand for, most literal first.
func candidates(name string) []string {
	var out []string
	if strings.HasPrefix(name, "-") {
		out = append(out, name)
	} else {
		out = append(out, "--"+name, "-"+name)
	}
	if strings.Contains(name, "_") {
		for _, c := range out {
			out = append(out, normalizeUnderscores(c))
		}
	}
	return out
}

// normalizeUnderscores does what vLLM's FlexibleArgumentParser does to a long
// option: "_" becomes "-" between the leading "--" and the first ".".
func normalizeUnderscores(opt string) string {
	if !strings.HasPrefix(opt, "--") {
		return opt
	}
	head, tail, dotted := strings.Cut(opt[2:], ".")
	out := "--" + strings.ReplaceAll(head, "_", "-")
	if dotted {
		out += "." + tail
	}
	return out
}

// Resolve finds the flag an option string on a command line selects, as
// argparse does: an exact option string first, then a unique prefix of a
// long option (argparse's allow_abbrev). With no match it returns nil and,
// for an ambiguous prefix, the options it could mean.
func (fs *FlagSet) Resolve(opt string) (f *Flag, ambiguous []string) {
	if f := fs.Lookup(opt); f != nil {
		return f, nil
	}
	if fs == nil || !strings.HasPrefix(opt, "--") || len(opt) < 3 {
		return nil, nil
	}
	var hits []string
	seen := map[*Flag]bool{}
	for _, fl := range fs.Flags {
		for _, o := range fl.OptionStrings() {
			if strings.HasPrefix(o, opt) && !seen[fl] {
				seen[fl] = true
				hits = append(hits, o)
				f = fl
			}
		}
	}
	if len(hits) == 1 {
		return f, nil
	}
	sort.Strings(hits)
	return nil, hits
}

// Names returns every primary flag name, sorted.
func (fs *FlagSet) Names() []string {
	if fs == nil {
		return nil
	}
	out := make([]string, 0, len(fs.Flags))
	for _, f := range fs.Flags {
		out = append(out, f.Name)
	}
	sort.Strings(out)
	return out
}

// OptionStrings returns every option string of every flag, sorted: the
// candidates for "did you mean".
func (fs *FlagSet) OptionStrings() []string {
	if fs == nil {
		return nil
	}
	var out []string
	for _, f := range fs.Flags {
		out = append(out, f.OptionStrings()...)
	}
	sort.Strings(out)
	return out
}

// Filter returns the flags whose name, an alias or the help contains query
// (case-insensitive, "_" read as "-" the way vLLM's --help=KEYWORD does).
// Flags that match by name come first, then those that match only by help.
func (fs *FlagSet) Filter(query string) []*Flag {
	if fs == nil {
		return nil
	}
	q := strings.ToLower(strings.TrimSpace(query))
	if q == "" {
		return append([]*Flag(nil), fs.Flags...)
	}
	qn := strings.ReplaceAll(q, "_", "-")
	var byName, byHelp []*Flag
	for _, f := range fs.Flags {
		hit := false
		for _, o := range f.OptionStrings() {
			if strings.Contains(strings.ToLower(o), qn) {
				hit = true
				break
			}
		}
		switch {
		case hit:
			byName = append(byName, f)
		case strings.Contains(strings.ToLower(f.Help), q) || strings.Contains(strings.ToLower(f.Help), qn):
			byHelp = append(byHelp, f)
		}
	}
	return append(byName, byHelp...)
}
