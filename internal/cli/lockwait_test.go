package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/state"
)

// TestInterruptWhileWaitingForTheLock: Ctrl-C while apply waits for the
// state lock (-lock-timeout) ends the wait at once and says that nothing
// was done (the process died silently, with the signal's default action).
func TestInterruptWhileWaitingForTheLock(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), "roofline {\n  state_dir = \".state\"\n}\n")
	fs := state.NewFilesystem(filepath.Join(dir, ".state"))
	id, err := fs.Lock(context.Background(), state.NewLockInfo("apply"))
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Unlock(id)
	old := interrupts
	interrupts = func() (<-chan os.Signal, func()) {
		c := make(chan os.Signal, 1)
		c <- os.Interrupt // as if Ctrl-C came during the wait
		return c, func() {}
	}
	t.Cleanup(func() { interrupts = old })
	start := time.Now()
	code, _, errs := runMain(t, "-chdir="+dir, "apply", "-auto-approve", "-lock-timeout=5m")
	if code != ExitError || !strings.Contains(errs, "Interrupted while waiting for the state lock") || !strings.Contains(errs, "nothing was done") {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	if took := time.Since(start); took > time.Minute {
		t.Errorf("the interrupt ended the wait after %s", took)
	}
}
