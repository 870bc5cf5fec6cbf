package cli

import (
	"bytes"
	"io"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/views"
)

func init() {
	register(&Command{
		Name:     "fmt",
		Synopsis: "Rewrite configuration files to the canonical format",
		Usage:    views.UsageFmt,
		Run:      runFmt,
	})
}

func runFmt(m *Meta, args []string) int {
	fl := newFlags("fmt")
	check := fl.Bool("check", false, "")
	diff := fl.Bool("diff", false, "")
	list := fl.Bool("list", true, "")
	write := fl.Bool("write", true, "")
	recursive := fl.Bool("recursive", false, "")
	if !parseFlags(m, fl, args) {
		return ExitError
	}
	if *check {
		*write = false
	}
	targets := fl.Args()
	if len(targets) == 1 && targets[0] == "-" {
		return fmtStdin(m, *check, *diff)
	}
	if len(targets) == 0 {
		targets = []string{"."}
	}
	files, err := config.FormatFiles(targets, *recursive)
	if err != nil {
		m.view().Errorf("%v", err)
		return ExitError
	}

	view := views.NewFmt(m.view())
	changed, failed := 0, false
	for _, f := range files {
		src, out, diags, err := config.FormatFile(f)
		switch {
		case err != nil:
			m.view().Errorf("%v", err)
			failed = true
			continue
		case diags.HasErrors():
			view.SyntaxErrors(f, src, diags)
			failed = true
			continue
		case bytes.Equal(src, out):
			continue
		}
		changed++
		if *list {
			view.Changed(f)
		}
		if *diff {
			view.Diff(f, string(src), string(out))
		}
		if *write {
			if err := config.Rewrite(f, out); err != nil {
				m.view().Errorf("%v", err)
				failed = true
			}
		}
	}
	switch {
	case failed:
		return ExitError
	case *check && changed > 0:
		return ExitFmt
	}
	return ExitOK
}

// fmtStdin formats standard input to standard output. With -check it
// prints nothing and exits 3 when the input is not formatted; with -diff it
// prints the diff instead of the text.
func fmtStdin(m *Meta, check, diff bool) int {
	src, err := io.ReadAll(io.LimitReader(m.In, config.MaxFileSize+1))
	if err != nil {
		m.view().Errorf("reading standard input: %v", err)
		return ExitError
	}
	if len(src) > config.MaxFileSize {
		m.view().Errorf("standard input is over %d MiB; a configuration file is a few KiB.", config.MaxFileSize>>20)
		return ExitError
	}
	out, diags := config.Format(src, "<stdin>")
	if diags.HasErrors() {
		views.NewFmt(m.view()).SyntaxErrors("<stdin>", src, diags)
		return ExitError
	}
	switch {
	case diff:
		views.NewFmt(m.view()).Diff("<stdin>", string(src), string(out))
	case !check:
		views.NewFmt(m.view()).Formatted(out)
	}
	if check && !bytes.Equal(src, out) {
		return ExitFmt
	}
	return ExitOK
}
