package views

import (
	"bytes"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
)

// snippetWidth is the most characters of one source line a diagnostic's
// snippet shows. A longer line (a generated list, a pasted token) is cut
// around the error's column, each cut marked "…", as a terminal shows
// nothing useful of a 5,000-character line.
const snippetWidth = 120

// snippetLead is how many characters a cut line keeps before the error's
// column, so that what leads up to it stays readable.
const snippetLead = 40

const ellipsis = "…"

// secretSpans is what a masking writer (secret.Set's) tells: the byte
// spans of the secrets in a text. A cut never splits one, or the part
// left would no longer be recognised and masked.
type secretSpans interface {
	SecretSpans(text string) [][2]int
}

// lineCut is one source line of the snippet cut to a window: bytes
// [from, to) of the line [start, end) are kept.
type lineCut struct {
	start, end, from, to int
	pre, post            int // bytes of the marks before and after
}

// cutSnippet returns files and d for rendering with every line of d's
// snippet longer than snippetWidth cut to a window around the error, the
// diagnostic's ranges moved onto the cut text so that the highlight (the
// underline in colour) stays on what it marks. Without a long line it
// returns them as they are.
func cutSnippet(files map[string]*hcl.File, d *hcl.Diagnostic, spans secretSpans) (map[string]*hcl.File, *hcl.Diagnostic) {
	if d.Subject == nil {
		return files, d
	}
	f := files[d.Subject.Filename]
	if f == nil || f.Bytes == nil {
		return files, d
	}
	src := f.Bytes
	snip := *d.Subject
	if d.Context != nil {
		snip = hcl.RangeOver(snip, *d.Context)
	}
	hlStart := d.Subject.Start.Byte
	var cuts []lineCut
	for start := 0; start <= len(src); {
		end := bytes.IndexByte(src[start:], '\n')
		next := start + end + 1
		if end < 0 {
			end, next = len(src)-start, len(src)+1
		}
		end += start
		content := end
		if content > start && src[content-1] == '\r' {
			content--
		}
		// The lines HCL prints: those the snippet's range touches.
		if start <= snip.End.Byte && snip.Start.Byte <= end && utf8.RuneCount(src[start:content]) > snippetWidth {
			cuts = append(cuts, cutLine(src[start:content], start, hlStart, spans))
		}
		start = next
	}
	if len(cuts) == 0 {
		return files, d
	}

	var out bytes.Buffer
	prev := 0
	for _, c := range cuts {
		out.Write(src[prev:c.start])
		if c.pre > 0 {
			out.WriteString(ellipsis)
		}
		out.Write(src[c.start+c.from : c.start+c.to])
		if c.post > 0 {
			out.WriteString(ellipsis)
		}
		prev = c.end
	}
	out.Write(src[prev:])
	cutSrc := out.Bytes()

	move := func(p hcl.Pos) hcl.Pos {
		delta := 0
		for _, c := range cuts {
			if p.Byte < c.start {
				break
			}
			newStart := c.start + delta
			if p.Byte <= c.end {
				off := 0 // before the window: at the leading mark
				if p.Byte >= c.start+c.from {
					off = c.pre + min(p.Byte-c.start-c.from, c.to-c.from)
				}
				if p.Byte > c.start+c.to {
					off += c.post // past the window: after the trailing mark
				}
				p.Byte = newStart + off
				p.Column = utf8.RuneCount(cutSrc[newStart:p.Byte]) + 1
				return p
			}
			delta += c.pre + (c.to - c.from) + c.post - (c.end - c.start)
		}
		p.Byte += delta
		return p
	}
	moveRange := func(r *hcl.Range) *hcl.Range {
		if r == nil {
			return nil
		}
		return &hcl.Range{Filename: r.Filename, Start: move(r.Start), End: move(r.End)}
	}
	cd := *d
	cd.Subject, cd.Context = moveRange(d.Subject), moveRange(d.Context)
	cf := map[string]*hcl.File{}
	for name, file := range files {
		cf[name] = file
	}
	cf[d.Subject.Filename] = &hcl.File{Body: f.Body, Bytes: cutSrc, Nav: contextAt{nav: f.Nav, offset: hlStart}}
	return cf, &cd
}

// cutLine picks the window of line (at byte offset start of the file)
// that a snippet shows: snippetWidth characters from snippetLead before
// the error's start (hl, a file offset) when it is on this line, from the
// line's start otherwise, widened so that no secret is split.
func cutLine(line []byte, start, hl int, spans secretSpans) lineCut {
	runes := utf8.RuneCount(line)
	focus := 0
	if hl >= start && hl <= start+len(line) {
		focus = utf8.RuneCount(line[:hl-start])
	}
	from := max(0, focus-snippetLead)
	to := min(runes, from+snippetWidth)
	if to == runes {
		from = max(0, runes-snippetWidth)
	}
	c := lineCut{start: start, end: start + len(line), from: runeOffset(line, from), to: runeOffset(line, to)}
	if spans != nil {
		ss := spans.SecretSpans(string(line))
		// Widening at one end can reach another secret: repeat until none
		// is split.
		for changed := true; changed; {
			changed = false
			for _, s := range ss {
				if s[0] < c.from && c.from < s[1] {
					c.from, changed = s[0], true
				}
				if s[0] < c.to && c.to < s[1] {
					c.to, changed = s[1], true
				}
			}
		}
	}
	if c.from > 0 {
		c.pre = len(ellipsis)
	}
	if c.to < len(line) {
		c.post = len(ellipsis)
	}
	return c
}

// runeOffset is the byte offset of the n-th character of b.
func runeOffset(b []byte, n int) int {
	off := 0
	for ; n > 0 && off < len(b); n-- {
		_, size := utf8.DecodeRune(b[off:])
		off += size
	}
	return off
}

// contextAt answers HCL's "in server ..." context line for the original
// file's offset of the error: the cut text's offsets mean nothing to the
// original body.
type contextAt struct {
	nav    any
	offset int
}

func (c contextAt) ContextString(int) string {
	if cs, ok := c.nav.(interface{ ContextString(int) string }); ok {
		return cs.ContextString(c.offset)
	}
	return ""
}
