package process

import (
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func TestParseStat(t *testing.T) {
	tail := " S 1 100 100 0 -1 4194560 300 0 0 0 5 3 0 0 20 0 4 0 98765 123456789 2048 18446744073709551615"
	for name, tc := range map[string]struct {
		in       string
		wantComm string
		wantErr  string
	}{
		"plain":          {"4242 (vllm)" + tail, "vllm", ""},
		"spaces":         {"4242 (VLLM::Worker TP0)" + tail, "VLLM::Worker TP0", ""},
		"parens in comm": {"4242 (a) b) (c)" + tail, "a) b) (c", ""},
		"empty comm":     {"4242 ()" + tail, "", ""},
		"newline comm":   {"4242 (a\nb)" + tail, "a\nb", ""},
		"no parens":      {"4242 vllm" + tail, "", "parentheses"},
		"reversed":       {"4242 )vllm(" + tail, "", "parentheses"},
		"bad pid":        {"x (vllm)" + tail, "", "bad pid"},
		"short":          {"4242 (vllm) S 1 100 100", "", "fields"},
		"bad state":      {"4242 (vllm) SS" + tail[2:], "", "bad state"},
		"bad start":      {"4242 (vllm)" + strings.Replace(tail, "98765", "-5", 1), "", "field 22"},
		"huge start":     {"4242 (vllm)" + strings.Replace(tail, "98765", "99999999999999999999999", 1), "", "field 22"},
		"bad session":    {"4242 (vllm)" + strings.Replace(tail, " 1 100 100 ", " 1 100 x ", 1), "", "field 6"},
	} {
		t.Run(name, func(t *testing.T) {
			st, err := parseStat([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseStat = %+v, %v; want error containing %q", st, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := procStat{PID: 4242, Comm: tc.wantComm, State: 'S', PPID: 1, PGRP: 100, Session: 100, StartTime: 98765, RSSPages: 2048}
			if st != want {
				t.Fatalf("parseStat = %+v; want %+v", st, want)
			}
		})
	}
}

// TestParseStatLive parses this process's own stat.
func TestParseStatLive(t *testing.T) {
	st, err := liveProc.stat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.PID != os.Getpid() || st.PPID != os.Getppid() || st.StartTime == 0 || st.RSSPages <= 0 {
		t.Fatalf("own stat = %+v", st)
	}
}

func TestParseCmdline(t *testing.T) {
	for in, want := range map[string][]string{
		"":                        nil,
		"\x00":                    nil,
		"vllm\x00serve\x00/m\x00": {"vllm", "serve", "/m"},
		"VLLM::APIServer":         {"VLLM::APIServer"},
		"a\x00\x00b\x00":          {"a", "", "b"},
	} {
		if got := parseCmdline([]byte(in)); !slices.Equal(got, want) {
			t.Errorf("parseCmdline(%q) = %q; want %q", in, got, want)
		}
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("4242 (vllm) S 1 100 100 0 -1 4194560 300 0 0 0 5 3 0 0 20 0 4 0 98765 123456789 2048 18446744073709551615"))
	f.Add([]byte("1 ((sd-pam)) S 0 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0"))
	f.Add([]byte("7 (x) Z"))
	if b, err := os.ReadFile("/proc/self/stat"); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := parseStat(b)
		if err == nil && (st.State == 0 || len(st.Comm) > len(b)) {
			t.Fatalf("parseStat(%q) = %+v without an error", b, st)
		}
	})
}

// TestNotExist: a read racing with the reaper fails with ESRCH; that is
// "gone", like ENOENT.
func TestNotExist(t *testing.T) {
	err := notExist(&os.PathError{Op: "read", Path: "/proc/1/stat", Err: syscall.ESRCH})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("notExist(ESRCH) = %v; want fs.ErrNotExist", err)
	}
	if err := notExist(os.ErrPermission); errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("notExist(EPERM) = %v; want it unchanged", err)
	}
}
