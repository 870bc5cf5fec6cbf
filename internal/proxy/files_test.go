package proxy

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/roofline/roofline/internal/testnet"
)

func TestStatusFileOf(t *testing.T) {
	def := filepath.Join("/st", "proxy", "s.status.json")
	for _, tc := range []struct {
		name    string
		cmdline []string
		want    string
	}{
		{"no proxy", nil, def},
		{"default", []string{"roofline", "proxy", "-listen", ":8000", "-status-file", def}, def},
		{"port move", []string{"roofline", "proxy", "-status-file", "/st/proxy/s.9000.status.json"}, "/st/proxy/s.9000.status.json"},
		{"flag without value", []string{"roofline", "proxy", "-status-file"}, def},
	} {
		if got := StatusFileOf(tc.cmdline, "/st", "s"); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if got, want := MoveStatusFile("/st", "s", 9000), "/st/proxy/s.9000.status.json"; got != want {
		t.Errorf("MoveStatusFile = %q, want %q", got, want)
	}
}

func TestTargetLineAndBackendPort(t *testing.T) {
	for _, tc := range []struct {
		kind, version, want string
	}{
		{"", "", "127.0.0.1:20001"},
		{"vllm", "", "127.0.0.1:20001 vllm"},
		{"sglang", "0.5.2", "127.0.0.1:20001 sglang 0.5.2"},
	} {
		if got := TargetLine(20001, tc.kind, tc.version); got != tc.want {
			t.Errorf("TargetLine(%q, %q) = %q, want %q", tc.kind, tc.version, got, tc.want)
		}
	}
	dir := t.TempDir()
	if got := BackendPort(dir, "s"); got != 0 {
		t.Errorf("BackendPort without a target file = %d", got)
	}
	if err := os.MkdirAll(Dir(dir), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := WriteTarget(TargetFile(dir, "s"), TargetLine(20001, "vllm", "0.16.0")); err != nil {
		t.Fatal(err)
	}
	if got := BackendPort(dir, "s"); got != 20001 {
		t.Errorf("BackendPort = %d, want 20001", got)
	}
}

func TestFreePort(t *testing.T) {
	// Below the ephemeral range (testnet): no connection of another test
	// takes a port of the range below it as its source port between
	// FreePort's answer and the check of it.
	ln, err := net.Listen("tcp", testnet.FreeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	held := ln.Addr().(*net.TCPAddr).Port
	if p, err := FreePort(held, held); err == nil {
		t.Errorf("FreePort of a range whose one port is held = %d, want an error", p)
	}
	if _, err := FreePort(0, 0); err == nil {
		t.Error("FreePort(0, 0): want an error")
	}
	if p, err := FreePort(held-50, held-1); err != nil || p < held-50 || p > held-1 || !portFree(p) {
		t.Errorf("FreePort = %d, %v: want a free port of the range", p, err)
	}
}
