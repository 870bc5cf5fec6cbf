package views

import (
	"errors"
	"fmt"

	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/suggest"
)

// MoveRefused says why roofline state mv moved nothing: the source is not
// in the state (names are the state's servers, for a suggestion), or the
// destination already is.
func (v *View) MoveRefused(from, to string, sourceMissing bool, names []string) {
	if sourceMissing {
		fmt.Fprintf(v.Err, "Error: Invalid source address\n\nserver.%s is not in the state.%s Nothing was moved.\n", from, suggest.DidYouMean(from, names))
		return
	}
	fmt.Fprintf(v.Err, "Error: Invalid target address\n\nserver.%s is already in the state; roofline state rm it first, or choose another name. Nothing was moved.\n", to)
}

// WouldMove is roofline state mv -dry-run's report.
func (v *View) WouldMove(from, to string) {
	fmt.Fprintf(v.Out, "Would move server.%s to server.%s; its process is not touched.\n", from, to)
}

// LockFailed says why the state lock was not taken: held by another
// operation (who and since when), or not takeable at all.
func (v *View) LockFailed(err error) {
	var le *state.LockError
	if errors.As(err, &le) {
		fmt.Fprintf(v.Err, "Error: Error acquiring the state lock\n\n%v\n", err)
	} else {
		fmt.Fprintf(v.Err, "Error: cannot lock the state: %v\n", err)
	}
}

// ImportRefused says why roofline import recorded nothing: the address is
// not declared (addr and id as typed, for the -generate-config-out hint),
// or already in the state.
func (v *View) ImportRefused(name, addr, id string, declared bool) {
	if !declared {
		fmt.Fprintf(v.Err, "Error: Import to a server not in the configuration\n\nThere is no server.%s. Declare it first; roofline import -generate-config-out=FILE %s %s writes one from the running process.\n", name, addr, id)
		return
	}
	fmt.Fprintf(v.Err, "Error: Resource already managed by roofline\n\nserver.%s is already in the state. To take over another process, roofline state rm it first.\n", name)
}

// NotImported: the plan found no process to import as server.NAME (its
// diagnostics, printed before, say why).
func (v *View) NotImported(name string) {
	fmt.Fprintf(v.Err, "Error: server.%s could not be imported (see above).\n", name)
}

// GenerateRefused says why import -generate-config-out wrote nothing: path
// exists (exists), or server.NAME is already declared.
func (v *View) GenerateRefused(name, path string, exists bool) {
	if exists {
		fmt.Fprintf(v.Err, "Error: %s already exists; -generate-config-out writes a new file only.\n", path)
		return
	}
	fmt.Fprintf(v.Err, "Error: server.%s is already declared; -generate-config-out writes a block for a server the configuration lacks.\n", name)
}

// PolicyBroken lists what broke a -fail-on policy, one line each.
func (v *View) PolicyBroken(broken []string) {
	fmt.Fprintf(v.Err, "\nError: The plan breaks a -fail-on policy\n\n")
	for _, b := range broken {
		fmt.Fprintf(v.Err, "  - %s\n", b)
	}
}
