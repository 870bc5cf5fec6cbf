package refdata

import (
	"reflect"
	"strings"
	"testing"
)

func TestVersions(t *testing.T) {
	if got := Versions("vllm"); !reflect.DeepEqual(got, []string{"0.8.5", "0.16.0"}) {
		t.Errorf("Versions(vllm) = %v, want oldest first", got)
	}
	if got := Versions("sglang"); !reflect.DeepEqual(got, []string{"0.5.6.post2"}) {
		t.Errorf("Versions(sglang) = %v", got)
	}
	if got := Versions("trtllm"); len(got) != 0 {
		t.Errorf("Versions(trtllm) = %v", got)
	}
	if got := Kinds(); !reflect.DeepEqual(got, []string{"sglang", "vllm"}) {
		t.Errorf("Kinds() = %v", got)
	}
}

func TestTexts(t *testing.T) {
	for _, kind := range Kinds() {
		for _, v := range Versions(kind) {
			help, ok := Help(kind, v)
			if !ok || !strings.Contains(help, "--port") {
				t.Errorf("%s %s: Help lists no --port", kind, v)
			}
			short, ok := HelpShort(kind, v)
			if !ok || !strings.HasPrefix(short, "usage:") {
				t.Errorf("%s %s: HelpShort %.30q", kind, v, short)
			}
			if HasHelpAll(kind, v) == (short == help) {
				t.Errorf("%s %s: HasHelpAll %v, but the short help is the full one: %v", kind, v, HasHelpAll(kind, v), short == help)
			}
			csv, ok := CSV(kind, v)
			if !ok || !strings.HasPrefix(string(csv), "flag,aliases,") {
				t.Errorf("%s %s: CSV %.30q", kind, v, csv)
			}
		}
	}
	short, _ := HelpShort("vllm", "0.16.0")
	if !strings.Contains(short, "Config Groups:") || strings.Contains(short, "--max-model-len ") {
		t.Error("vLLM 0.16.0's plain --help must list only groups")
	}
	if _, ok := Help("vllm", "0.9.0"); ok {
		t.Error("an unknown version has no help")
	}
	if _, ok := CSV("sglang", "0.16.0"); ok {
		t.Error("an unknown version has no CSV")
	}
}

func TestNaturalLess(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want bool
	}{{"0.8.5", "0.16.0", true}, {"0.16.0", "0.8.5", false}, {"0.5.6", "0.5.6.post2", true}, {"0.10", "0.010", false}, {"a", "a", false}} {
		if got := naturalLess(tt.a, tt.b); got != tt.want {
			t.Errorf("naturalLess(%q, %q) = %v", tt.a, tt.b, got)
		}
	}
}
