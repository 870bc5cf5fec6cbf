package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/state"
)

// TestPlanNeverWrites: plan reads the state under a shared lock and writes
// nothing, not even when it finds an instance that an interrupted run
// started but never recorded (apply records it, first thing). It runs on a
// read-only state directory (a read-only bind mount in a mount namespace of
// its own, where the host allows one) and leaves every file and directory
// of it byte-identical, mtimes included (but the logs the running engines
// write themselves).
func TestPlanNeverWrites(t *testing.T) {
	e := newEnv(t, twoServers)
	e.mustRun(0, "apply", "-auto-approve")
	dir := filepath.Join(e.dir, ".roofline")

	// Forget server a's identity, as a roofline killed between the start
	// and the state write leaves it: only the launch id is recorded.
	fsm := state.NewFilesystem(dir)
	st, err := fsm.Read()
	if err != nil {
		t.Fatal(err)
	}
	a := st.Servers["a"]
	pid := a.PID
	a.Forget()
	a.Status = state.StatusStarting
	if err := fsm.Write(st); err != nil {
		t.Fatal(err)
	}

	before := tree(t, dir)
	args := []string{"-no-color", "plan", "-detailed-exitcode"}
	cmd := exec.Command(bin, args...)
	readOnly := exec.Command("unshare", "-m", "true").Run() == nil
	if readOnly {
		// The mount is private to the namespace: nothing outside sees it,
		// and it goes away with the command.
		script := `mount --bind "$D" "$D" && mount -o remount,bind,ro "$D" && ! touch "$D/.writable" 2>/dev/null || exit 97; exec "$@"`
		cmd = exec.Command("unshare", append([]string{"-m", "--propagation", "private", "sh", "-c", script, "sh", bin}, args...)...)
		cmd.Env = append(os.Environ(), "D="+dir)
	} else {
		t.Log("unshare -m is not allowed here: plan runs on a writable state directory, compared byte for byte")
	}
	cmd.Dir = e.dir
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code == 97 {
		t.Fatalf("the read-only bind mount did not take:\n%s", out)
	}
	if code != 2 {
		t.Fatalf("plan on the read-only state directory (read-only: %v): exit %d, want 2 (changes):\n%s", readOnly, code, out)
	}
	if want := fmt.Sprintf("server.a: pid %d; apply records them first", pid); !strings.Contains(string(out), want) {
		t.Errorf("plan does not report the unrecorded instance (%q):\n%s", want, out)
	}
	if after := tree(t, dir); after != before {
		t.Fatalf("plan changed the state directory:\n--- before\n%s\n--- after\n%s", before, after)
	}

	applied := e.mustRun(0, "apply", "-auto-approve")
	if !strings.Contains(applied.stdout, fmt.Sprintf("Recorded pid %d", pid)) {
		t.Errorf("apply did not record the instance first:\n%s", applied)
	}
	if gone(pid) == false {
		t.Errorf("the unrecorded instance (pid %d) still runs after apply replaced it", pid)
	}
}

// tree describes every entry under dir: path, mode, size, mtime and, for
// files, a hash of the content.
func tree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if strings.HasPrefix(rel, "logs"+string(filepath.Separator)) {
			// The running engines write their own logs (plan's health
			// probe shows in them); roofline does not.
			return nil
		}
		sum := ""
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			h := sha256.Sum256(data)
			sum = hex.EncodeToString(h[:8])
		}
		fmt.Fprintf(&b, "%s %v %d %d %s\n", rel, fi.Mode(), fi.Size(), fi.ModTime().UnixNano(), sum)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// gone reports whether pid no longer runs (a zombie counts as gone).
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'Z'
}
