package driver

import (
	"slices"
	"testing"
)

func TestBuildEnvList(t *testing.T) {
	lookup := func(k string) (string, bool) {
		v, ok := map[string]string{"PATH": "/usr/bin", "HOME": "/home/u", "SECRET_TOKEN": "x"}[k]
		return v, ok
	}
	for _, tt := range []struct {
		name string
		env  []string
		want []string
	}{
		{"none", nil, []string{"HOME=/home/u", "PATH=/usr/bin"}},
		{"probe variables on top", []string{"COLUMNS=10000", "PATH=/opt/v/bin", "EMPTY="},
			[]string{"COLUMNS=10000", "EMPTY=", "HOME=/home/u", "PATH=/opt/v/bin"}},
		{"a value with =", []string{"OPTS=a=b"}, []string{"HOME=/home/u", "OPTS=a=b", "PATH=/usr/bin"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := BuildEnvList(tt.env, lookup); !slices.Equal(got, tt.want) {
				t.Errorf("%q, want %q (SECRET_TOKEN is not a base key)", got, tt.want)
			}
		})
	}
}
