package rehearsal

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/roofline/roofline/internal/fsx"
)

// InstallSelf returns a stable path of roofline's binary exe for engine and
// proxy processes to run: stateDir/bin/roofline-HASH. `go run` builds into
// a temporary directory that is deleted when it exits, so the binary is
// copied once into the state directory, named by its content hash; older
// copies are removed.
func InstallSelf(exe, stateDir string) (string, error) {
	f, err := os.Open(exe)
	if err != nil {
		return "", err
	}
	defer f.Close()
	dir := filepath.Join(stateDir, "bin")
	// Hashing the binary costs more than the rest of a plan of hundreds of
	// servers: the hash of the executable as it was (path, size, mtime,
	// inode) is remembered beside the copy.
	var memo string
	if fi, err := f.Stat(); err == nil {
		ino := uint64(0)
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			ino = st.Ino
		}
		k := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%d\x00%d", exe, fi.Size(), fi.ModTime().UnixNano(), ino))
		memo = filepath.Join(dir, "self-"+hex.EncodeToString(k[:8]))
		if b, err := os.ReadFile(memo); err == nil {
			if dst := filepath.Join(dir, "roofline-"+strings.TrimSpace(string(b))); len(b) > 0 {
				if _, err := os.Stat(dst); err == nil {
					return dst, nil
				}
			}
		}
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	sum := hex.EncodeToString(h.Sum(nil))[:16]
	dst := filepath.Join(dir, "roofline-"+sum)
	remember := func() {
		if memo != "" {
			_ = fsx.WriteFile(memo, []byte(sum+"\n"), 0o600)
		}
	}
	if _, err := os.Stat(dst); err == nil {
		remember()
		return dst, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	if err := fsx.Write(dst, 0o755, func(w io.Writer) error {
		_, err := io.Copy(w, f)
		return err
	}); err != nil {
		return "", err
	}
	// Older copies are not needed: a running engine keeps its (unlinked)
	// executable, and stopping it needs none.
	if old, _ := filepath.Glob(filepath.Join(dir, "roofline-*")); len(old) > 0 {
		for _, o := range old {
			if o != dst {
				_ = os.Remove(o)
			}
		}
	}
	if old, _ := filepath.Glob(filepath.Join(dir, "self-*")); len(old) > 0 {
		for _, o := range old {
			_ = os.Remove(o)
		}
	}
	remember()
	return dst, nil
}
