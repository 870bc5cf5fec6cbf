package config

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/roofline/roofline/internal/suggest"
)

// StateDirPath returns the absolute state directory: state_dir, relative
// to the configuration's directory, or .roofline there. A nil c is the
// default in the current directory.
func (c *Config) StateDirPath() string {
	dir := ".roofline"
	if c != nil && c.Roofline != nil && c.Roofline.StateDir != "" {
		dir = c.Roofline.StateDir
	}
	if !filepath.IsAbs(dir) && c != nil {
		dir = filepath.Join(c.Dir, dir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	return abs
}

// EngineNamed returns the engine block name ("NAME" or "engine.NAME"); an
// unknown one is an error with a suggestion and the list of engine blocks.
func (c *Config) EngineNamed(name string) (*Engine, error) {
	if e := c.Engines[strings.TrimPrefix(name, "engine.")]; e != nil {
		return e, nil
	}
	names := c.EngineNames()
	list := "The configuration has no engine blocks."
	if len(names) > 0 {
		list = "Engine blocks: " + strings.Join(names, ", ") + "."
	}
	return nil, fmt.Errorf("no engine block named %q.%s\n\n%s", name, suggest.DidYouMean(name, names), list)
}

var reServerName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*(\[([0-9]+|"[^"/\\\x00-\x1f]*")\])?$`)

// SafeServerName accepts HCL block labels that are identifiers, with an
// instance key (web["a"], web[0]) that holds no slash, so a name can never
// leave the logs directory.
func SafeServerName(s string) bool { return reServerName.MatchString(s) }

// ServerLogPath returns the log apply writes for server name
// (STATE_DIR/logs/NAME.log), or an error that says why there is none: a
// server the configuration does not have, or one not started yet.
func (c *Config) ServerLogPath(name string) (string, error) {
	path := filepath.Join(c.StateDirPath(), "logs", name+".log")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if _, known := c.Servers[name]; !known {
		names := c.ServerNames()
		list := "none"
		if len(names) > 0 {
			list = strings.Join(names, ", ")
		}
		return "", &NoLogError{fmt.Sprintf("no server %q in the configuration, and no log for it at %s.%s\n\nServers: %s. Or give a log with -file LOG.",
			name, path, suggest.DidYouMean(name, names), list)}
	}
	return "", &NoLogError{fmt.Sprintf("no log for server %q at %s.\n\nroofline writes it when apply starts the server: run \"roofline apply\" first, or give the engine's log with -file LOG.", name, path)}
}

// NoLogError is ServerLogPath's answer when a server has no log; its text
// is whole sentences with what to do.
type NoLogError struct{ msg string }

func (e *NoLogError) Error() string { return e.msg }
