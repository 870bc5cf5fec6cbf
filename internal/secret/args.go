package secret

import "strings"

// RedactVarArgs returns a command line with the values of its -var flags
// (which may be secrets) replaced by "(redacted)", for the debug log:
// "-var NAME=V", "-var=NAME=V" and "--var=NAME=V" keep only NAME.
func RedactVarArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if i > 0 && (args[i-1] == "-var" || args[i-1] == "--var") {
			name, _, _ := strings.Cut(a, "=")
			out[i] = name + "=(redacted)"
		}
		if v, ok := strings.CutPrefix(strings.TrimLeft(a, "-"), "var="); ok {
			name, _, _ := strings.Cut(v, "=")
			out[i] = "-var=" + name + "=(redacted)"
		}
	}
	return out
}
