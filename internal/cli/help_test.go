package cli

import (
	"sort"
	"strings"
	"testing"
)

// TestEveryUsageLine walks every registered command, hidden ones included,
// and asks its help the ways a user does (COMMAND -help, help COMMAND): the
// usage line is Terraform's "Usage: roofline [global options] COMMAND ...",
// so that -chdir and -no-color are never a surprise.
func TestEveryUsageLine(t *testing.T) {
	var names []string
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			ways := [][]string{strings.Fields("help " + name)}
			if !commands[name].RawArgs {
				// A RawArgs command (the rehearsal engine) passes -help on to
				// the program it stands in for.
				ways = append(ways, append(strings.Fields(name), "-help"))
			}
			want := "Usage: roofline [global options] " + name
			for _, args := range ways {
				code, stdout, stderr := runMain(t, args...)
				line, _, _ := strings.Cut(stdout, "\n")
				if code != ExitOK || (line != want && !strings.HasPrefix(line, want+" ")) {
					t.Errorf("roofline %s: exit %d, usage line %q, want it to start with %q\n%s", strings.Join(args, " "), code, line, want, stderr)
				}
				// The other forms, aligned under the first, read the same.
				for _, l := range strings.Split(stdout, "\n")[1:] {
					if !strings.HasPrefix(l, "       roofline ") {
						break
					}
					if !strings.HasPrefix(l, "       roofline [global options] "+name+" ") {
						t.Errorf("roofline %s: usage form %q lacks [global options] %s", strings.Join(args, " "), l, name)
					}
				}
			}
		})
	}
}
