package secret

import (
	"slices"
	"testing"
)

func TestRedactVarArgs(t *testing.T) {
	for _, c := range []struct{ in, want []string }{
		{nil, []string{}},
		{[]string{"plan", "-json"}, []string{"plan", "-json"}},
		{[]string{"plan", "-var", "token=sk-1", "-var=k=v", "--var=x=y"}, []string{"plan", "-var", "token=(redacted)", "-var=k=(redacted)", "-var=x=(redacted)"}},
		{[]string{"apply", "--var", "a=b=c", "-var-file=x.tfvars"}, []string{"apply", "--var", "a=(redacted)", "-var-file=x.tfvars"}},
		{[]string{"-var"}, []string{"-var"}},
	} {
		if got := RedactVarArgs(c.in); !slices.Equal(got, c.want) {
			t.Errorf("RedactVarArgs(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
