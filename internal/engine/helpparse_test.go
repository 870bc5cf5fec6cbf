package engine

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/engine/refdata"
)

var update = flag.Bool("update", false, "rewrite golden files")

// refCase is one reference help text and the CSV read from the same source.
type refCase struct{ kind, version string }

var refCases = []refCase{
	{"vllm", "0.8.5"},
	{"vllm", "0.16.0"},
	{"sglang", "0.5.6.post2"},
}

func (c refCase) String() string { return c.kind + "-" + c.version }

func refHelp(t testing.TB, c refCase) string {
	t.Helper()
	text, ok := refdata.Help(c.kind, c.version)
	if !ok {
		t.Fatalf("no reference help for %s", c)
	}
	return text
}

func parseRef(t testing.TB, c refCase) *FlagSet {
	t.Helper()
	fs, err := ParseHelp(refHelp(t, c))
	if err != nil {
		t.Fatalf("%s: %v", c, err)
	}
	return fs
}

// csvRow is what the reference CSV says about one flag.
type csvRow struct {
	flag, aliases, typ, choices, def, deprecated string
}

func readCSV(t *testing.T, c refCase) []csvRow {
	t.Helper()
	b, ok := refdata.CSV(c.kind, c.version)
	if !ok {
		t.Fatalf("no CSV for %s", c)
	}
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	var rows []csvRow
	for _, r := range recs[1:] {
		rows = append(rows, csvRow{
			flag: r[col["flag"]], aliases: r[col["aliases"]], typ: r[col["type"]],
			choices: r[col["choices"]], def: r[col["default"]], deprecated: r[col["deprecated"]],
		})
	}
	return rows
}

// TestParseHelpMatchesCSV checks every reference help text against the flag
// table read from the engine's source: same flags, same aliases, and the
// same choices, nargs and defaults where the CSV states them.
func TestParseHelpMatchesCSV(t *testing.T) {
	for _, c := range refCases {
		t.Run(c.String(), func(t *testing.T) {
			fs := parseRef(t, c)
			rows := readCSV(t, c)
			if len(fs.Flags) != len(rows) {
				t.Errorf("parsed %d flags, the CSV has %d rows", len(fs.Flags), len(rows))
			}
			var want []string
			for _, r := range rows {
				want = append(want, r.flag)
			}
			sort.Strings(want)
			if got := fs.Names(); !reflect.DeepEqual(got, want) {
				t.Errorf("names differ:\n only parsed: %v\n only CSV: %v", minus(got, want), minus(want, got))
			}
			for _, r := range rows {
				f := fs.Lookup(r.flag)
				if f == nil || f.Name != r.flag {
					t.Errorf("%s: Lookup gave %v", r.flag, f)
					continue
				}
				for _, a := range strings.Fields(r.aliases) {
					if !slices.Contains(f.Aliases, a) || fs.Lookup(a) != f {
						t.Errorf("%s: alias %s missing (aliases %v)", r.flag, a, f.Aliases)
					}
				}
				if strict := strictChoices(r.choices); strict != nil && !reflect.DeepEqual(f.Choices, strict) {
					t.Errorf("%s: choices %v, CSV %v", r.flag, f.Choices, strict)
				}
				if want := csvNArgs(r.typ); want != f.NArgs && !fixtureQuirk[c.String()+" "+r.flag] {
					t.Errorf("%s: nargs %q, CSV type %q", r.flag, f.NArgs, r.typ)
				}
				switch isSwitch := strings.HasPrefix(r.typ, "flag(") || r.typ == "bool"; {
				case isSwitch && f.TakesValue, !isSwitch && r.typ != "" && !f.TakesValue:
					t.Errorf("%s: takes value %v, CSV type %q", r.flag, f.TakesValue, r.typ)
				}
				if r.typ == "bool" && !f.Negatable {
					t.Errorf("%s: a bool flag should be negatable (--no-x)", r.flag)
				}
				if c.kind == "vllm" && (!f.HasDefault || f.Default != r.def) && !fixtureQuirk[c.String()+" "+r.flag] {
					t.Errorf("%s: default %q (has %v), CSV %q", r.flag, f.Default, f.HasDefault, r.def)
				}
				if r.deprecated == "yes" && c.kind == "vllm" && !f.Deprecated {
					t.Errorf("%s: not marked deprecated", r.flag)
				}
			}
		})
	}
}

// fixtureQuirk lists rows where the reference help text itself differs from
// the CSV (the parser reads the text right; the two fixtures disagree).
var fixtureQuirk = map[string]bool{
	"vllm-0.8.5 --use-v2-block-manager":         true, // help prints "(default: False)", CSV True
	"sglang-0.5.6.post2 --custom-weight-loader": true, // nargs='*' not shown in the help
	"sglang-0.5.6.post2 --lora-paths":           true, // same
	"sglang-0.5.6.post2 --lora-target-modules":  true, // same
}

// strictChoices returns the CSV's enforced choice list, nil for none or a hint.
func strictChoices(s string) []string {
	if s == "" || strings.Contains(s, ":") || strings.Contains(s, " + ") {
		return nil
	}
	s, _, _ = strings.Cut(s, " (")
	return strings.Split(s, "|")
}

func csvNArgs(typ string) string {
	for _, n := range []string{"+", "*", "?"} {
		if strings.Contains(typ, "nargs='"+n+"'") || strings.Contains(typ, "nargs="+n) {
			return n
		}
	}
	return ""
}

func noSpace(s string) string { return strings.Join(strings.Fields(s), "") }

func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// TestParseHelpGolden keeps the full parse of each reference text in a golden
// JSON file, so any change in what the parser reads shows up in review.
func TestParseHelpGolden(t *testing.T) {
	for _, c := range refCases {
		t.Run(c.String(), func(t *testing.T) {
			got, err := json.MarshalIndent(parseRef(t, c), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", "flags", c.String()+".json"), append(got, '\n'))
		})
	}
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (run go test -update to accept):\n%s", path, firstDiff(string(want), string(got)))
	}
}

// firstDiff shows the first differing line of two texts.
func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return "line " + itoa(i+1) + ":\n want: " + w + "\n  got: " + g
		}
	}
	return ""
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestParseHelpAnyWidth re-renders each reference flag set as argparse would
// at narrower terminals (and in Python 3.13's style, and with invocations
// broken over lines) and checks that the parser reads back the same flags.
func TestParseHelpAnyWidth(t *testing.T) {
	styles := map[string]helpStyle{"py311": stylePy311, "py313": stylePy313, "wrapped-invocation": styleWrapInv}
	for _, c := range refCases {
		want := parseRef(t, c)
		for name, style := range styles {
			for _, cols := range []int{80, 60, 30} {
				t.Run(c.String()+"/"+name+"/"+itoa(cols), func(t *testing.T) {
					text := formatArgparse(want, cols, style)
					got, err := ParseHelp(text)
					if err != nil {
						t.Fatal(err)
					}
					if len(got.Flags) != len(want.Flags) {
						t.Errorf("parsed %d flags, want %d", len(got.Flags), len(want.Flags))
					}
					for i := range min(len(got.Flags), len(want.Flags)) {
						g, w := *got.Flags[i], *want.Flags[i]
						// Where a line break falls inside a word longer than the
						// width, or exactly at the width, the text cannot say
						// whether a space was there: compare help and default
						// without spaces (the golden test checks them exactly).
						g.Help, w.Help = noSpace(g.Help), noSpace(w.Help)
						g.Default, w.Default = noSpace(g.Default), noSpace(w.Default)
						if !reflect.DeepEqual(g, w) {
							gj, _ := json.Marshal(g)
							wj, _ := json.Marshal(w)
							t.Errorf("flag %d differs:\n got %s\nwant %s", i, gj, wj)
						}
					}
					if !reflect.DeepEqual(got.Groups, want.Groups) {
						t.Errorf("groups %v, want %v", got.Groups, want.Groups)
					}
				})
			}
		}
	}
}
