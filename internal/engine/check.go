package engine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/roofline/roofline/internal/suggest"
)

// checkRendered looks every rendered flag up in the installed flag list. It
// returns the flags it found, so extra_args cannot set them a second time.
func (r *renderer) checkRendered(args []arg) map[*Flag]arg {
	owned := map[*Flag]arg{}
	for _, a := range args {
		rng := r.rangeOf(a.attr)
		f := r.inst.Flags.Lookup(a.flag)
		what := "Attribute " + a.attr + " renders " + a.flag
		if a.attr == "" || a.why != "" {
			what = "roofline adds " + a.flag + " because " + a.why
		}
		if f == nil {
			r.errorf(rng, "Flag not supported by the installed engine", "%s, which %s does not have.%s",
				what, r.engineName(), r.unknownHint(a.flag))
			continue
		}
		owned[f] = a
		if f.Deprecated {
			r.warnf(rng, "Deprecated flag", "%s, which %s marks deprecated: %s", what, r.engineName(), shortHelp(f))
		}
		if (a.attr == "tool_call_parser" || a.attr == "reasoning_parser") && len(a.values) == 1 {
			r.checkParser(a.attr, f, a.values[0])
			continue
		}
		for _, v := range a.values {
			if len(f.Choices) > 0 && !slices.Contains(f.Choices, v) {
				r.errorf(rng, "Invalid value for "+a.attr, "%s accepts %s %s; %q is not one of them.%s",
					r.engineName(), f.Name, strings.Join(f.Choices, ", "), v, suggest.DidYouMean(v, f.Choices))
			}
		}
	}
	return owned
}

// checkParser checks a tool-call or reasoning parser name. The names come
// from the registries roofline has read for this version, else from the
// flag's argparse choices; with neither, any name is accepted.
func (r *renderer) checkParser(attr string, f *Flag, name string) {
	tool, reasoning, known := KnownParsers(r.kind, r.inst.Version)
	valid := reasoning
	what := "reasoning parser"
	if attr == "tool_call_parser" {
		valid, what = tool, "tool-call parser"
	}
	if !known {
		valid = f.Choices
	}
	if len(valid) == 0 || slices.Contains(valid, name) {
		return
	}
	hint := suggest.DidYouMean(name, valid)
	if other, ok := parserAcrossEngines[otherEngine(r.kind)+":"+name]; ok && slices.Contains(valid, other) {
		hint = fmt.Sprintf(" %q is %s's name; %s calls it %q.", name, KindName(otherEngine(r.kind)), KindName(r.kind), other)
	}
	r.errorf(r.rangeOf(attr), "Unknown "+what, "%s has no %s named %q.%s Valid names: %s.",
		r.engineName(), what, name, hint, strings.Join(valid, ", "))
}

// unknownHint explains an option the installed engine does not have: when
// it was removed, the other engine's name for it, or the nearest real one.
func (r *renderer) unknownHint(opt string) string {
	if rm, ok := RemovedFlag(r.kind, opt); ok {
		return fmt.Sprintf(" It was removed %s; %s.", rm.In, rm.Use)
	}
	if h := crossHint(r.kind, opt); h != "" {
		return " " + h
	}
	if c := suggest.Closest(opt, r.inst.Flags.OptionStrings()); c != "" {
		return fmt.Sprintf(" Did you mean %q?", c)
	}
	return fmt.Sprintf(" Run \"roofline flags %s\" to list its flags.", r.e.Name)
}

// checkExtra parses extra_args the way argparse would and checks each flag:
// unknown, ambiguous abbreviation, missing value, value outside the choices,
// deprecated, or a flag roofline already renders from an attribute.
func (r *renderer) checkExtra(owned map[*Flag]arg) {
	toks := r.s.ExtraArgs
	rng := r.rangeOf("extra_args")
	name := r.engineName()
	for i := 0; i < len(toks); i++ {
		tok := toks[i]
		if !isFlagToken(tok) {
			r.errorf(rng, "Unexpected value in extra_args", "extra_args has %q where a flag should be: values go right after their flag, such as [\"--max-num-seqs\", \"256\"].%s",
				tok, r.positionalHint())
			continue
		}
		if tok == "--" {
			r.errorf(rng, "Unexpected value in extra_args", "extra_args cannot contain \"--\": everything after it would reach the engine as positional arguments.")
			return
		}
		opt, inline, hasInline := strings.Cut(tok, "=")
		base, dotted := opt, false
		if r.k.dottedFlags && strings.HasPrefix(opt, "--") {
			// vLLM: "--compilation-config.level 3" sets a key of a JSON flag.
			base, _, dotted = strings.Cut(normalizeUnderscores(opt), ".")
		}
		f, ambiguous := r.inst.Flags.Resolve(base)
		abbreviated := f != nil && r.inst.Flags.Lookup(base) == nil
		if f == nil && !strings.HasPrefix(opt, "--") && len(opt) > 2 && !hasInline {
			// "-O3": a short option with its value attached.
			if g := r.inst.Flags.Lookup(opt[:2]); g != nil && g.TakesValue {
				f, inline, hasInline = g, opt[2:], true
			}
		}
		switch {
		case f == nil && len(ambiguous) > 0:
			r.errorf(rng, "Ambiguous flag in extra_args", "%s is the start of several %s flags: %s. Write the full name.", opt, name, strings.Join(ambiguous, ", "))
			i = skipValues(toks, i)
			continue
		case f == nil:
			r.errorf(rng, "Unknown flag in extra_args", "%s is not a flag of %s.%s", opt, name, r.unknownHint(opt))
			i = skipValues(toks, i)
			continue
		}
		if r.k.dashesOnly && strings.Contains(base, "_") && r.inst.Flags.get(base) == nil {
			r.errorf(rng, "Unknown flag in extra_args", "%s does not read %s: its flags use dashes. Write %s.", r.k.Display, opt, normalizeUnderscores(base))
		}
		if abbreviated {
			r.warnf(rng, "Abbreviated flag in extra_args", "%s is read as %s, an abbreviation a later %s could make ambiguous. Write %s.", opt, f.Name, KindName(r.kind), f.Name)
		}
		if o := r.k.modelOption; o != "" && f.Name == o {
			r.errorf(rng, "Flag set twice", "extra_args sets %s, but roofline passes the model path of %s as %s's positional argument. Remove %[1]s from extra_args.", o, r.m.Addr(), r.k.Display)
			i = skipValues(toks, i)
			continue
		}
		if a, dup := owned[f]; dup {
			if a.attr != "" && a.why == "" {
				r.errorf(rng, "Flag set twice", "extra_args sets %s, which roofline already renders from the attribute %s. Set it in one place: remove it from extra_args or unset %s.", opt, a.attr, a.attr)
			} else {
				r.warnf(rng, "Flag set twice", "extra_args sets %s, which roofline already adds (%s). Remove it from extra_args.", opt, a.why)
			}
		}
		if f.Deprecated {
			r.warnf(rng, "Deprecated flag in extra_args", "%s marks %s deprecated: %s", name, f.Name, shortHelp(f))
		}
		var values []string
		switch {
		case hasInline && !f.TakesValue:
			r.errorf(rng, "Flag takes no value", "%s is a switch and takes no value; write %s alone.", f.Name, opt)
			continue
		case hasInline:
			values = []string{inline}
		case dotted && !f.TakesValue:
			r.errorf(rng, "Flag takes no value", "%s is a switch, not a JSON flag: it has no keys to set with %s.", f.Name, opt)
			continue
		case dotted:
			// a dotted JSON key takes one value, not checked against choices
			_, i, _ = takeValues(toks, i, "")
			continue
		case f.TakesValue:
			var missing bool
			values, i, missing = takeValues(toks, i, f.NArgs)
			if missing {
				r.errorf(rng, "Missing value in extra_args", "%s needs a value (%s) right after it in extra_args.", opt, valueShape(f))
				continue
			}
		}
		if len(f.Choices) > 0 {
			for _, v := range values {
				if !slices.Contains(f.Choices, v) {
					r.errorf(rng, "Invalid value in extra_args", "%s accepts %s %s; %q is not one of them.%s",
						name, f.Name, strings.Join(f.Choices, ", "), v, suggest.DidYouMean(v, f.Choices))
				}
			}
		}
	}
}

// positionalHint adds the vLLM case of a stray model path.
func (r *renderer) positionalHint() string {
	if r.k.subcommand != "" { // the model path is positional
		return " The model path comes from the model block."
	}
	return ""
}

// isFlagToken reports whether an extra_args element is an option (not a
// value such as "256" or "-1").
func isFlagToken(tok string) bool {
	if len(tok) < 2 || tok[0] != '-' {
		return false
	}
	if tok == "--" {
		return true
	}
	c := tok[1]
	return !(c >= '0' && c <= '9' || c == '.')
}

// skipValues moves past the values that follow an unknown flag.
func skipValues(toks []string, i int) int {
	for i+1 < len(toks) && !isFlagToken(toks[i+1]) {
		i++
	}
	return i
}

// takeValues consumes a flag's values after position i as argparse would
// for nargs. It returns the values, the new position and whether a
// required value is missing.
func takeValues(toks []string, i int, nargs string) ([]string, int, bool) {
	var vals []string
	switch nargs {
	case "", "?":
		if i+1 < len(toks) && !isFlagToken(toks[i+1]) {
			return []string{toks[i+1]}, i + 1, false
		}
		return nil, i, nargs == ""
	case "*", "+":
		for i+1 < len(toks) && !isFlagToken(toks[i+1]) {
			i++
			vals = append(vals, toks[i])
		}
		return vals, i, nargs == "+" && len(vals) == 0
	case "...":
		return toks[i+1:], len(toks) - 1, false
	}
	n := 0
	for _, c := range nargs {
		if c < '0' || c > '9' {
			return nil, i, false
		}
		n = n*10 + int(c-'0')
	}
	for k := 0; k < n; k++ {
		if i+1 >= len(toks) || isFlagToken(toks[i+1]) {
			return vals, i, true
		}
		i++
		vals = append(vals, toks[i])
	}
	return vals, i, false
}

func valueShape(f *Flag) string {
	if len(f.Choices) > 0 {
		return "one of " + strings.Join(f.Choices, ", ")
	}
	if f.Metavar != "" {
		return f.Metavar
	}
	return "a value"
}

// shortHelp is the first sentence of a flag's help, for a warning.
func shortHelp(f *Flag) string {
	h := strings.TrimSpace(f.Help)
	if i := strings.Index(h, ". "); i > 0 && i < 200 {
		h = h[:i+1]
	}
	if len(h) > 200 {
		h = h[:200] + "…"
	}
	if h == "" {
		return "(no help text)"
	}
	return h
}
