package engine

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrNoFlags is returned by ParseHelp for a help text that lists no options,
// such as vLLM ≥0.11's plain `serve --help`, which prints only config groups.
var ErrNoFlags = errors.New("the help text lists no flags")

// ParseHelp reads the flags out of an argparse --help text (vLLM's `serve
// --help[=all]`, SGLang's `launch_server --help`).
//
// It does not depend on the terminal width the text was printed for: help
// text wrapped onto continuation lines is joined again (undoing textwrap's
// breaks after hyphens), and an invocation that runs onto following lines
// (an open "{a,b," choice list, a trailing comma, a line indented less than
// the help column) is joined before it is split into option strings and
// metavar. Sections are argparse's group headings ("ModelConfig:"); the
// usage, description and epilog are skipped.
func ParseHelp(text string) (*FlagSet, error) {
	p := helpParser{optIndent: -1}
	lines := strings.Split(cleanText(text), "\n")
	p.helpCol = helpColumn(lines)
	for _, line := range lines {
		p.line(line)
	}
	p.finish()
	width := 0 // textwrap's width: the longest help line
	for _, r := range p.raws {
		for _, l := range r.help {
			width = max(width, utf8.RuneCountInString(l))
		}
	}
	var flags []*Flag
	for _, r := range p.raws {
		f := buildFlag(r, width)
		if f == nil || f.Name == "--help" {
			continue
		}
		flags = resolveConflicts(flags, f)
	}
	if len(flags) == 0 {
		return nil, ErrNoFlags
	}
	return NewFlagSet(flags, p.groups), nil
}

// resolveConflicts adds f to flags the way argparse's conflict_handler
// "resolve" does when an option string is declared twice: the later
// declaration takes it, the earlier flag keeps its other option strings
// (its name passes to the first that is left) and disappears when none is
// left. Every option string then belongs to exactly one flag, so Lookup of
// a flag's own name finds that flag.
func resolveConflicts(flags []*Flag, f *Flag) []*Flag {
	taken := map[string]bool{}
	for _, o := range f.OptionStrings() {
		taken[o] = true
	}
	out := flags[:0]
	for _, g := range flags {
		opts := slices.DeleteFunc(g.OptionStrings(), func(o string) bool { return taken[o] })
		if len(opts) == 0 {
			continue
		}
		if len(opts) != len(g.Aliases)+1 {
			g.Name, g.Aliases = primaryOf(opts)
			if g.Aliases == nil {
				g.Aliases = []string{}
			}
		}
		out = append(out, g)
	}
	// f's own strings may repeat ("-c, -c"): keep the first of each.
	seen := map[string]bool{f.Name: true}
	f.Aliases = slices.DeleteFunc(slices.Clone(f.Aliases), func(o string) bool {
		dup := seen[o]
		seen[o] = true
		return dup
	})
	if f.Aliases == nil {
		f.Aliases = []string{}
	}
	return append(out, f)
}

// primaryOf picks the name of a flag from its remaining option strings: the
// first long one, else the first.
func primaryOf(opts []string) (string, []string) {
	for i, o := range opts {
		if strings.HasPrefix(o, "--") {
			return o, append(slices.Clone(opts[:i]), opts[i+1:]...)
		}
	}
	return opts[0], slices.Clone(opts[1:])
}

type helpParser struct {
	helpCol   int // column where help text starts; shorter indents continue an invocation
	inSection bool
	group     string
	skipItems bool // positional arguments, "Config Groups": items are not options
	optIndent int  // indent of option lines in the current section (-1: none seen)

	cur    *rawFlag
	raws   []*rawFlag
	groups []string
}

// rawFlag is one option entry while its lines are gathered.
type rawFlag struct {
	inv      string   // invocation: option strings and metavars
	help     []string // help lines, trimmed
	group    string
	contLine int // invocation continuation lines taken so far
}

func (p *helpParser) line(line string) {
	body := strings.TrimLeft(line, " ")
	ind := len(line) - len(body)
	body = strings.TrimRight(body, " ")
	if body == "" {
		if p.cur != nil {
			p.cur.contLine = maxInvLines // a blank line ends an open invocation
		}
		return
	}
	cur := p.cur
	if cur != nil && cur.invOpen() && !(ind == p.optIndent && isOptionStart(body)) {
		p.appendInv(body)
		return
	}
	if ind == 0 {
		p.finish()
		if title, ok := heading(body); ok {
			p.startSection(title)
		} else {
			p.inSection = false // usage, description, epilog
		}
		return
	}
	if !p.inSection || p.skipItems {
		return
	}
	if isOptionStart(body) && ind <= 8 && (p.optIndent < 0 || ind == p.optIndent) {
		p.finish()
		p.optIndent = ind
		p.cur = &rawFlag{group: p.group}
		p.appendInv(body)
		return
	}
	if cur == nil {
		return // a group description
	}
	if len(cur.help) == 0 && ind < p.helpCol && ind > p.optIndent && cur.contLine < maxInvLines {
		p.appendInv(body)
		return
	}
	cur.help = append(cur.help, body)
}

// maxInvLines bounds how far an invocation may run on, so that a stray "{"
// cannot swallow the rest of the text.
const maxInvLines = 64

func (p *helpParser) startSection(title string) {
	p.inSection = true
	p.optIndent = -1
	low := strings.ToLower(title)
	p.skipItems = strings.HasPrefix(low, "positional") || low == "config groups"
	switch low {
	case "options", "optional arguments":
		p.group = ""
	default:
		p.group = title
	}
	if !p.skipItems {
		p.groups = append(p.groups, title)
	}
}

// appendInv adds text to the current invocation. Once its brackets are
// balanced, anything after a run of two spaces is the first help line.
func (p *helpParser) appendInv(text string) {
	cur := p.cur
	if cur.inv != "" {
		cur.contLine++
		sep := " "
		if depth(cur.inv) > 0 && (strings.HasSuffix(cur.inv, ",") || strings.HasPrefix(text, ",") || strings.HasPrefix(text, "}")) {
			sep = "" // a choice list broken after a comma
		}
		cur.inv += sep + text
	} else {
		cur.inv = text
	}
	if i := helpGap(cur.inv); i >= 0 {
		rest := strings.TrimSpace(cur.inv[i:])
		cur.inv = cur.inv[:i]
		if rest != "" {
			cur.help = append(cur.help, rest)
		}
	}
}

// invOpen reports whether the invocation must continue on the next line.
func (r *rawFlag) invOpen() bool {
	if len(r.help) > 0 || r.contLine >= maxInvLines {
		return false
	}
	return depth(r.inv) > 0 || strings.HasSuffix(r.inv, ",")
}

func (p *helpParser) finish() {
	if p.cur != nil {
		p.raws = append(p.raws, p.cur)
		p.cur = nil
	}
}

// buildFlag turns a gathered entry into a Flag; nil when it names no option.
// width is the help text's wrap width.
func buildFlag(r *rawFlag, width int) *Flag {
	names, mv := splitInvocation(r.inv)
	if len(names) == 0 {
		return nil
	}
	f := &Flag{Group: r.group, Choices: []string{}}
	base, nargs := metavarShape(mv)
	f.TakesValue = len(mv) > 0
	f.NArgs = nargs
	f.Metavar = base
	if strings.HasPrefix(base, "{") && strings.HasSuffix(base, "}") {
		choices, suggested := parseChoices(base[1 : len(base)-1])
		if choices != nil {
			f.Choices = choices
		}
		f.Suggested = suggested
	}
	f.Name = primaryName(names, base)
	f.Aliases = []string{}
	for _, n := range names {
		if n != f.Name && !slices.Contains(f.Aliases, n) {
			f.Aliases = append(f.Aliases, n)
		}
	}
	if strings.HasPrefix(f.Name, "--") {
		f.Negatable = slices.Contains(names, "--no-"+f.Name[2:])
	}
	help := joinHelp(r.help, width)
	if i := strings.LastIndex(help, "(default: "); i >= 0 && strings.HasSuffix(help, ")") {
		f.Default = help[i+len("(default: ") : len(help)-1]
		f.HasDefault = true
		help = strings.TrimSpace(help[:i])
	}
	f.Help = help
	f.Deprecated = helpDeprecated(help)
	return f
}

// splitInvocation splits "-tp N, --tensor-parallel-size N" into the option
// strings and the metavar tokens (taken from the first part that has any;
// Python ≥3.13 prints the metavar only once, after the last option string).
func splitInvocation(inv string) (names, metavar []string) {
	for _, part := range splitDepth0(inv, ',') {
		var mv []string
		for _, tok := range splitDepth0(part, ' ') {
			switch {
			case tok == "":
			case isOptionToken(tok):
				if !slices.Contains(names, tok) {
					names = append(names, tok)
				}
			default:
				mv = append(mv, tok)
			}
		}
		if metavar == nil && len(mv) > 0 {
			metavar = mv
		}
	}
	return names, metavar
}

// metavarShape reads argparse's nargs back from how the metavar is printed:
// "M" (one), "[M]" (?), "[M ...]" or "[M [M ...]]" (*), "M [M ...]" (+),
// "M M" (2), "..." (REMAINDER).
func metavarShape(mv []string) (base, nargs string) {
	switch {
	case len(mv) == 0:
		return "", ""
	case len(mv) == 1 && mv[0] == "...":
		return "", "..."
	case len(mv) == 1 && strings.HasPrefix(mv[0], "[") && strings.HasSuffix(mv[0], "]"):
		inner := mv[0][1 : len(mv[0])-1]
		first := splitDepth0(inner, ' ')[0]
		if strings.HasSuffix(inner, "...") || strings.HasSuffix(inner, "...]") {
			return first, "*"
		}
		return first, "?"
	case len(mv) == 2 && strings.HasPrefix(mv[1], "[") && strings.HasSuffix(mv[1], "...]"):
		return mv[0], "+"
	case len(mv) > 1 && allEqual(mv):
		return mv[0], strconv.Itoa(len(mv))
	}
	return mv[0], ""
}

// parseChoices reads the inside of a "{...}" metavar. A plain list is
// argparse's enforced choices. A list after a prose prefix ("suggested: ",
// "... registry: ") is a hint only. A trailing parenthetical note is dropped.
// Anything else (an expression, a truncated list) yields no values.
func parseChoices(s string) (choices, suggested []string) {
	s = strings.TrimSpace(s)
	hint := false
	head := s
	if i := strings.IndexByte(s, ','); i >= 0 {
		head = s[:i]
	}
	if i := strings.LastIndex(head, ": "); i >= 0 {
		hint = true
		s = strings.TrimSpace(s[i+2:])
	}
	if strings.HasSuffix(s, ")") {
		if i := strings.LastIndex(s, " ("); i >= 0 {
			s = strings.TrimSpace(s[:i])
		}
	}
	var vals []string
	for _, v := range strings.Split(s, ",") {
		v = strings.TrimSpace(v)
		if v == "" || strings.ContainsAny(v, " \t{}[]()") {
			return nil, nil
		}
		vals = append(vals, v)
	}
	if hint {
		return nil, vals
	}
	return vals, nil
}

// primaryName picks the option that gives argparse's dest: the long option
// matching the metavar if there is one (SGLang lists "--tp-size
// TENSOR_PARALLEL_SIZE, --tensor-parallel-size ..."), else the first long
// option that is not the "--no-" twin of another.
func primaryName(names []string, metavar string) string {
	var longs []string
	for _, n := range names {
		if strings.HasPrefix(n, "--") && !(strings.HasPrefix(n, "--no-") && slices.Contains(names, "--"+n[5:])) {
			longs = append(longs, n)
		}
	}
	if len(longs) == 0 {
		for _, n := range names {
			if strings.HasPrefix(n, "--") {
				return n
			}
		}
		return names[0]
	}
	if metavar != "" && !strings.ContainsAny(metavar, "{[") {
		want := "--" + strings.ReplaceAll(strings.ToLower(metavar), "_", "-")
		if slices.Contains(longs, want) {
			return want
		}
	}
	return longs[0]
}

// joinHelp joins wrapped help lines. textwrap breaks a word after an inner
// hyphen ("wide-" / "EP") and cuts a word longer than the width (a URL) at
// the width; such breaks are joined without a space.
func joinHelp(lines []string, width int) string {
	var b strings.Builder
	for i, l := range lines {
		if i > 0 && !hyphenBreak(lines[i-1], l) && !emDashBreak(lines[i-1], l) && !longWordBreak(lines[i-1], l, width) {
			b.WriteByte(' ')
		}
		b.WriteString(l)
	}
	return b.String()
}

// emDashBreak mirrors textwrap's break after a run of hyphens that follows
// punctuation or a word character ("in '--" / "tokenizer-...'").
func emDashBreak(prev, next string) bool {
	t := strings.TrimRight(prev, "-")
	if len(prev)-len(t) < 2 || t == "" || next == "" {
		return false
	}
	last, _ := utf8.DecodeLastRuneInString(t)
	first, _ := utf8.DecodeRuneInString(next)
	return isWordPunct(last) && isWordChar(first)
}

// isWordChar is Python's \w.
func isWordChar(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// isWordPunct is textwrap's word_punct: [\w!"'&.,?].
func isWordPunct(r rune) bool { return isWordChar(r) || strings.ContainsRune("!\"'&.,?", r) }

// longWordBreak reports whether prev ends inside a word that textwrap cut
// because it was longer than the whole width: prev fills the width exactly
// and the two word parts together would not fit on any line. A line that
// ends in ":", ",", ";" or ")" is taken to end a word ("(default:" before a
// long value); at narrow widths the two cases cannot always be told apart.
func longWordBreak(prev, next string, width int) bool {
	if width <= 0 || utf8.RuneCountInString(prev) != width || strings.ContainsAny(prev[len(prev)-1:], ":,;)") {
		return false
	}
	last := prev[strings.LastIndexByte(prev, ' ')+1:]
	first, _, _ := strings.Cut(next, " ")
	return utf8.RuneCountInString(last)+utf8.RuneCountInString(first) > width
}

// hyphenBreak mirrors textwrap's rule: a word may break after a hyphen that
// follows two letters (or letter-hyphen-letter) and precedes a letter.
func hyphenBreak(prev, next string) bool {
	if !strings.HasSuffix(prev, "-") {
		return false
	}
	r := []rune(prev)
	n := len(r)
	if n < 3 {
		return false
	}
	before := isLetter(r[n-2]) && (isLetter(r[n-3]) || (r[n-3] == '-' && n >= 4 && isLetter(r[n-4])))
	if !before {
		return false
	}
	nr := []rune(next)
	if len(nr) < 2 || !isLetter(nr[0]) {
		return false
	}
	return isLetter(nr[1]) || (nr[1] == '-' && len(nr) >= 3 && isLetter(nr[2]))
}

// isLetter is Python's [^\d\W]: a word character that is not a digit.
func isLetter(r rune) bool { return r == '_' || unicode.IsLetter(r) }

func helpDeprecated(help string) bool {
	if !strings.Contains(help, "eprecat") && !strings.Contains(help, "EPRECAT") {
		return false
	}
	low := strings.ToLower(help)
	for _, p := range []string{"[deprecated]", "deprecated:", "(deprecated)", "deprecated."} {
		if strings.HasPrefix(low, p) {
			return true
		}
	}
	for _, s := range []string{"this parameter is deprecated", "this flag is deprecated", "this option is deprecated",
		"this argument is deprecated", "is deprecated and will be removed", "is deprecated as of"} {
		if strings.Contains(low, s) {
			return true
		}
	}
	return false
}

// heading recognizes an argparse section title: a short line at column 0
// ending in ":" ("options:", "ModelConfig:", "positional arguments:").
// Prose that ends in a colon is longer or has a comma.
func heading(body string) (string, bool) {
	if !strings.HasSuffix(body, ":") || len(body) > 64 || strings.ContainsAny(body, ",.`") {
		return "", false
	}
	title := strings.TrimSuffix(body, ":")
	if title == "" || len(strings.Fields(title)) > 4 || strings.HasPrefix(strings.ToLower(title), "usage") {
		return "", false
	}
	return title, true
}

// isOptionStart reports whether a line begins with an option string.
func isOptionStart(body string) bool {
	tok, _, _ := strings.Cut(body, " ")
	tok = strings.TrimSuffix(tok, ",")
	return isOptionToken(tok)
}

// isOptionToken reports whether tok looks like "-x", "-tp" or "--max-model-len".
func isOptionToken(tok string) bool {
	name := strings.TrimPrefix(tok, "-")
	if name == tok {
		return false
	}
	name = strings.TrimPrefix(name, "-")
	if name == "" || !isAlnum(name[0]) {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// splitDepth0 splits s at sep where it is outside {} and [].
func splitDepth0(s string, sep byte) []string {
	var out []string
	d, start := 0, 0
	for i := 0; i < len(s); i++ {
		if d = nest(d, s[i]); d == 0 && s[i] == sep {
			out = append(out, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

// nest returns the {} and [] depth after byte c, given d before it; a stray
// closer does not go below zero. Callers' separators are never brackets.
func nest(d int, c byte) int {
	switch c {
	case '{', '[':
		return d + 1
	case '}', ']':
		return max(d-1, 0)
	}
	return d
}

// depth is the number of {} and [] left open at the end of s.
func depth(s string) int {
	d := 0
	for i := 0; i < len(s); i++ {
		d = nest(d, s[i])
	}
	return d
}

// helpGap returns where the inline help starts after an invocation (a run of
// two or more spaces outside brackets), or -1.
func helpGap(s string) int {
	d := 0
	for i := 0; i < len(s); i++ {
		if d = nest(d, s[i]); d == 0 && s[i] == ' ' && i+1 < len(s) && s[i+1] == ' ' {
			return i
		}
	}
	return -1
}

// helpColumn finds the column help text starts at: the most common indent of
// indented lines that do not start an option (24 for argparse's defaults).
func helpColumn(lines []string) int {
	counts := map[int]int{}
	for _, l := range lines {
		body := strings.TrimLeft(l, " ")
		ind := len(l) - len(body)
		if ind > 2 && body != "" && !isOptionStart(body) {
			counts[ind]++
		}
	}
	best, bestN := 24, 0
	for ind, n := range counts {
		if n > bestN || n == bestN && ind < best {
			best, bestN = ind, n
		}
	}
	return best
}

// cleanText normalizes line ends, tabs, invalid UTF-8 and ANSI colour codes
// (Python ≥3.14 colours help on a terminal).
func cleanText(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "?")
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	s = strings.ReplaceAll(s, "\t", "        ")
	if strings.IndexByte(s, 0x1b) < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == ';') {
				j++
			}
			if j < len(s) {
				i = j // skip the final byte of the sequence too
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func allEqual(list []string) bool {
	for _, v := range list[1:] {
		if v != list[0] {
			return false
		}
	}
	return true
}
