package views

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/roofline/roofline/internal/engine"
)

// Flags is roofline flags' view.
type Flags interface {
	// Flags prints the flags of inst found by query ("": all).
	Flags(inst *engine.Installed, found []*engine.Flag, query string) error
}

// NewFlags returns the flags view of type vt.
func NewFlags(vt ViewType, v *View) Flags {
	if vt == ViewJSON {
		return FlagsJSON{v}
	}
	return FlagsHuman{v}
}

// FlagsJSON prints a JSON array, [] when nothing matched.
type FlagsJSON struct{ view *View }

func (j FlagsJSON) Flags(_ *engine.Installed, found []*engine.Flag, _ string) error {
	b, err := flagsJSON(found)
	if err != nil {
		return err
	}
	fmt.Fprintln(j.view.Out, string(b))
	return nil
}

// FlagsHuman prints a header naming the install, then each flag.
type FlagsHuman struct{ view *View }

func (h FlagsHuman) Flags(inst *engine.Installed, found []*engine.Flag, query string) error {
	writeFlags(h.view.Out, inst, found, query)
	return nil
}

// FlagDocument is one flag of flags -json (an array of them).
type FlagDocument struct {
	Name       string   `json:"name"`
	Aliases    []string `json:"aliases"`
	Metavar    string   `json:"metavar"`
	Choices    []string `json:"choices"`
	Suggested  []string `json:"suggested"`
	Default    *string  `json:"default"`
	Deprecated bool     `json:"deprecated"`
	TakesValue bool     `json:"takes_value"`
	NArgs      string   `json:"nargs"`
	Negatable  bool     `json:"negatable"`
	Group      string   `json:"group"`
	Help       string   `json:"help"`
}

// flagsJSON renders flags as the -json array; lists are never null.
func flagsJSON(flags []*engine.Flag) ([]byte, error) {
	out := make([]FlagDocument, 0, len(flags))
	for _, f := range flags {
		j := FlagDocument{Name: f.Name, Aliases: nonNil(f.Aliases), Metavar: f.Metavar, Choices: nonNil(f.Choices),
			Suggested: nonNil(f.Suggested), Deprecated: f.Deprecated, TakesValue: f.TakesValue, NArgs: f.NArgs,
			Negatable: f.Negatable, Group: f.Group, Help: f.Help}
		if f.HasDefault {
			d := f.Default
			j.Default = &d
		}
		out = append(out, j)
	}
	return json.MarshalIndent(out, "", "  ")
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// writeFlags prints flags for people: a header naming the install, then per
// flag its option strings and value, help, choices and default.
func writeFlags(w io.Writer, inst *engine.Installed, flags []*engine.Flag, query string) {
	fmt.Fprintf(w, "%s, from %q\n", inst.Name(), inst.HelpCommand)
	if query == "" {
		fmt.Fprintf(w, "%d flags\n", len(flags))
	} else {
		fmt.Fprintf(w, "%d of %d flags match %q\n", len(flags), len(inst.Flags.Flags), query)
	}
	for _, f := range flags {
		head := strings.Join(f.OptionStrings(), ", ")
		if v := valueText(f); v != "" {
			head += "  " + v
		}
		var tags []string
		if f.Group != "" {
			tags = append(tags, f.Group)
		}
		if f.Deprecated {
			tags = append(tags, "DEPRECATED")
		}
		if len(tags) > 0 {
			head += "  [" + strings.Join(tags, ", ") + "]"
		}
		fmt.Fprintf(w, "\n%s\n", head)
		for _, l := range wrapWords(f.Help, 76) {
			fmt.Fprintf(w, "    %s\n", l)
		}
		if len(f.Choices) > 0 && !strings.HasPrefix(valueText(f), "{") {
			fmt.Fprintf(w, "    choices: %s\n", strings.Join(f.Choices, ", "))
		}
		if len(f.Suggested) > 0 {
			fmt.Fprintf(w, "    suggested (not enforced): %s\n", strings.Join(f.Suggested, ", "))
		}
		if f.HasDefault {
			fmt.Fprintf(w, "    default: %s\n", f.Default)
		}
	}
}

// valueText is the value a flag takes, as argparse shows it: "N", "[N]",
// "N [N ...]", "{a,b}"; a long choice list or a hint becomes VALUE (listed
// below instead).
func valueText(f *engine.Flag) string {
	if !f.TakesValue {
		return ""
	}
	mv := f.Metavar
	short := len(f.Choices) > 0 && len(mv) <= 50
	if strings.HasPrefix(mv, "{") && !short || mv == "" {
		mv = "VALUE"
	}
	switch f.NArgs {
	case "?":
		return "[" + mv + "]"
	case "*":
		return "[" + mv + " ...]"
	case "+":
		return mv + " [" + mv + " ...]"
	case "...":
		return "..."
	case "":
		return mv
	}
	return mv + " ×" + f.NArgs
}

// wrapWords wraps text at width columns on spaces.
func wrapWords(text string, width int) []string {
	var lines []string
	cur := ""
	for _, w := range strings.Fields(text) {
		if cur != "" && len(cur)+1+len(w) > width {
			lines = append(lines, cur)
			cur = w
			continue
		}
		if cur != "" {
			cur += " "
		}
		cur += w
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}
