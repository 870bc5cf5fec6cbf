package views

import (
	"bytes"
	"testing"
)

func TestMessages(t *testing.T) {
	for _, c := range []struct {
		name string
		do   func(v *View)
		want string
	}{
		{"unknown subcommand", func(v *View) { v.UnknownSubcommand("state", "lsit", ` Did you mean "list"?`) },
			"Error: unknown command \"state lsit\". Did you mean \"list\"?\n\n"},
		{"unknown subcommand, no hint", func(v *View) { v.UnknownSubcommand("model", "zz", "") }, "Error: unknown command \"model zz\".\n\n"},
		{"usage on stderr", func(v *View) { v.UsageErr("Usage: roofline state <subcommand>\n") }, "Usage: roofline state <subcommand>\n"},
		{"diagnose needs the configuration", func(v *View) { v.DiagnoseNeedsConfig("web") },
			"\nroofline diagnose web reads the configuration to find the state directory: run it where the .hcl files are (or with -chdir=DIR), or give the log with -file LOG.\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			c.do(&View{Out: &out, Err: &errb})
			if errb.String() != c.want || out.Len() != 0 {
				t.Errorf("stderr %q, stdout %q; want stderr %q", errb.String(), out.String(), c.want)
			}
		})
	}
}
