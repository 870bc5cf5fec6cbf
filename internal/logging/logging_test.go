package logging

import (
	"slices"
	"testing"
)

func TestRedactArgs(t *testing.T) {
	got := redactArgs([]string{"plan", "-var", "token=sk-1", "-var=k=v", "--var=x=y"})
	want := []string{"plan", "-var", "token=(redacted)", "-var=k=(redacted)", "-var=x=(redacted)"}
	if !slices.Equal(got, want) {
		t.Fatalf("redactArgs = %q, want %q", got, want)
	}
}
