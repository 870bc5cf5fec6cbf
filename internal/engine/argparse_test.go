package engine

import (
	"strings"
	"unicode/utf8"
)

// This file renders a FlagSet the way Python's argparse HelpFormatter (3.11,
// with vLLM's "(default: ...)" suffix) prints it at a given COLUMNS, so tests
// can check that the parser reads the same flags at any terminal width. It
// follows argparse.HelpFormatter._format_action and textwrap.TextWrapper
// (break_on_hyphens, break_long_words, drop_whitespace); a cross-check
// against Python 3.11's own output matched byte for byte.

// helpStyle selects how option strings are printed.
type helpStyle int

const (
	stylePy311   helpStyle = iota // "-tp N, --tensor-parallel-size N"
	stylePy313                    // "-tp, --tensor-parallel-size N" (metavar once)
	styleWrapInv                  // py311, but long invocations broken onto indented lines
)

func formatArgparse(fs *FlagSet, columns int, style helpStyle) string {
	width := columns - 2
	maxHelpPos := min(24, max(width-20, 4))
	const indent = 2

	type entry struct {
		inv  string
		help string
	}
	sections := map[string][]entry{}
	actionMax := len("-h, --help") + indent
	add := func(group string, e entry) {
		sections[group] = append(sections[group], e)
		if style != styleWrapInv {
			actionMax = max(actionMax, utf8.RuneCountInString(e.inv)+indent)
		}
	}
	add("", entry{"-h, --help", "show this help message and exit"})
	for _, f := range fs.Flags {
		help := f.Help
		if f.HasDefault {
			help += " (default: " + f.Default + ")"
		}
		add(f.Group, entry{invocation(f, style), help})
	}
	if style == styleWrapInv {
		actionMax = 2 * maxHelpPos // every long invocation goes on its own line(s)
	}
	helpPos := min(actionMax+2, maxHelpPos)
	helpWidth := max(width-helpPos, 11)
	actionWidth := helpPos - indent - 2

	var b strings.Builder
	b.WriteString("usage: prog [options]\n\nA description at column zero.\n")
	for _, g := range fs.Groups {
		key := g
		if g == "options" {
			key = ""
		}
		b.WriteString("\n" + g + ":\n")
		for _, e := range sections[key] {
			inv := e.inv
			lines := textwrap(e.help, helpWidth)
			if style == styleWrapInv && utf8.RuneCountInString(inv) > actionWidth {
				for i, l := range wrapInvocation(inv, width-indent) {
					ind := indent
					if i > 0 {
						ind = indent + 4
					}
					b.WriteString(strings.Repeat(" ", ind) + l + "\n")
				}
				for _, l := range lines {
					b.WriteString(strings.Repeat(" ", helpPos) + l + "\n")
				}
				continue
			}
			first := helpPos
			if utf8.RuneCountInString(inv) <= actionWidth {
				pad := actionWidth - utf8.RuneCountInString(inv)
				b.WriteString(strings.Repeat(" ", indent) + inv + strings.Repeat(" ", pad) + "  ")
				first = 0
			} else {
				b.WriteString(strings.Repeat(" ", indent) + inv + "\n")
			}
			for i, l := range lines {
				if i == 0 {
					b.WriteString(strings.Repeat(" ", first) + l + "\n")
				} else {
					b.WriteString(strings.Repeat(" ", helpPos) + l + "\n")
				}
			}
			if len(lines) == 0 && first == 0 {
				b.WriteString("\n")
			}
		}
	}
	b.WriteString("\nAn epilog: --json-arg.key value\n   --json-arg '{\"key\": 1}'\n")
	return b.String()
}

// invocation prints a flag's option strings and metavar as argparse does.
func invocation(f *Flag, style helpStyle) string {
	opts := f.OptionStrings()
	if !f.TakesValue {
		return strings.Join(opts, ", ")
	}
	mv := f.Metavar
	var args string
	switch f.NArgs {
	case "?":
		args = "[" + mv + "]"
	case "*":
		args = "[" + mv + " ...]"
	case "+":
		args = mv + " [" + mv + " ...]"
	case "...":
		args = "..."
	case "":
		args = mv
	default:
		n := 0
		for _, c := range f.NArgs {
			n = n*10 + int(c-'0')
		}
		args = strings.TrimSpace(strings.Repeat(mv+" ", n))
	}
	if style == stylePy313 {
		return strings.Join(opts, ", ") + " " + args
	}
	parts := make([]string, len(opts))
	for i, o := range opts {
		parts[i] = o + " " + args
	}
	return strings.Join(parts, ", ")
}

// wrapInvocation breaks an invocation after ", " and after commas inside a
// choice list, the way a formatter that wraps long option lines would.
func wrapInvocation(inv string, width int) []string {
	var lines []string
	cur := ""
	for _, tok := range splitKeep(inv) {
		if cur != "" && utf8.RuneCountInString(cur)+utf8.RuneCountInString(tok) > width {
			lines = append(lines, strings.TrimRight(cur, " "))
			cur = strings.TrimLeft(tok, " ")
			continue
		}
		cur += tok
	}
	return append(lines, strings.TrimRight(cur, " "))
}

// splitKeep splits s after every comma and space, keeping the separators.
func splitKeep(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == ',' || s[i] == ' ' {
			out = append(out, s[start:i+1])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// textwrap is Python's textwrap.wrap(text, width) with its defaults, after
// argparse's whitespace collapsing.
func textwrap(text string, width int) []string {
	text = strings.Join(strings.Fields(text), " ")
	if text == "" {
		return nil
	}
	// chunks, reversed as textwrap keeps them
	var chunks [][]rune
	for i, w := range strings.Split(text, " ") {
		if i > 0 {
			chunks = append(chunks, []rune(" "))
		}
		chunks = append(chunks, hyphenChunks([]rune(w))...)
	}
	for i, j := 0, len(chunks)-1; i < j; i, j = i+1, j-1 {
		chunks[i], chunks[j] = chunks[j], chunks[i]
	}
	isSpace := func(c []rune) bool { return len(c) == 1 && c[0] == ' ' }
	var lines []string
	for len(chunks) > 0 {
		var cur [][]rune
		curLen := 0
		if isSpace(chunks[len(chunks)-1]) && len(lines) > 0 {
			chunks = chunks[:len(chunks)-1]
		}
		for len(chunks) > 0 {
			l := len(chunks[len(chunks)-1])
			if curLen+l > width {
				break
			}
			cur = append(cur, chunks[len(chunks)-1])
			chunks = chunks[:len(chunks)-1]
			curLen += l
		}
		if len(chunks) > 0 && len(chunks[len(chunks)-1]) > width {
			// _handle_long_word
			spaceLeft := width - curLen // may be 0: Python then adds an empty chunk
			chunk := chunks[len(chunks)-1]
			end := spaceLeft
			if len(chunk) > spaceLeft {
				if h := lastIndexRune(chunk[:spaceLeft], '-'); h > 0 && strings.Trim(string(chunk[:h]), "-") != "" {
					end = h + 1
				}
			}
			cur = append(cur, chunk[:end])
			chunks[len(chunks)-1] = chunk[end:]
		}
		if len(cur) > 0 && strings.TrimSpace(string(cur[len(cur)-1])) == "" {
			cur = cur[:len(cur)-1]
		}
		if len(cur) > 0 {
			var s strings.Builder
			for _, c := range cur {
				s.WriteString(string(c))
			}
			lines = append(lines, s.String())
		}
	}
	return lines
}

// hyphenChunks splits a word where textwrap's wordsep_re allows a break:
// around a run of two or more hyphens that follows punctuation or a word
// character and precedes a word character (an em-dash, "'--flag'"), and
// after a hyphen preceded by two letters (or letter-hyphen-letter) and
// followed by letter, optional hyphen, letter.
func hyphenChunks(w []rune) [][]rune {
	var out [][]rune
	start := 0
	for i := 0; i < len(w); i++ {
		if w[i] != '-' {
			continue
		}
		if i > start && i+1 < len(w) && w[i+1] == '-' && isWordPunct(w[i-1]) {
			j := i
			for j < len(w) && w[j] == '-' {
				j++
			}
			if j < len(w) && isWordChar(w[j]) {
				out = append(out, w[start:i], w[i:j])
				start = j
				i = j - 1
				continue
			}
		}
		before := i >= 2 && isLetter(w[i-1]) && isLetter(w[i-2]) ||
			i >= 3 && isLetter(w[i-1]) && w[i-2] == '-' && isLetter(w[i-3])
		after := i+2 < len(w) && isLetter(w[i+1]) &&
			(isLetter(w[i+2]) || w[i+2] == '-' && i+3 < len(w) && isLetter(w[i+3]))
		if before && after {
			out = append(out, w[start:i+1])
			start = i + 1
		}
	}
	return append(out, w[start:])
}

func lastIndexRune(r []rune, c rune) int {
	for i := len(r) - 1; i >= 0; i-- {
		if r[i] == c {
			return i
		}
	}
	return -1
}
