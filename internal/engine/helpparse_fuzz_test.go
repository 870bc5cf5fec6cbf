package engine

import (
	"strings"
	"testing"
)

// FuzzParseHelp feeds arbitrary text to the parser: it must not panic, and
// what it returns must be consistent (every flag found by its own names).
func FuzzParseHelp(f *testing.F) {
	for _, c := range refCases {
		text := refHelp(f, c)
		f.Add(text[:min(len(text), 4000)])
	}
	for _, s := range []string{
		"options:\n  --a {x,\n",
		"options:\n  -tp, --tensor-parallel-size N\n",
		"options:\n  --x, --no-x\n      --y [Y [Y ...]]  (default: (\n",
		"G:\n  --{a}  b\n  -- \n  ---x\n  -1\n",
		"options:\n  --a A  h-\n                        ello (default: x)\n",
		"options:\n  -c, --config C\n  --chat-template T, -c T\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		fs, err := ParseHelp(text)
		if err != nil {
			if fs != nil {
				t.Fatal("a FlagSet with an error")
			}
			return
		}
		if len(fs.Flags) == 0 {
			t.Fatal("no error but no flags")
		}
		for _, fl := range fs.Flags {
			if !strings.HasPrefix(fl.Name, "-") {
				t.Fatalf("flag name %q is not an option", fl.Name)
			}
			// Every option string belongs to exactly one flag, even one
			// declared twice (argparse's "resolve": the later one).
			for _, o := range fl.OptionStrings() {
				if got := fs.Lookup(o); got != fl {
					t.Fatalf("Lookup(%q) = %v, want %s", o, got, fl.Name)
				}
			}
			if fl.Choices == nil || fl.Aliases == nil {
				t.Fatalf("%s: nil slices break the JSON shape", fl.Name)
			}
		}
	})
}

// BenchmarkParseHelp parses vLLM 0.16.0's --help=all (212 flags, 51 KB).
// Target: ≤ 2 ms.
func BenchmarkParseHelp(b *testing.B) {
	text := refHelp(b, refCase{"vllm", "0.16.0"})
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := ParseHelp(text); err != nil {
			b.Fatal(err)
		}
	}
}
