package config

import (
	"fmt"
	"path/filepath"
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
