package state

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/roofline/roofline/internal/fsx"
)

// PlanKeyFileName is the key that seals saved plans (plan -out): apply
// refuses a plan file whose MAC does not verify with it, so an edited plan
// file (an argv changed to /bin/sh) never runs. It stays in the state
// directory, 0600, and never leaves it.
const PlanKeyFileName = "plan.key"

// PlanKeyPath is the plan key of a state directory.
func (s *Filesystem) PlanKeyPath() string { return filepath.Join(s.dir, PlanKeyFileName) }

// PlanKey returns the state directory's plan key, creating it on first use.
func (s *Filesystem) PlanKey() ([]byte, error) {
	if err := CheckDir(s.dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("cannot create the state directory: %w", err)
	}
	path := s.PlanKeyPath()
	key, err := readPlanKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	fresh := make([]byte, 32)
	_, _ = rand.Read(fresh)
	if _, err := fsx.CreateOnce(path, []byte(hex.EncodeToString(fresh)+"\n"), 0o600); err != nil {
		return nil, err
	}
	// Another roofline may have created it first: use whatever is there.
	return readPlanKey(path)
}

func readPlanKey(path string) ([]byte, error) {
	f, fi, err := fsx.OpenRegularNoFollow(path)
	if err != nil {
		if errors.Is(err, fsx.ErrSymlink) {
			return nil, refuseLink(path, "plan key")
		}
		return nil, err
	}
	defer f.Close()
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("the plan key %s is readable or writable by others (mode %04o); whoever can read it can forge saved plans. Fix it with:\n  chmod 600 %s",
			path, fi.Mode().Perm(), path)
	}
	b := make([]byte, 128)
	n, _ := f.Read(b)
	key, err := hex.DecodeString(strings.TrimSpace(string(b[:n])))
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("the plan key %s is damaged; delete it (saved plans made with it can then no longer be applied; make them again with roofline plan -out)", path)
	}
	return key, nil
}
