package views

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/roofline/roofline/internal/state"
)

func TestOpsMessages(t *testing.T) {
	for _, tc := range []struct {
		name     string
		show     func(v *View)
		out, err string // exact text on each stream
	}{
		{"move: no source", func(v *View) { v.MoveRefused("qwen", "b", true, []string{"qwen3", "other"}) }, "",
			"Error: Invalid source address\n\nserver.qwen is not in the state. Did you mean \"qwen3\"? Nothing was moved.\n"},
		{"move: target taken", func(v *View) { v.MoveRefused("a", "b", false, []string{"a", "b"}) }, "",
			"Error: Invalid target address\n\nserver.b is already in the state; roofline state rm it first, or choose another name. Nothing was moved.\n"},
		{"moved", func(v *View) { v.Moved("a", "b", 7, nil) }, "Move \"server.a\" to \"server.b\"\nSuccessfully moved 1 object(s).\nIts process (pid 7) was not touched.\n" +
			"Rename the block in the configuration to match (server \"b\"), or add a moved block; otherwise the next plan destroys server.b and creates server.a.\n", ""},
		// An instance of a repeated block is not a block name: server "web[0]" is no block to write.
		{"moved to an instance", func(v *View) { v.Moved("a", "web[0]", 7, nil) }, "Move \"server.a\" to \"server.web[0]\"\nSuccessfully moved 1 object(s).\nIts process (pid 7) was not touched.\n" +
			"Rename the block in the configuration to match (instance [0] of server \"web\", with count or for_each), or add a moved block; otherwise the next plan destroys server.web[0] and creates server.a.\n", ""},
		{"move: dry run", func(v *View) { v.WouldMove("a", "b") }, "Would move server.a to server.b; its process is not touched.\n", ""},
		{"lock held", func(v *View) { v.LockFailed(fmt.Errorf("wrapped: %w", &state.LockError{})) }, "",
			"Error: Error acquiring the state lock\n\nwrapped: " + (&state.LockError{}).Error() + "\n"},
		{"lock broken", func(v *View) { v.LockFailed(errors.New("read-only file system")) }, "", "Error: cannot lock the state: read-only file system\n"},
		{"import: undeclared", func(v *View) { v.ImportRefused("a", "server.a", "port:8000", false) }, "",
			"Error: Import to a server not in the configuration\n\nThere is no server.a. Declare it first; roofline import -generate-config-out=FILE server.a port:8000 writes one from the running process.\n"},
		{"import: managed", func(v *View) { v.ImportRefused("a", "server.a", "pid:7", true) }, "",
			"Error: Resource already managed by roofline\n\nserver.a is already in the state. To take over another process, roofline state rm it first.\n"},
		{"import: nothing found", func(v *View) { v.NotImported("a") }, "", "Error: server.a could not be imported (see above).\n"},
		{"generate: file exists", func(v *View) { v.GenerateRefused("a", "a.hcl", true) }, "",
			"Error: a.hcl already exists; -generate-config-out writes a new file only.\n"},
		{"generate: declared", func(v *View) { v.GenerateRefused("a", "a.hcl", false) }, "",
			"Error: server.a is already declared; -generate-config-out writes a block for a server the configuration lacks.\n"},
		{"fail-on", func(v *View) {
			v.PolicyBroken([]string{"server.a is destroyed (gone)", "server.b is replaced with downtime (gpus changed)"})
		}, "",
			"\nError: The plan breaks a -fail-on policy\n\n  - server.a is destroyed (gone)\n  - server.b is replaced with downtime (gpus changed)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			tc.show(&View{Out: &out, Err: &errb})
			if out.String() != tc.out || errb.String() != tc.err {
				t.Errorf("out %q err %q, want %q %q", out.String(), errb.String(), tc.out, tc.err)
			}
		})
	}
}
