package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/roofline/roofline/internal/fsx"
)

// FormatFiles lists the files roofline fmt rewrites for targets, sorted: a
// file named explicitly unless it is JSON (left alone, as terraform fmt
// leaves .tf.json), and in a directory the formattable files, with
// recursive those of its subdirectories too (dot directories skipped).
func FormatFiles(targets []string, recursive bool) ([]string, error) {
	var files []string
	for _, t := range targets {
		info, err := os.Stat(t)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("no file or directory at %s", t)
		}
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			if !IsJSONFile(t) {
				files = append(files, t)
			}
			continue
		}
		err = filepath.WalkDir(t, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != t && (!recursive || strings.HasPrefix(d.Name(), ".")) {
					return filepath.SkipDir
				}
				return nil
			}
			if IsFormattable(d.Name()) {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(files)
	return files, nil
}

// Format returns src in the canonical layout. hclwrite formats even invalid
// input, so the syntax is checked first: a file with errors gets its
// diagnostics and no text, and is never rewritten.
func Format(src []byte, filename string) ([]byte, hcl.Diagnostics) {
	if _, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos); diags.HasErrors() {
		return nil, diags
	}
	return hclwrite.Format(src), nil
}

// FormatFile reads the configuration file at path as the loader does
// (bounded; a FIFO or device is refused, not waited on) and formats it:
// src as read, and out nil when it has syntax errors (Format).
func FormatFile(path string) (src, out []byte, diags hcl.Diagnostics, err error) {
	if src, err = fsx.ReadFile(path, MaxFileSize); err != nil {
		return nil, nil, nil, err
	}
	out, diags = Format(src, path)
	return src, out, diags, nil
}

// Rewrite replaces the configuration file at path with data (fsx.WriteFile:
// an interrupted write never leaves half a file), keeping its permissions.
// A file that is a symlink (a dotfiles checkout) is rewritten where it
// points, as an editor would.
func Rewrite(path string, data []byte) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	return fsx.WriteFile(path, data, info.Mode().Perm())
}
