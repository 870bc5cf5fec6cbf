package views

import (
	"fmt"
	"sort"
	"strings"

	"github.com/roofline/roofline/internal/enginelock"
)

// InitEngine is what roofline init found of one engine.
type InitEngine struct {
	Name string
	// Err: the probe failed.
	Err error
	// Installed is the install's name and version; Pinned the version
	// the configuration pins when the install is another one.
	Installed, Pinned string
	Flags             int
}

// InitEnginesOf is what init found of each probed engine.
func InitEnginesOf(probes []enginelock.Probed) []InitEngine {
	out := make([]InitEngine, len(probes))
	for i, p := range probes {
		f := InitEngine{Name: p.Name, Err: p.Err, Pinned: p.Pinned}
		if p.Err == nil {
			f.Installed = p.Installed.Name()
			if p.Pinned == "" {
				f.Flags = len(p.Installed.Flags.Flags)
			}
		}
		out[i] = f
	}
	return out
}

// Init is roofline init's view (it has no -json).
type Init struct{ view *View }

// NewInit returns init's view.
func NewInit(v *View) *Init { return &Init{v} }

// Probing says where the state lives and that the probes start.
func (i *Init) Probing(stateDir string) {
	fmt.Fprintf(i.view.Out, "State directory: %s\n\nProbing engines...\n", stateDir)
}

// Engines prints one line per engine, sorted.
func (i *Init) Engines(es []InitEngine) {
	lines := make([]string, len(es))
	for k, e := range es {
		switch {
		case e.Err != nil:
			lines[k] = fmt.Sprintf("  - engine.%s: %v", e.Name, e.Err)
		case e.Pinned != "":
			lines[k] = fmt.Sprintf("  - engine.%s: %s installed, but the configuration pins %s (plan will refuse it)", e.Name, e.Installed, e.Pinned)
		default:
			lines[k] = fmt.Sprintf("  - engine.%s: %s, %d flags", e.Name, e.Installed, e.Flags)
		}
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Fprintln(i.view.Out, l)
	}
}

// LockChanged says that a locked engine's install changed.
func (i *Init) LockChanged(name, lockFile, diff string) {
	fmt.Fprintf(i.view.Err, "\nError: engine.%s changed since %s was written: %s. Run roofline init -upgrade to record it, and review the flag diff it prints.\n", name, lockFile, diff)
}

// LockWritten names the lock file and what changed in it: engines locked,
// and those upgraded with their flag diff.
func (i *Init) LockWritten(lockFile string, changes []enginelock.Change) {
	fmt.Fprintf(i.view.Out, "\nEngine lock file: %s\n", lockFile)
	for _, c := range changes {
		var n string
		switch {
		case c.Refused:
			continue
		case c.Old == nil:
			n = fmt.Sprintf("  - engine.%s: locked (%s %s, %d flags)", c.Name, c.Now.Kind, c.Now.Version, len(c.Now.Flags))
		default:
			n = fmt.Sprintf("  - engine.%s: upgraded: %s\n%s", c.Name, enginelock.Diff(c.Old, c.Now), enginelock.FlagDiffText(c.Old.Flags, c.Now.Flags))
		}
		fmt.Fprintln(i.view.Out, strings.TrimRight(n, "\n"))
	}
}

// GPUs reports the inventory init would use, or why it cannot be read.
func (i *Init) GPUs(source string, n int, err error) {
	if err != nil {
		fmt.Fprintf(i.view.Out, "\nGPUs: %v\n", err)
		return
	}
	fmt.Fprintf(i.view.Out, "\nGPUs (%s): %d\n", source, n)
}

// Done is init's last word.
func (i *Init) Done(failed bool) {
	if failed {
		fmt.Fprint(i.view.Err, i.view.Colorize("\n[red][bold]roofline init found problems[reset]; fix them before roofline plan.\n"))
		return
	}
	fmt.Fprint(i.view.Out, i.view.Colorize("\n[green][bold]roofline has been successfully initialized![reset]\n\nRun \"roofline plan\" to see what apply would do.\n"))
}
