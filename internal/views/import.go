package views

import (
	"fmt"
	"strings"

	"github.com/roofline/roofline/internal/plan"
)

// Imported reports a process roofline import recorded as server.NAME.
func (v *View) Imported(name, id string, im *plan.ImportInfo) {
	w := v.Out
	up := ""
	if im.Uptime != "" {
		up = ", up " + im.Uptime
	}
	fmt.Fprintf(w, "server.%s: imported pid %d (%s%s); it was not touched.\n", name, im.PID, id, up)
	if len(im.Differences) == 0 {
		fmt.Fprintln(w, "It runs as the configuration says: the next plan has no changes for it.")
	} else {
		fmt.Fprintln(w, "It differs from the configuration; the next plan replaces it (a restart) for:")
		for _, d := range im.Differences {
			fmt.Fprintf(w, "  ~ %s\n", d)
		}
	}
	if !im.OwnGroup {
		fmt.Fprintf(w, "Note: pid %d shares its process group with its shell: roofline will refuse to stop it (signalling the group could reach other processes). Stop it by hand when it must go, or restart it with setsid.\n", im.PID)
	}
	fmt.Fprintln(w, v.Colorize("\n[green][bold]Import successful![reset]"))
}

// ConfigGenerated reports the server block import -generate-config-out
// wrote for a running process, and how to import it next.
// name is the block's name, addr its address for the import command.
func (v *View) ConfigGenerated(name, addr string, pid int, path string, notes []string, id string) {
	fmt.Fprintf(v.Out, "Wrote server.%s (pid %d) to %s.\n", name, pid, path)
	for _, n := range notes {
		fmt.Fprintf(v.Out, "  Note: %s\n", n)
	}
	fmt.Fprintf(v.Out, "Review it, then import the process: roofline import %s %s\n", quoteAddr(addr), id)
}

// quoteAddr quotes an address for a shell when it holds [ or ".
func quoteAddr(a string) string {
	if strings.ContainsAny(a, "[\"") {
		return "'" + a + "'"
	}
	return a
}
