package envargs

import (
	"slices"
	"testing"
)

func TestSplit(t *testing.T) {
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
		got, err := Split(tt.in)
		if (err != nil) != tt.err || !slices.Equal(got, tt.want) {
			t.Errorf("Split(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestForOrder(t *testing.T) {
	t.Setenv("ROOFLINE_CLI_ARGS", "-no-color")
	t.Setenv("ROOFLINE_CLI_ARGS_state_rm", "-dry-run")
	t.Setenv("ROOFLINE_CLI_ARGS_plan", "-json")
	got, err := For("state rm")
	if err != nil || !slices.Equal(got, []string{"-no-color", "-dry-run"}) {
		t.Fatalf("For(state rm) = %q, %v", got, err)
	}
	t.Setenv("ROOFLINE_CLI_ARGS", `-var 'x`)
	if _, err := For("plan"); err == nil || err.Error() != "ROOFLINE_CLI_ARGS: unterminated ' quote" {
		t.Fatalf("For with an unterminated quote: %v", err)
	}
}
