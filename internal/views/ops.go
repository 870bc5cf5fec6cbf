package views

import (
	"fmt"
	"strings"
	"time"

	"github.com/roofline/roofline/internal/state"
)

// Moved reports roofline state mv: the record moved, the process (pid, 0
// for none) untouched; moveErr lists files that did not follow.
func (v *View) Moved(from, to string, pid int, moveErr error) {
	fmt.Fprintf(v.Out, "Move %q to %q\nSuccessfully moved 1 object(s).\n", state.ServerAddr(from), state.ServerAddr(to))
	if pid > 0 {
		fmt.Fprintf(v.Out, "Its process (pid %d) was not touched.\n", pid)
	}
	if moveErr != nil {
		v.Warnf("the state records server.%s, but not every file moved: %v", to, moveErr)
	}
	block := fmt.Sprintf("server %q", to)
	if base, key, ok := strings.Cut(to, "["); ok {
		// An instance of a repeated block: its block has the base name.
		block = fmt.Sprintf("instance [%s of server %q, with count or for_each", key, base)
	}
	fmt.Fprintf(v.Out, "Rename the block in the configuration to match (%s), or add a moved block; otherwise the next plan destroys server.%s and creates server.%s.\n", block, to, from)
}

// RolledBack reports roofline rollback: the instance that serves again,
// how long the switch took, and the one it replaced, kept in its turn.
func (v *View) RolledBack(name string, pid int, took time.Duration, keptPID int) {
	fmt.Fprintf(v.Out, "server.%s: switched back to pid %d in %s; the instance it replaced (pid %d) is kept: roofline rollback %s switches forward again.\n",
		name, pid, took.Round(time.Millisecond), keptPID, name)
}
