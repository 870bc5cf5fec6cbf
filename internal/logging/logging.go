// Package logging sets up roofline's debug log (its own decisions: probe
// commands, polls, signals, proxy switches) from ROOFLINE_LOG and
// ROOFLINE_LOG_PATH, Terraform's TF_LOG and TF_LOG_PATH. Packages log
// through log/slog's default logger.
package logging

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/roofline/roofline/internal/secret"
)

// LevelTrace is below slog's Debug: every poll and probe.
const LevelTrace = slog.LevelDebug - 4

// logLevels are ROOFLINE_LOG's values (Terraform's TF_LOG names).
var logLevels = map[string]slog.Level{
	"trace": LevelTrace, "debug": slog.LevelDebug, "info": slog.LevelInfo,
	"warn": slog.LevelWarn, "error": slog.LevelError,
}

// Setup sends the log where ROOFLINE_LOG and ROOFLINE_LOG_PATH say: off
// when ROOFLINE_LOG is unset, to stderr, or appended to the file, masked
// against secrets. The function it returns closes the file.
func Setup(stderr io.Writer, secrets *secret.Set, command string) (func(), error) {
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
	var w io.Writer = stderr
	closeFn := func() {}
	if path := os.Getenv("ROOFLINE_LOG_PATH"); path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("ROOFLINE_LOG_PATH: %v", err)
		}
		w = secrets.Writer(f)
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
