package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/state/statetest"
)

// promptWatch is the output of a run that sends an interrupt once the
// approval prompt is printed, as Ctrl-C typed at it.
type promptWatch struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	fire  func()
	fired bool
}

func (p *promptWatch) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n, err := p.buf.Write(b)
	if !p.fired && strings.Contains(p.buf.String(), "Enter a value:") {
		p.fired = true
		p.fire()
	}
	return n, err
}

// TestInterruptAtTheApprovalPrompt: Ctrl-C at "Enter a value:" cancels
// like a "no", says so, and leaves the state as it was (the process died
// silently).
func TestInterruptAtTheApprovalPrompt(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), "roofline {\n  state_dir = \".state\"\n}\n")
	fs := state.NewFilesystem(filepath.Join(dir, ".state"))
	st := state.NewFile()
	st.Set(statetest.Server("a")) // pid 4242 of another boot: gone, so destroy forgets it
	if err := fs.Write(st); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(dir, ".state", state.StateFileName))
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var latest chan os.Signal
	old := interrupts
	interrupts = func() (<-chan os.Signal, func()) {
		c := make(chan os.Signal, 1)
		mu.Lock()
		latest = c
		mu.Unlock()
		return c, func() {}
	}
	t.Cleanup(func() { interrupts = old })
	out := &promptWatch{fire: func() {
		mu.Lock()
		defer mu.Unlock()
		latest <- os.Interrupt
	}}
	in, w := io.Pipe() // nobody answers
	defer w.Close()
	var errb bytes.Buffer
	code := Main([]string{"-chdir=" + dir, "destroy"}, Streams{In: in, InTerminal: true, Out: out, Err: &errb})
	if code != ExitError || !out.fired || !strings.Contains(errb.String(), "Destroy cancelled. Nothing was changed.") {
		t.Fatalf("exit %d, prompt seen %v\n%s\n%s", code, out.fired, out.buf.String(), errb.String())
	}
	after, _ := os.ReadFile(filepath.Join(dir, ".state", state.StateFileName))
	if !bytes.Equal(before, after) {
		t.Errorf("the state changed:\n%s", after)
	}
	// The lock was released on the way out.
	id, err := fs.Lock(context.Background(), state.NewLockInfo("test"))
	if err != nil {
		t.Fatalf("the lock is still held: %v", err)
	}
	_ = fs.Unlock(id)
}
