package rehearsal

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/engine/refdata"
)

// An emulation of Python's argparse over an engine version's real flag list:
// the flags, aliases, choices and nargs come from the reference help text
// (engine.ParseHelp, so the rehearsal engine accepts exactly what `roofline
// flags` lists), the value types from the reference flag table. Errors are
// argparse's: the usage block, then "PROG: error: MESSAGE", exit status 2.

// argSpec is the parser of one engine version.
type argSpec struct {
	kind, version string
	prog          string // "vllm serve", "launch_server.py"
	usage         string // the "usage: ..." block as --help prints it
	help          string // the full help (vLLM 0.16: --help=all)
	helpShort     string // plain --help
	flags         *engine.FlagSet
	order         map[*engine.Flag][]string // option strings in the order the help prints them
	types         map[string]string         // primary name → type column of the flag table
	defaults      map[string]string         // primary name → default column
	required      []*engine.Flag
	opts          []string // every option string, sorted
}

var (
	specMu    sync.Mutex
	specCache = map[string]*argSpec{}
)

// specFor returns the parser of kind@version, or an error naming the known versions.
func specFor(kind, version string) (*argSpec, error) {
	specMu.Lock()
	defer specMu.Unlock()
	key := kind + "@" + version
	if s, ok := specCache[key]; ok {
		return s, nil
	}
	help, ok := refdata.Help(kind, version)
	if !ok {
		return nil, unknownVersionError(kind, version)
	}
	fs, err := engine.ParseHelp(help)
	if err != nil {
		return nil, fmt.Errorf("rehearsal: reading the reference help of %s: %v", key, err)
	}
	short, _ := refdata.HelpShort(kind, version)
	s := &argSpec{kind: kind, version: version, help: help, helpShort: short, flags: fs,
		types: map[string]string{}, defaults: map[string]string{}}
	s.prog = "vllm serve"
	if kind == KindSGLang {
		s.prog = "launch_server.py"
	}
	s.usage = usageBlock(help)
	s.order = invocationOrder(help, fs)
	if raw, ok := refdata.CSV(kind, version); ok {
		s.readTypes(raw)
	}
	for _, f := range fs.Flags {
		if strings.HasPrefix(s.defaults[f.Name], "(required)") {
			s.required = append(s.required, f)
		}
	}
	s.opts = fs.OptionStrings()
	specCache[key] = s
	return s, nil
}

func unknownVersionError(kind, version string) error {
	var known []string
	for _, k := range refdata.Kinds() {
		for _, v := range refdata.Versions(k) {
			known = append(known, k+"@"+v)
		}
	}
	return fmt.Errorf("rehearsal: no reference flag list for %s@%s; the rehearsal engine emulates %s. "+
		"Pin one of these versions in the engine block", kind, version, strings.Join(known, ", "))
}

// usageBlock is the text before the first blank line.
func usageBlock(help string) string {
	if i := strings.Index(help, "\n\n"); i >= 0 {
		return help[:i+1]
	}
	return help
}

// invocationOrder reads the option strings of each flag in help order
// ("--tp-size N, --tensor-parallel-size N"): argparse names a flag in errors
// by joining them with "/".
func invocationOrder(help string, fs *engine.FlagSet) map[*engine.Flag][]string {
	out := map[*engine.Flag][]string{}
	for _, line := range strings.Split(help, "\n") {
		if !strings.HasPrefix(line, "  -") {
			continue
		}
		inv := strings.TrimSpace(line)
		if i := strings.Index(inv, "  "); i >= 0 {
			inv = inv[:i]
		}
		var opts []string
		for _, part := range splitTop(inv) {
			tok, _, _ := strings.Cut(strings.TrimSpace(part), " ")
			if strings.HasPrefix(tok, "-") {
				opts = append(opts, tok)
			}
		}
		if len(opts) == 0 {
			continue
		}
		if f := fs.Lookup(opts[0]); f != nil {
			if _, seen := out[f]; !seen {
				out[f] = opts
			}
		}
	}
	return out
}

// splitTop splits on ", " outside braces and brackets.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{', '[', '(':
			depth++
		case '}', ']', ')':
			depth--
		case ',':
			if depth == 0 && i+1 < len(s) && s[i+1] == ' ' {
				out = append(out, s[start:i])
				start = i + 2
			}
		}
	}
	return append(out, s[start:])
}

func (s *argSpec) readTypes(raw []byte) {
	r := csv.NewReader(bytes.NewReader(raw))
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err != nil {
		return
	}
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return
		}
		if err != nil || len(rec) <= col["type"] {
			continue
		}
		f := s.flags.Lookup(rec[col["flag"]])
		if f == nil {
			continue
		}
		s.types[f.Name] = rec[col["type"]]
		if i, ok := col["default"]; ok && i < len(rec) {
			s.defaults[f.Name] = rec[i]
		}
	}
}

// actionName is how argparse names a flag in an error: its option strings joined by "/".
func (s *argSpec) actionName(f *engine.Flag) string {
	if o, ok := s.order[f]; ok {
		return strings.Join(o, "/")
	}
	return strings.Join(f.OptionStrings(), "/")
}

// dest is argparse's attribute name of a flag.
func dest(f *engine.Flag) string {
	return strings.ReplaceAll(strings.TrimLeft(f.Name, "-"), "-", "_")
}

// Args are the parsed values: each given flag's values by dest, and the positionals.
type Args struct {
	values map[string][]string
	flags  map[string]*engine.Flag
	Pos    []string
}

// Has reports whether the flag (a dest or an option string) was given.
func (a *Args) Has(name string) bool { _, ok := a.values[normDest(name)]; return ok }

// Str returns the (last) value of a flag, or def.
func (a *Args) Str(name, def string) string {
	v, ok := a.values[normDest(name)]
	if !ok || len(v) == 0 {
		return def
	}
	return v[len(v)-1]
}

// Strings returns all values of a nargs flag.
func (a *Args) Strings(name string) []string { return a.values[normDest(name)] }

// Bool returns a switch's value: true when given, false for --no-x.
func (a *Args) Bool(name string) bool { return a.Str(name, "") == "true" }

// Int returns an integer flag (human-readable suffixes understood), or def.
func (a *Args) Int(name string, def int) int {
	v := a.Str(name, "")
	if v == "" || v == "None" {
		return def
	}
	if n, ok := humanInt(v); ok {
		return int(n)
	}
	return def
}

// Float returns a float flag, or def.
func (a *Args) Float(name string, def float64) float64 {
	v := a.Str(name, "")
	if v == "" || v == "None" {
		return def
	}
	if f, ok := pyFloatParse(v); ok {
		return f
	}
	return def
}

// Given returns the dests of the flags given, sorted (vLLM logs them as "non-default args").
func (a *Args) Given() []string {
	out := make([]string, 0, len(a.values))
	for k := range a.values {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func normDest(name string) string {
	return strings.ReplaceAll(strings.TrimLeft(name, "-"), "-", "_")
}

// argError is an argparse failure: exit status 2 after usage + message.
type argError struct{ msg string }

func (e *argError) Error() string { return e.msg }

// format is what argparse writes to stderr.
func (s *argSpec) format(e *argError) string {
	return s.usage + s.prog + ": error: " + e.msg + "\n"
}

var reNegNumber = regexp.MustCompile(`^-\d+$|^-\d*\.\d+$`)

// isOption reports whether argparse reads arg as an option (its 'O'
// pattern) rather than a value.
func (s *argSpec) isOption(arg string) bool {
	switch {
	case !strings.HasPrefix(arg, "-") || arg == "-":
		return false
	case s.flags.Lookup(arg) != nil:
		return true
	case reNegNumber.MatchString(arg):
		return false
	case strings.Contains(arg, " "):
		return false
	}
	return true
}

// resolve finds the flag for an option string: exact, vLLM's "_" spelling,
// a unique prefix of a long option, or a known single-dash option with its
// value attached ("-O3"). explicit is a value given in the same string.
func (s *argSpec) resolve(arg string) (f *engine.Flag, opt, explicit string, hasExplicit bool, err error) {
	opt = arg
	if i := strings.IndexByte(arg, '='); i > 0 {
		opt, explicit, hasExplicit = arg[:i], arg[i+1:], true
	}
	if f = s.flags.Lookup(opt); f != nil && (s.kind == KindVLLM || !strings.Contains(opt, "_") || hasOpt(f, opt)) {
		return f, opt, explicit, hasExplicit, nil
	}
	f = nil
	var hits []string
	var hitFlag *engine.Flag
	switch {
	case strings.HasPrefix(opt, "--"):
		for _, o := range s.opts {
			if strings.HasPrefix(o, opt) {
				hits = append(hits, o)
				hitFlag = s.flags.Lookup(o)
			}
		}
	case len(opt) > 2:
		// "-O3": a two-character option with its value attached.
		if g := s.flags.Lookup(opt[:2]); g != nil && !hasExplicit {
			return g, opt[:2], opt[2:], true, nil
		}
		for _, o := range s.opts {
			if !strings.HasPrefix(o, "--") && strings.HasPrefix(o, opt) {
				hits = append(hits, o)
				hitFlag = s.flags.Lookup(o)
			}
		}
	}
	switch {
	case len(hits) == 1:
		return hitFlag, hits[0], explicit, hasExplicit, nil
	case len(hits) > 1:
		return nil, opt, "", false, &argError{fmt.Sprintf("ambiguous option: %s could match %s", opt, strings.Join(hits, ", "))}
	}
	return nil, opt, explicit, hasExplicit, nil
}

func hasOpt(f *engine.Flag, opt string) bool {
	for _, o := range f.OptionStrings() {
		if o == opt {
			return true
		}
	}
	return false
}

// normalizeVLLM applies FlexibleArgumentParser's rewriting: "--max_model_len"
// is "--max-model-len" (only the name before "=" or the first ".").
func normalizeVLLM(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "--" {
			copy(out[i:], args[i:])
			break
		}
		if strings.HasPrefix(a, "--") {
			name, rest, hasEq := strings.Cut(a, "=")
			head, tail, dotted := strings.Cut(name, ".")
			name = strings.ReplaceAll(head, "_", "-")
			if dotted {
				name += "." + tail
			}
			if hasEq {
				name += "=" + rest
			}
			a = name
		}
		out[i] = a
	}
	return out
}

// parse parses args as the engine's argparse parser does. maxPos is the
// number of positionals the parser takes (vLLM serve: the optional model_tag).
func (s *argSpec) parse(args []string, maxPos int) (*Args, error) {
	if s.kind == KindVLLM {
		args = normalizeVLLM(args)
	}
	a := &Args{values: map[string][]string{}, flags: map[string]*engine.Flag{}}
	var extras []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			for _, p := range args[i+1:] {
				if len(a.Pos) < maxPos {
					a.Pos = append(a.Pos, p)
				} else {
					extras = append(extras, p)
				}
			}
			break
		}
		if !s.isOption(arg) {
			if len(a.Pos) < maxPos {
				a.Pos = append(a.Pos, arg)
			} else {
				extras = append(extras, arg)
			}
			continue
		}
		f, opt, explicit, hasExplicit, err := s.resolve(arg)
		if err != nil {
			return nil, err
		}
		if f == nil && s.kind == KindVLLM && strings.Contains(opt, ".") {
			// Dotted keys build a JSON value of a JSON flag: --compilation-config.level 3.
			if base := s.flags.Lookup(opt[:strings.IndexByte(opt, '.')]); base != nil && base.TakesValue {
				if !hasExplicit {
					if i+1 >= len(args) || s.isOption(args[i+1]) {
						return nil, &argError{fmt.Sprintf("argument %s: expected one argument", s.actionName(base))}
					}
					i++
				}
				a.values[dest(base)] = append(a.values[dest(base)], "{dotted}")
				continue
			}
		}
		if f == nil {
			extras = append(extras, arg)
			continue
		}
		name := s.actionName(f)
		d := dest(f)
		a.flags[d] = f
		if !f.TakesValue {
			if hasExplicit {
				return nil, &argError{fmt.Sprintf("argument %s: ignored explicit argument %s", name, pyStrRepr(explicit))}
			}
			if f.Negatable && strings.HasPrefix(opt, "--no-") && opt != f.Name {
				a.values[d] = []string{"false"}
			} else {
				a.values[d] = []string{"true"}
			}
			continue
		}
		var vals []string
		switch {
		case hasExplicit:
			vals = []string{explicit}
		case f.NArgs == "+" || f.NArgs == "*":
			for i+1 < len(args) && !s.isOption(args[i+1]) && args[i+1] != "--" {
				i++
				vals = append(vals, args[i])
			}
			if len(vals) == 0 && f.NArgs == "+" {
				return nil, &argError{fmt.Sprintf("argument %s: expected at least one argument", name)}
			}
		case f.NArgs == "?":
			if i+1 < len(args) && !s.isOption(args[i+1]) && args[i+1] != "--" {
				i++
				vals = []string{args[i]}
			}
		default:
			if i+1 >= len(args) || s.isOption(args[i+1]) || args[i+1] == "--" {
				return nil, &argError{fmt.Sprintf("argument %s: expected one argument", name)}
			}
			i++
			vals = []string{args[i]}
		}
		for _, v := range vals {
			if err := s.checkValue(f, name, v); err != nil {
				return nil, err
			}
		}
		if f.NArgs == "+" || f.NArgs == "*" {
			a.values[d] = vals // argparse's store action keeps the last occurrence
		} else {
			a.values[d] = append(a.values[d], vals...)
		}
	}
	var missing []string
	for _, f := range s.required {
		if !a.Has(dest(f)) {
			missing = append(missing, s.actionName(f))
		}
	}
	if len(missing) > 0 {
		return nil, &argError{"the following arguments are required: " + strings.Join(missing, ", ")}
	}
	if len(extras) > 0 {
		return nil, &argError{"unrecognized arguments: " + strings.Join(extras, " ")}
	}
	return a, nil
}

// checkValue applies the flag's type and choices, with argparse's messages.
func (s *argSpec) checkValue(f *engine.Flag, name, v string) error {
	typ := s.types[f.Name]
	optional := s.kind == KindVLLM && s.defaults[f.Name] == "None"
	if optional && (v == "None" || v == "") {
		return nil
	}
	base, _, _ := strings.Cut(typ, " ")
	bad := func(pyType string) error {
		if optional {
			return &argError{fmt.Sprintf("argument %s: Value %s cannot be converted to <class '%s'>.", name, v, pyType)}
		}
		return &argError{fmt.Sprintf("argument %s: invalid %s value: %s", name, pyType, pyStrRepr(v))}
	}
	switch {
	case strings.HasPrefix(typ, "int ("):
		if strings.Contains(typ, "auto") && (v == "auto" || v == "-1") {
			break
		}
		if _, ok := humanInt(v); !ok {
			fn := "human_readable_int"
			if strings.Contains(typ, "auto") {
				fn = "human_readable_int_or_auto"
			}
			return &argError{fmt.Sprintf("argument %s: invalid %s value: %s", name, fn, pyStrRepr(v))}
		}
	case base == "int" || strings.HasPrefix(typ, "list[int]"):
		if _, ok := pyInt(v); !ok {
			return bad("int")
		}
	case base == "float" || strings.HasPrefix(typ, "tuple tuple[float"):
		if _, ok := pyFloatParse(v); !ok {
			return bad("float")
		}
	}
	if len(f.Choices) > 0 {
		for _, c := range f.Choices {
			if c == v {
				return nil
			}
		}
		return &argError{fmt.Sprintf("argument %s: invalid choice: %s (choose from %s)", name, pyStrRepr(v), quoteChoices(f.Choices))}
	}
	return nil
}

// quoteChoices lists choices as Python 3.12's argparse does: repr of each.
func quoteChoices(cs []string) string {
	q := make([]string, len(cs))
	for i, c := range cs {
		q[i] = pyStrRepr(c)
	}
	return strings.Join(q, ", ")
}

// pyStrRepr is Python's repr() of a str (single quotes unless the string has one).
func pyStrRepr(s string) string {
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		return `"` + strings.ReplaceAll(s, `\`, `\\`) + `"`
	}
	var b strings.Builder
	b.WriteByte('\'')
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\'':
			b.WriteString(`\'`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// pyInt parses like Python's int(str): spaces, a sign, digits with single underscores.
func pyInt(v string) (int64, bool) {
	t := strings.TrimSpace(v)
	sign := int64(1)
	if t != "" && (t[0] == '+' || t[0] == '-') {
		if t[0] == '-' {
			sign = -1
		}
		t = t[1:]
	}
	if t == "" || t[0] == '_' || t[len(t)-1] == '_' || strings.Contains(t, "__") {
		return 0, false
	}
	t = strings.ReplaceAll(t, "_", "")
	for _, c := range t {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		return 0, false
	}
	return sign * n, true
}

// pyFloatParse parses like Python's float(str).
func pyFloatParse(v string) (float64, bool) {
	t := strings.TrimSpace(v)
	switch strings.ToLower(strings.TrimLeft(t, "+-")) {
	case "inf", "infinity":
		if strings.HasPrefix(t, "-") {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	case "nan":
		return math.NaN(), true
	}
	if t == "" || strings.ContainsAny(t, "xXpP") || strings.HasPrefix(strings.TrimLeft(t, "+-"), "_") ||
		strings.HasSuffix(t, "_") || strings.Contains(t, "__") {
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(t, "_", ""), 64)
	return f, err == nil
}

var reHuman = regexp.MustCompile(`^(\d+(?:\.\d+)?)([kKmMgGtT])$`)

// humanInt is vLLM's human_readable_int: "32k" = 32000, "32K" = 32768,
// "25.6k" = 25600 (no decimals with binary suffixes), else int().
func humanInt(v string) (int64, bool) {
	t := strings.TrimSpace(v)
	if m := reHuman.FindStringSubmatch(t); m != nil {
		dec := map[string]float64{"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
		bin := map[string]int64{"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
		if mult, ok := dec[m[2]]; ok {
			f, _ := strconv.ParseFloat(m[1], 64)
			return int64(f * mult), true
		}
		n, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil {
			return 0, false
		}
		return n * bin[m[2]], true
	}
	return pyInt(t)
}
