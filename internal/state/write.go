package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/roofline/roofline/internal/fsx"
)

// BackupPath is where the state before the latest write is kept.
func BackupPath(statePath string) string { return statePath + ".backup" }

// Marshal encodes f in the current format. Equal states give equal bytes:
// map keys are sorted (encoding/json does it), times are written in UTC, and
// a nil list is written as [] like an empty one. Slices keep their order,
// which is meaningful (argv) or chosen by the caller (GPUs). Marshal checks
// f as Read would and refuses to write what Read would reject.
func Marshal(f *File) ([]byte, error) {
	n := normalize(f)
	if n.Lineage == "" {
		// Only Managers write files, and they assign a lineage first.
		return nil, fmt.Errorf("state has no lineage; write it through a state Manager (this is a bug in roofline)")
	}
	if err := validate(n); err != nil {
		return nil, fmt.Errorf("refusing to write an invalid state (this is a bug in roofline): %w", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // argv may hold '&' or '<'; keep it readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(n); err != nil {
		return nil, fmt.Errorf("cannot encode the state: %w", err)
	}
	return buf.Bytes(), nil
}

// normalize returns a copy of f in canonical form.
func normalize(f *File) *File {
	n := f.Clone()
	if n.FormatVersion == 0 {
		n.FormatVersion = CurrentFormat
	}
	for _, s := range n.Servers {
		normalizeServer(s)
		if s != nil {
			normalizeServer(s.Deposed)
		}
	}
	return n
}

func normalizeServer(s *Server) {
	if s == nil {
		return
	}
	if s.Argv == nil {
		s.Argv = []string{}
	}
	if s.GPUs == nil {
		s.GPUs = []int{}
	}
	if len(s.Env) == 0 {
		s.Env = nil
	}
	if len(s.Cmdline) == 0 {
		s.Cmdline = nil
	}
	if s.Proxy != nil && len(s.Proxy.Cmdline) == 0 {
		s.Proxy.Cmdline = nil
	}
	s.CreatedAt = utc(s.CreatedAt)
	s.ReadyAt = utc(s.ReadyAt)
	if s.Gate != nil {
		s.Gate.CheckedAt = utc(s.Gate.CheckedAt)
	}
}

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

// WriteFile writes f to path atomically and keeps the file it replaces as
// BackupPath(path). It does not touch Serial or Lineage: use a Manager,
// which maintains them, unless you are writing a fixture.
func WriteFile(path string, f *File) error {
	data, err := Marshal(f)
	if err != nil {
		return err
	}
	prev, err := readLimited(path)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("cannot read the current state to back it up: %w", err)
	}
	return writeWithBackup(path, data, prev)
}

// writeWithBackup saves prev (the current content, nil when there is none)
// as the backup, then replaces path with data. Both steps are atomic, so a
// crash at any moment leaves a state file that parses: the old one or the new.
func writeWithBackup(path string, data, prev []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cannot create the state directory: %w", err)
	}
	if prev != nil {
		if err := atomicWrite(BackupPath(path), prev); err != nil {
			return fmt.Errorf("cannot write the state backup: %w", err)
		}
	}
	if err := atomicWrite(path, data); err != nil {
		return fmt.Errorf("cannot write the state: %w", err)
	}
	return nil
}

// atomicWrite replaces path with data (internal/fsx: same-directory
// temporary file, fsync, rename, fsync of the directory; a symlinked
// destination is refused). The file is created 0600: the state names
// processes and log paths, and hashed secrets are still best kept private.
func atomicWrite(path string, data []byte) error {
	return fsx.WriteFile(path, data, 0o600)
}
