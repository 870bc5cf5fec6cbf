package cli

import (
	"slices"
	"testing"
)

func TestSplitWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  bool
	}{
		{"", nil, false},
		{"  -no-color   -lock-timeout=5m ", []string{"-no-color", "-lock-timeout=5m"}, false},
		{`-var 'a=b c'`, []string{"-var", "a=b c"}, false},
		{`-var "a=\"q\" \\ x"`, []string{"-var", `a="q" \ x`}, false},
		{`a\ b c`, []string{"a b", "c"}, false},
		{`''`, []string{""}, false},
		{`'x`, nil, true},
		{`"x`, nil, true},
		{`x\`, nil, true},
	}
	for _, tt := range tests {
		got, err := splitWords(tt.in)
		if (err != nil) != tt.err || !slices.Equal(got, tt.want) {
			t.Errorf("splitWords(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestEnvArgsOrder(t *testing.T) {
	t.Setenv("ROOFLINE_CLI_ARGS", "-no-color")
	t.Setenv("ROOFLINE_CLI_ARGS_state_rm", "-dry-run")
	t.Setenv("ROOFLINE_CLI_ARGS_plan", "-json")
	got, err := envArgs("state rm")
	if err != nil || !slices.Equal(got, []string{"-no-color", "-dry-run"}) {
		t.Fatalf("envArgs(state rm) = %q, %v", got, err)
	}
}

func TestRedactArgs(t *testing.T) {
	got := redactArgs([]string{"plan", "-var", "token=sk-1", "-var=k=v", "--var=x=y"})
	want := []string{"plan", "-var", "token=(redacted)", "-var=k=(redacted)", "-var=x=(redacted)"}
	if !slices.Equal(got, want) {
		t.Fatalf("redactArgs = %q, want %q", got, want)
	}
}
