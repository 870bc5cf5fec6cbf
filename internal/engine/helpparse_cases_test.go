package engine

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/engine/refdata"
)

// TestParseHelpCases covers help shapes the reference texts do not have.
func TestParseHelpCases(t *testing.T) {
	type want struct {
		name, metavar, nargs, def, group string
		aliases, choices, suggested      []string
		takes, negatable, deprecated     bool
	}
	tests := []struct {
		name string
		text string
		want map[string]want // by primary name; other flags may exist
		n    int             // expected flag count
	}{
		{
			name: "python 3.13 prints the metavar once",
			text: "options:\n  -h, --help  show help\n  -tp, --tensor-parallel-size TENSOR_PARALLEL_SIZE\n                        Number of tensor parallel groups. (default: 1)\n",
			want: map[string]want{"--tensor-parallel-size": {name: "--tensor-parallel-size", metavar: "TENSOR_PARALLEL_SIZE", def: "1", aliases: []string{"-tp"}, takes: true}},
			n:    1,
		},
		{
			// argparse's conflict_handler="resolve": the later declaration
			// takes the option string; the earlier flag keeps the rest.
			name: "an option string declared twice (a flag, then an alias -c)",
			text: "options:\n  -c, --config CONFIG  config file\n  --chat-template CHAT_TEMPLATE, -c CHAT_TEMPLATE  template\n  --x X, --x X  twice in one flag\n  -q Q  only short\n  --quiet, -q  later takes -q, the earlier loses its only string\n",
			want: map[string]want{
				"--config":        {name: "--config", metavar: "CONFIG", takes: true, aliases: []string{}},
				"--chat-template": {name: "--chat-template", metavar: "CHAT_TEMPLATE", takes: true, aliases: []string{"-c"}},
				"--x":             {name: "--x", metavar: "X", takes: true, aliases: []string{}},
				"--quiet":         {name: "--quiet", aliases: []string{"-q"}},
			},
			n: 4,
		},
		{
			name: "nargs shapes",
			text: "options:\n  --a [A [A ...]]  old star\n  --b [B ...]  new star\n  --c C [C ...]  plus\n  --d [D]  optional\n  --e E E  two\n  --f ...  remainder\n",
			want: map[string]want{
				"--a": {name: "--a", metavar: "A", nargs: "*", takes: true, aliases: []string{}},
				"--b": {name: "--b", metavar: "B", nargs: "*", takes: true, aliases: []string{}},
				"--c": {name: "--c", metavar: "C", nargs: "+", takes: true, aliases: []string{}},
				"--d": {name: "--d", metavar: "D", nargs: "?", takes: true, aliases: []string{}},
				"--e": {name: "--e", metavar: "E", nargs: "2", takes: true, aliases: []string{}},
				"--f": {name: "--f", nargs: "...", takes: true, aliases: []string{}},
			},
			n: 6,
		},
		{
			name: "choice list broken at a comma, continued at column 0 (a hard wrap)",
			text: "options:\n  --kv-cache-dtype {auto,fp8,\nfp8_e4m3,fp8_e5m2}\n                        Data type. (default: 'auto')\n  --next N  next flag\n",
			want: map[string]want{"--kv-cache-dtype": {name: "--kv-cache-dtype", metavar: "{auto,fp8,fp8_e4m3,fp8_e5m2}", def: "'auto'",
				choices: []string{"auto", "fp8", "fp8_e4m3", "fp8_e5m2"}, takes: true, aliases: []string{}}},
			n: 2,
		},
		{
			name: "negatable pair continued on an indented line, then help",
			text: "options:\n  --enable-prefix-caching,\n      --no-enable-prefix-caching\n                        Whether to enable prefix caching. (default: None)\n",
			want: map[string]want{"--enable-prefix-caching": {name: "--enable-prefix-caching", aliases: []string{"--no-enable-prefix-caching"},
				negatable: true, def: "None"}},
			n: 1,
		},
		{
			name: "python 3.9 heading, colour codes, CRLF and tabs",
			text: "\x1b[1musage:\x1b[0m launch_server.py [-h]\r\n\r\noptional arguments:\r\n  -h, --help\tshow this help\r\n  \x1b[36m--port\x1b[0m PORT           The port.\r\n",
			want: map[string]want{"--port": {name: "--port", metavar: "PORT", takes: true, aliases: []string{}}},
			n:    1,
		},
		{
			name: "group description, epilog with indented --json-arg lines, positional section",
			text: "usage: vllm serve [model_tag] [options]\n\npositional arguments:\n  model_tag             The model tag\n\nModelConfig:\n  Configuration for the model.\n\n  --max-model-len MAX_MODEL_LEN\n                        Model context length. Supports k/m/g/K/M/G in human-\n                        readable format. (default: None)\n\nWhen passing JSON CLI arguments, the following sets of arguments are equivalent:\n   --json-arg '{\"key1\": \"value1\"}'\n   --json-arg.key1 value1\n",
			want: map[string]want{"--max-model-len": {name: "--max-model-len", metavar: "MAX_MODEL_LEN", def: "None", group: "ModelConfig", takes: true, aliases: []string{}}},
			n:    1,
		},
		{
			name: "hints are not choices; expressions are neither",
			text: "options:\n  --q {suggested: awq,fp8}  method\n  --r {deepseek_r1,granite (argparse choices= at this version)}  reasoning\n  --m {SUPPORTED + [ALL]}  modules\n",
			want: map[string]want{
				"--q": {name: "--q", metavar: "{suggested: awq,fp8}", suggested: []string{"awq", "fp8"}, takes: true, aliases: []string{}},
				"--r": {name: "--r", metavar: "{deepseek_r1,granite (argparse choices= at this version)}", choices: []string{"deepseek_r1", "granite"}, takes: true, aliases: []string{}},
				"--m": {name: "--m", metavar: "{SUPPORTED + [ALL]}", takes: true, aliases: []string{}},
			},
			n: 3,
		},
		{
			name: "deprecated markers",
			text: "options:\n  --a  [DEPRECATED] old\n  --b  Deprecated: use --c\n  --c  This parameter is deprecated and will be removed in a future release.\n  --d  Allow deprecated quantization methods.\n",
			want: map[string]want{
				"--a": {name: "--a", deprecated: true, aliases: []string{}},
				"--b": {name: "--b", deprecated: true, aliases: []string{}},
				"--c": {name: "--c", deprecated: true, aliases: []string{}},
				"--d": {name: "--d", aliases: []string{}},
			},
			n: 4,
		},
		{
			name: "primary name follows the metavar (SGLang aliases first)",
			text: "options:\n  --tp-size TENSOR_PARALLEL_SIZE, --tensor-parallel-size TENSOR_PARALLEL_SIZE\n                        The tensor parallelism size.\n  --ep-size --ep EXPERT_PARALLEL_SIZE, --expert-parallel-size EXPERT_PARALLEL_SIZE\n                        The expert parallelism size.\n",
			want: map[string]want{
				"--tensor-parallel-size": {name: "--tensor-parallel-size", metavar: "TENSOR_PARALLEL_SIZE", aliases: []string{"--tp-size"}, takes: true},
				"--expert-parallel-size": {name: "--expert-parallel-size", metavar: "EXPERT_PARALLEL_SIZE", aliases: []string{"--ep-size", "--ep"}, takes: true},
			},
			n: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, err := ParseHelp(tt.text)
			if err != nil {
				t.Fatal(err)
			}
			if len(fs.Flags) != tt.n {
				t.Errorf("parsed %d flags (%v), want %d", len(fs.Flags), fs.Names(), tt.n)
			}
			for name, w := range tt.want {
				f := fs.Lookup(name)
				if f == nil {
					t.Errorf("%s not found in %v", name, fs.Names())
					continue
				}
				if w.choices == nil {
					w.choices = []string{}
				}
				got := want{name: f.Name, metavar: f.Metavar, nargs: f.NArgs, def: f.Default, group: f.Group, aliases: f.Aliases,
					choices: f.Choices, suggested: f.Suggested, takes: f.TakesValue, negatable: f.Negatable, deprecated: f.Deprecated}
				if !reflect.DeepEqual(got, w) {
					t.Errorf("%s:\n got %+v\nwant %+v", name, got, w)
				}
			}
		})
	}
}

func TestParseHelpNoFlags(t *testing.T) {
	for _, text := range []string{"", "usage: x\n", mustShortHelp(t)} {
		if _, err := ParseHelp(text); !errors.Is(err, ErrNoFlags) {
			t.Errorf("ParseHelp(%.40q) = %v, want ErrNoFlags", text, err)
		}
	}
}

func mustShortHelp(t *testing.T) string {
	t.Helper()
	text, ok := refdata.HelpShort("vllm", "0.16.0")
	if !ok || !strings.Contains(text, "Config Groups") {
		t.Fatal("no short reference help for vLLM 0.16.0")
	}
	return text
}

func TestJoinHelp(t *testing.T) {
	tests := []struct {
		lines []string
		width int
		want  string
	}{
		{[]string{"a wide-", "EP setup"}, 40, "a wide-EP setup"},
		{[]string{"uses broadcasts -", "\"allgather\""}, 40, "uses broadcasts - \"allgather\""},
		{[]string{"opt-", "125m"}, 40, "opt- 125m"}, // textwrap never breaks before a digit
		{[]string{"given in '--", "tokenizer-labels' field"}, 40, "given in '--tokenizer-labels' field"},
		{[]string{"see the following opti", "ons:https://x.y/zzzzz"}, 22, "see the following options:https://x.y/zzzzz"},
		{[]string{"of error responses (default:", "envs.VLLM_SERVER_DEV_MODE)"}, 28, "of error responses (default: envs.VLLM_SERVER_DEV_MODE)"},
		{[]string{"short line", "next"}, 40, "short line next"},
	}
	for _, tt := range tests {
		if got := joinHelp(tt.lines, tt.width); got != tt.want {
			t.Errorf("joinHelp(%q, %d) = %q, want %q", tt.lines, tt.width, got, tt.want)
		}
	}
}

func TestLookupAndResolve(t *testing.T) {
	fs := parseRef(t, refCase{"vllm", "0.16.0"})
	for _, name := range []string{"--max-model-len", "max-model-len", "max_model_len", "--max_model_len"} {
		if f := fs.Lookup(name); f == nil || f.Name != "--max-model-len" {
			t.Errorf("Lookup(%q) = %v", name, f)
		}
	}
	for alias, want := range map[string]string{"-tp": "--tensor-parallel-size", "tp": "--tensor-parallel-size",
		"--no-enable-prefix-caching": "--enable-prefix-caching", "-q": "--quantization"} {
		if f := fs.Lookup(alias); f == nil || f.Name != want {
			t.Errorf("Lookup(%q) = %v, want %s", alias, f, want)
		}
	}
	if f := fs.Lookup("--max-model"); f != nil {
		t.Errorf("Lookup must not expand prefixes, got %s", f.Name)
	}
	if f, amb := fs.Resolve("--max-model"); f == nil || f.Name != "--max-model-len" || amb != nil {
		t.Errorf("Resolve(--max-model) = %v, %v", f, amb)
	}
	if f, amb := fs.Resolve("--max-num"); f != nil || len(amb) < 2 {
		t.Errorf("Resolve(--max-num) = %v, %v; want ambiguous", f, amb)
	}
	if f, amb := fs.Resolve("--no-such-flag"); f != nil || amb != nil {
		t.Errorf("Resolve(--no-such-flag) = %v, %v", f, amb)
	}
	var nilSet *FlagSet
	if nilSet.Lookup("--x") != nil || nilSet.Names() != nil {
		t.Error("a nil FlagSet must answer nothing")
	}
	lit := &FlagSet{Flags: []*Flag{{Name: "--x", Aliases: []string{"-x"}}}} // no index
	if lit.Lookup("-x") == nil {
		t.Error("a FlagSet literal must be searchable")
	}
}

func TestFilter(t *testing.T) {
	fs := parseRef(t, refCase{"vllm", "0.16.0"})
	got := fs.Filter("max_model_len")
	if len(got) == 0 || got[0].Name != "--max-model-len" {
		t.Fatalf("Filter(max_model_len) starts with %v", got)
	}
	for _, f := range got {
		if !strings.Contains(f.Name+strings.Join(f.Aliases, " ")+strings.ToLower(f.Help), "max-model-len") &&
			!strings.Contains(strings.ToLower(f.Help), "max_model_len") {
			t.Errorf("%s does not mention max-model-len", f.Name)
		}
	}
	if n := len(fs.Filter("")); n != len(fs.Flags) {
		t.Errorf("empty query gave %d flags, want all %d", n, len(fs.Flags))
	}
	if n := len(fs.Filter("zzz-nothing")); n != 0 {
		t.Errorf("no match expected, got %d", n)
	}
}

// TestParseHelpRepeatedOptionLookup: Lookup of a repeated option string
// finds the flag that took it last, and each flag still by its own name.
func TestParseHelpRepeatedOptionLookup(t *testing.T) {
	fs, err := ParseHelp("options:\n  -c, --config CONFIG  config file\n  --chat-template T, -c T  template\n")
	if err != nil {
		t.Fatal(err)
	}
	if f := fs.Lookup("-c"); f == nil || f.Name != "--chat-template" {
		t.Errorf("Lookup(-c) = %v", f)
	}
	if f := fs.Lookup("--config"); f == nil || f.Name != "--config" || len(f.Aliases) != 0 {
		t.Errorf("Lookup(--config) = %+v", f)
	}
}
