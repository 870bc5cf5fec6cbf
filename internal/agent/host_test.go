package agent

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/state"
)

func TestReadToken(t *testing.T) {
	dir := t.TempDir()
	file := func(content string) string {
		p := filepath.Join(dir, strconv.Itoa(len(content))+".token")
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	env := func(v string) func(string) string { return func(string) string { return v } }
	for _, tc := range []struct {
		name, file, env, want, err string
	}{
		{name: "first line of the file", file: file("  s3cret \nsecond\n"), env: "ignored", want: "s3cret"},
		{name: "environment", env: " tok\n", want: "tok"},
		{name: "none", want: ""},
		{name: "empty file", file: file("\n"), err: "is empty"},
		{name: "missing file", file: filepath.Join(dir, "none"), err: "reading the token"},
	} {
		got, err := ReadToken(tc.file, env(tc.env))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

func TestLockOneAgentPerStateDir(t *testing.T) {
	dir := t.TempDir()
	release, err := Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Lock(dir); err == nil || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Errorf("a second agent: %v, want the holder's pid", err)
	}
	release()
	release2, err := Lock(dir)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	release2()
}

func TestWindowsEnded(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	st := state.NewFile()
	for _, s := range []struct {
		name    string
		kept    bool
		readyAt time.Time
	}{
		{"fresh", true, now.Add(-time.Minute)},
		{"old", true, now.Add(-2 * time.Hour)},
		{"undeclared", true, now},
		{"plain", false, now.Add(-2 * time.Hour)},
	} {
		srv := &state.Server{Name: s.name, ReadyAt: s.readyAt}
		if s.kept {
			srv.Deposed = &state.Server{Name: s.name, Status: state.StatusKept}
		}
		st.Set(srv)
	}
	kept := KeptInstances(st)
	if !reflect.DeepEqual(kept, []string{"fresh", "old", "undeclared"}) {
		t.Fatalf("KeptInstances = %v", kept)
	}
	keepFor := func(name string) (time.Duration, bool) { return time.Hour, name != "undeclared" }
	if got := WindowsEnded(st, kept, keepFor, now); !reflect.DeepEqual(got, []string{"old", "undeclared"}) {
		t.Errorf("WindowsEnded = %v", got)
	}
}
