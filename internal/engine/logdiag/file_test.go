package logdiag_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestClassifyFile(t *testing.T) {
	log := filepath.Join("testdata", "kv_too_small", "compose-vllm-0.16.log")
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	unreadable := t.TempDir() // a folder opens, and fails on read
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		path      string
		stdin     *strings.Reader
		wantClass string
		wantErr   string
	}{
		{name: "file", path: log, wantClass: "kv_too_small"},
		{name: "stdin", path: "-", stdin: strings.NewReader(string(data)), wantClass: "kv_too_small"},
		{name: "no stdin", path: "-", wantErr: "no standard input to read the log from"},
		{name: "missing", path: filepath.Join(t.TempDir(), "x.log"), wantErr: "no log file at "},
		{name: "a folder", path: unreadable, wantErr: "cannot read the log: " + unreadable + " is a directory, not a regular file"},
		// A device or a FIFO is refused at once; /dev/zero was read forever.
		{name: "a device", path: "/dev/zero", wantErr: "cannot read the log: /dev/zero is "},
		{name: "a fifo", path: fifo, wantErr: "cannot read the log: " + fifo + " is "},
	} {
		t.Run(c.name, func(t *testing.T) {
			var d Diagnosis
			var err error
			if c.stdin != nil {
				d, err = ClassifyFile(c.path, c.stdin)
			} else {
				d, err = ClassifyFile(c.path, nil)
			}
			if c.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want one starting %q", err, c.wantErr)
				}
				return
			}
			if err != nil || d.Class != c.wantClass {
				t.Errorf("ClassifyFile = %s, %v; want %s", d.Class, err, c.wantClass)
			}
		})
	}
}
