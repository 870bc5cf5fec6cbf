package engine

import (
	"fmt"
	"testing"
)

func TestArgvDiffAttrs(t *testing.T) {
	a := []string{"serve", "/m", "--max-model-len", "32768", "--port", "8000", "--enforce-eager"}
	b := []string{"serve", "/m", "--max-model-len", "16384", "--port", "8000", "--seed", "1"}
	got := ArgvDiffAttrs(a, b)
	want := []string{"enforce_eager", "extra_args --seed", "max_model_len"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v want %v", got, want)
	}
	_, flags := ParseArgv([]string{"--chunked-prefill-size", "-1", "--x=1"})
	if len(flags) != 2 || flags[0].Values[0] != "-1" || flags[1].Values[0] != "1" {
		t.Errorf("flags %+v", flags)
	}
}
