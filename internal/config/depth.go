package config

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
)

// MaxNesting bounds how deeply blocks, brackets, parentheses and string
// templates may nest. hclsyntax parses recursively: a file nested 100,000
// deep (200 KB) overflows the goroutine stack, a fatal error that no
// recover catches. Real configurations nest a handful of levels.
const MaxNesting = 256

// checkNesting scans src as HCL native syntax without parsing it and
// returns an error diagnostic at the first point nested deeper than
// MaxNesting. It follows just enough of the syntax to count right: quoted
// strings (with escapes and ${ } / %{ } templates, which nest), heredocs and
// comments. It runs before hclsyntax, in time linear in the file.
func checkNesting(name string, src []byte) hcl.Diagnostics {
	const (
		code   = iota // expressions and bodies
		quoted        // inside "..."
	)
	// stack holds, per open level, the mode to return to when it closes.
	// A '{', '[' or '(' in code opens a level that returns to code; "${" or
	// "%{" in a string opens one that returns to the string.
	var stack []int
	mode := code
	line, col := 1, 1
	pos := func(i int) hcl.Pos { return hcl.Pos{Line: line, Column: col, Byte: i} }
	advance := func(c byte) {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch mode {
		case quoted:
			switch {
			case c == '\\' && i+1 < len(src):
				advance(c)
				i++
			case c == '"':
				mode = stack[len(stack)-1]
				stack = stack[:len(stack)-1]
			case (c == '$' || c == '%') && i+1 < len(src) && src[i+1] == '{':
				// "$${" is an escaped literal "${".
				if i > 0 && src[i-1] == c {
					break
				}
				stack = append(stack, quoted)
				if len(stack) > MaxNesting {
					return nestingDiag(name, src, pos(i))
				}
				advance(c)
				i++
				mode = code
			case c == '\n':
				// An unterminated string: let the parser report it.
				return nil
			}
		case code:
			switch {
			case c == '#' || (c == '/' && i+1 < len(src) && src[i+1] == '/'):
				for i < len(src) && src[i] != '\n' {
					advance(src[i])
					i++
				}
				if i < len(src) {
					advance(src[i])
				}
				continue
			case c == '/' && i+1 < len(src) && src[i+1] == '*':
				for i < len(src) && (src[i] != '*' || i+1 >= len(src) || src[i+1] != '/') {
					advance(src[i])
					i++
				}
				if i+1 < len(src) {
					advance(src[i])
					i++
				}
			case c == '<' && i+1 < len(src) && src[i+1] == '<':
				if end := skipHeredoc(src, i); end > i {
					for ; i < end; i++ {
						advance(src[i])
					}
					i--
					continue
				}
			case c == '"':
				stack = append(stack, code)
				if len(stack) > MaxNesting {
					return nestingDiag(name, src, pos(i))
				}
				mode = quoted
			case c == '{' || c == '[' || c == '(':
				stack = append(stack, code)
				if len(stack) > MaxNesting {
					return nestingDiag(name, src, pos(i))
				}
			case c == '}' || c == ']' || c == ')':
				if len(stack) == 0 {
					return nil // unbalanced: the parser says where
				}
				mode = stack[len(stack)-1]
				stack = stack[:len(stack)-1]
			}
		}
		if i < len(src) {
			advance(src[i])
		}
	}
	return nil
}

// skipHeredoc returns the index just past the heredoc starting at src[i]
// ("<<EOT" or "<<-EOT" up to a line holding only the marker), or i when
// src[i:] is not a heredoc. Its content is template text, but a template's
// interpolations are short in practice; it is skipped, not counted.
func skipHeredoc(src []byte, i int) int {
	j := i + 2
	if j < len(src) && src[j] == '-' {
		j++
	}
	start := j
	for j < len(src) && (src[j] == '_' || src[j] >= 'A' && src[j] <= 'Z' || src[j] >= 'a' && src[j] <= 'z' || src[j] >= '0' && src[j] <= '9') {
		j++
	}
	if j == start || j >= len(src) || (src[j] != '\n' && src[j] != '\r') {
		return i
	}
	marker := string(src[start:j])
	for j < len(src) {
		// at a line start after the newline
		for j < len(src) && src[j] != '\n' {
			j++
		}
		j++
		k := j
		for k < len(src) && (src[k] == ' ' || src[k] == '\t') {
			k++
		}
		e := k + len(marker)
		if e <= len(src) && string(src[k:e]) == marker && (e == len(src) || src[e] == '\n' || src[e] == '\r') {
			return e
		}
	}
	return len(src)
}

func nestingDiag(name string, src []byte, at hcl.Pos) hcl.Diagnostics {
	end := at
	end.Column++
	end.Byte++
	return hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  "Configuration nested too deeply",
		Detail: fmt.Sprintf("Blocks, brackets and string templates here are nested more than %d levels deep. "+
			"roofline stops here rather than exhaust its stack; no real configuration nests like this, so check that this file is the one you meant.", MaxNesting),
		Subject: &hcl.Range{Filename: name, Start: at, End: end},
	}}
}
