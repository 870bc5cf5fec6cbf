package rehearsal

import (
	"strings"

	"github.com/roofline/roofline/internal/engine/refdata"
)

func refdataHasHelpAll(s *argSpec) bool { return refdata.HasHelpAll(s.kind, s.version) }

// helpSection is one titled section of an argparse help text and its entries.
type helpSection struct {
	title   string
	entries []string // each entry's lines, joined
}

// sections splits a help text into its titled sections ("options:",
// "ModelConfig:"), each entry being an option line and its help lines.
func sections(help string) []helpSection {
	var out []helpSection
	var cur *helpSection
	var entry []string
	flush := func() {
		if cur != nil && len(entry) > 0 {
			cur.entries = append(cur.entries, strings.Join(entry, "\n"))
		}
		entry = nil
	}
	for _, line := range strings.Split(help, "\n") {
		switch {
		case line != "" && line[0] != ' ' && strings.HasSuffix(line, ":"):
			flush()
			out = append(out, helpSection{title: strings.TrimSuffix(line, ":")})
			cur = &out[len(out)-1]
		case cur == nil || line == "":
			flush()
		case strings.HasPrefix(line, "  -"):
			flush()
			entry = []string{line}
		case strings.HasPrefix(line, "   ") && len(entry) > 0:
			entry = append(entry, line)
		}
	}
	flush()
	return out
}

// keywordHelp answers vLLM's --help=KEY (0.11 and later): "all" prints every
// flag, a group title prints that group, anything else the flags whose
// option strings contain it ("_" read as "-").
func (s *argSpec) keywordHelp(key string) string {
	if key == "all" {
		return s.help
	}
	secs := sections(s.help)
	for _, sec := range secs {
		if strings.EqualFold(sec.title, key) {
			return s.usage + "\n" + sec.title + ":\n" + strings.Join(sec.entries, "\n") + "\n"
		}
	}
	kw := strings.ToLower(strings.ReplaceAll(key, "_", "-"))
	var hits []string
	for _, sec := range secs {
		for _, e := range sec.entries {
			first, _, _ := strings.Cut(strings.TrimSpace(e), "\n")
			inv := first
			if i := strings.Index(inv, "  "); i >= 0 {
				inv = inv[:i]
			}
			for _, part := range splitTop(inv) {
				opt, _, _ := strings.Cut(strings.TrimSpace(part), " ")
				if strings.HasPrefix(opt, "-") && strings.Contains(strings.ToLower(opt), kw) {
					hits = append(hits, e)
					break
				}
			}
		}
	}
	if len(hits) == 0 {
		return "No group or arguments matching '" + kw + "'.\n" +
			"Use '--help' to see available groups or '--help=all' to see all available parameters.\n"
	}
	return "Arguments matching '" + kw + "':\n" + strings.Join(hits, "\n") + "\n"
}
