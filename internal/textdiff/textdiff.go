// Package textdiff renders unified diffs of text (fmt -diff, plan's argv diff).
package textdiff

import (
	"fmt"
	"strings"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// Op is one line of a line diff.
type Op struct {
	Kind byte // ' ', '-', '+'
	Text string
}

// Lines diffs a and b line by line.
func Lines(a, b []string) []Op {
	dmp := diffmatchpatch.New()
	ca, cb, lines := dmp.DiffLinesToChars(strings.Join(a, "\n")+"\n", strings.Join(b, "\n")+"\n")
	diffs := dmp.DiffCharsToLines(dmp.DiffMain(ca, cb, false), lines)
	var ops []Op
	for _, d := range diffs {
		kind := byte(' ')
		switch d.Type {
		case diffmatchpatch.DiffDelete:
			kind = '-'
		case diffmatchpatch.DiffInsert:
			kind = '+'
		}
		for _, l := range strings.SplitAfter(d.Text, "\n") {
			if l == "" {
				continue
			}
			ops = append(ops, Op{kind, strings.TrimSuffix(l, "\n")})
		}
	}
	return ops
}

// Unified returns a unified diff (3 lines of context) between a and b, or ""
// when they are equal.
func Unified(nameA, nameB, a, b string) string {
	if a == b {
		return ""
	}
	split := func(s string) []string {
		s = strings.TrimSuffix(s, "\n")
		if s == "" {
			return nil
		}
		return strings.Split(s, "\n")
	}
	ops := Lines(split(a), split(b))
	const ctx = 3
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- %s\n+++ %s\n", nameA, nameB)
	// Walk the ops, emitting hunks around changes.
	i := 0
	lineA, lineB := 1, 1
	for i < len(ops) {
		// find next change
		j := i
		for j < len(ops) && ops[j].Kind == ' ' {
			j++
		}
		if j == len(ops) {
			break
		}
		start := max(i, j-ctx)
		// advance line counters over skipped context
		for k := i; k < start; k++ {
			lineA++
			lineB++
		}
		// extend the hunk until ctx*2 unchanged lines in a row or the end
		end := j
		for end < len(ops) {
			if ops[end].Kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].Kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*ctx {
				end = min(end+ctx, len(ops))
				break
			}
			end = run
		}
		var countA, countB int
		for _, op := range ops[start:end] {
			if op.Kind != '+' {
				countA++
			}
			if op.Kind != '-' {
				countB++
			}
		}
		fmt.Fprintf(&sb, "@@ -%d,%d +%d,%d @@\n", lineA, countA, lineB, countB)
		for _, op := range ops[start:end] {
			sb.WriteByte(op.Kind)
			sb.WriteString(op.Text)
			sb.WriteByte('\n')
		}
		lineA += countA
		lineB += countB
		i = end
	}
	return sb.String()
}
