// Package envargs reads the arguments that ROOFLINE_CLI_ARGS and
// ROOFLINE_CLI_ARGS_<command> add to a command line (Terraform's
// TF_CLI_ARGS), split into words as a POSIX shell splits them.
package envargs

import (
	"fmt"
	"os"
	"strings"
)

// For returns the arguments ROOFLINE_CLI_ARGS and ROOFLINE_CLI_ARGS_<command>
// add after the command name, in that order. A nested command's spaces and
// dashes become underscores: ROOFLINE_CLI_ARGS_state_rm,
// ROOFLINE_CLI_ARGS_force_unlock.
func For(command string) ([]string, error) {
	var out []string
	specific := "ROOFLINE_CLI_ARGS_" + strings.NewReplacer(" ", "_", "-", "_").Replace(command)
	for _, name := range []string{"ROOFLINE_CLI_ARGS", specific} {
		v := os.Getenv(name)
		if strings.TrimSpace(v) == "" {
			continue
		}
		words, err := Split(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		out = append(out, words...)
	}
	return out, nil
}

// Origin names the variable (ROOFLINE_CLI_ARGS or ROOFLINE_CLI_ARGS_<command>)
// that adds the word arg to command's arguments, "" when none does: an
// error about it then says where it comes from.
func Origin(command, arg string) string {
	specific := "ROOFLINE_CLI_ARGS_" + strings.NewReplacer(" ", "_", "-", "_").Replace(command)
	for _, name := range []string{specific, "ROOFLINE_CLI_ARGS"} {
		words, err := Split(os.Getenv(name))
		if err != nil {
			continue
		}
		for _, w := range words {
			if w == arg {
				return name
			}
		}
	}
	return ""
}

// Split splits s as a POSIX shell splits words: blanks separate, single
// quotes keep everything, double quotes keep all but \" and \\.
func Split(s string) ([]string, error) {
	var (
		out   []string
		cur   strings.Builder
		inArg bool
		quote rune
		esc   bool
	)
	for _, r := range s {
		switch {
		case esc:
			cur.WriteRune(r)
			esc = false
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case quote == '"':
			switch r {
			case '"':
				quote = 0
			case '\\':
				esc = true
			default:
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inArg = r, true
		case r == '\\':
			esc, inArg = true, true
		case r == ' ' || r == '\t' || r == '\n':
			if inArg {
				out = append(out, cur.String())
				cur.Reset()
				inArg = false
			}
		default:
			cur.WriteRune(r)
			inArg = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote", quote)
	}
	if esc {
		return nil, fmt.Errorf("a trailing backslash escapes nothing")
	}
	if inArg {
		out = append(out, cur.String())
	}
	return out, nil
}
