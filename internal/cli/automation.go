package cli

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/roofline/roofline/internal/secret"
)

// envArgs returns the arguments ROOFLINE_CLI_ARGS and
// ROOFLINE_CLI_ARGS_<command> add after the command name, in that order
// (Terraform's TF_CLI_ARGS). A nested command's spaces and dashes become
// underscores: ROOFLINE_CLI_ARGS_state_rm, ROOFLINE_CLI_ARGS_force_unlock.
func envArgs(command string) ([]string, error) {
	var out []string
	specific := "ROOFLINE_CLI_ARGS_" + strings.NewReplacer(" ", "_", "-", "_").Replace(command)
	for _, name := range []string{"ROOFLINE_CLI_ARGS", specific} {
		v := os.Getenv(name)
		if strings.TrimSpace(v) == "" {
			continue
		}
		words, err := splitWords(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		out = append(out, words...)
	}
	return out, nil
}

// splitWords splits s as a POSIX shell splits words: blanks separate,
// single quotes keep everything, double quotes keep all but \" and \\.
func splitWords(s string) ([]string, error) {
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

// LevelTrace is below slog's Debug: every poll and probe.
const LevelTrace = slog.LevelDebug - 4

// logLevels are ROOFLINE_LOG's values (Terraform's TF_LOG names).
var logLevels = map[string]slog.Level{
	"trace": LevelTrace, "debug": slog.LevelDebug, "info": slog.LevelInfo,
	"warn": slog.LevelWarn, "error": slog.LevelError,
}

// setupLog sends roofline's debug log (its own decisions: probe commands,
// polls, signals, proxy switches) where ROOFLINE_LOG and ROOFLINE_LOG_PATH
// say: off when ROOFLINE_LOG is unset, to stderr, or appended to the file.
// Packages log through log/slog's default logger.
func setupLog(m *Meta, command string) (func(), error) {
	level := strings.ToLower(strings.TrimSpace(os.Getenv("ROOFLINE_LOG")))
	if level == "" || level == "off" {
		slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError + 100})))
		return func() {}, nil
	}
	lv, ok := logLevels[level]
	if !ok {
		// As TF_LOG: an unknown level logs everything, and says so.
		lv = LevelTrace
	}
	var w io.Writer = m.Err
	closeFn := func() {}
	if path := os.Getenv("ROOFLINE_LOG_PATH"); path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("ROOFLINE_LOG_PATH: %v", err)
		}
		w = m.secrets.Writer(f)
		closeFn = func() { _ = f.Close() }
	}
	h := slog.NewTextHandler(w, &slog.HandlerOptions{Level: lv, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.LevelKey {
			if l, ok := a.Value.Any().(slog.Level); ok && l < slog.LevelDebug {
				return slog.String(slog.LevelKey, "TRACE")
			}
		}
		return a
	}})
	logger := slog.New(h).With("pid", os.Getpid(), "command", command)
	slog.SetDefault(logger)
	if !ok {
		slog.Warn("ROOFLINE_LOG has an unknown level; logging everything", "value", level, "levels", "trace, debug, info, warn, error")
	}
	slog.Info("roofline started", "args", redactArgs(os.Args[1:]))
	return closeFn, nil
}

// redactArgs hides -var values, which may be secrets, from the log.
var redactArgs = secret.RedactVarArgs
