package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/roofline/roofline/internal/fsx"
)

func TestFormat(t *testing.T) {
	tests := []struct {
		name, src, want string
		bad             bool
	}{
		{"aligns", "server \"a\" {\nport=1\nhost = \"x\"\n}\n", "server \"a\" {\n  port = 1\n  host = \"x\"\n}\n", false},
		{"already", "a = 1\n", "a = 1\n", false},
		{"syntax error", "server \"a\" {\nport=1\n", "", true},
	}
	for _, tt := range tests {
		out, diags := Format([]byte(tt.src), "main.hcl")
		if diags.HasErrors() != tt.bad || string(out) != tt.want {
			t.Errorf("%s: Format = %q, %v", tt.name, out, diags)
		}
		if tt.bad && (out != nil || diags[0].Subject == nil || diags[0].Subject.Filename != "main.hcl") {
			t.Errorf("%s: a file with errors gets diagnostics with its place and no text: %q %v", tt.name, out, diags)
		}
	}
}

func TestFormatFiles(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"main.hcl", "b.hcl", "roofline.rfvars", "x.auto.rfvars", "c.hcl.json", "img.pkr.hcl", "notes.txt",
		"sub/s.hcl", ".hidden/h.hcl", "sub/.deeper/d.hcl"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rel := func(files []string) []string {
		for i, f := range files {
			files[i], _ = filepath.Rel(dir, f)
		}
		return files
	}
	tests := []struct {
		name      string
		targets   []string
		recursive bool
		want      []string
	}{
		{"dir", []string{dir}, false, []string{"b.hcl", "main.hcl", "roofline.rfvars", "x.auto.rfvars"}},
		{"recursive", []string{dir}, true, []string{"b.hcl", "main.hcl", "roofline.rfvars", "sub/s.hcl", "x.auto.rfvars"}},
		{"named files", []string{filepath.Join(dir, "notes.txt"), filepath.Join(dir, "c.hcl.json"), filepath.Join(dir, "sub/s.hcl")}, false, []string{"notes.txt", "sub/s.hcl"}},
	}
	for _, tt := range tests {
		got, err := FormatFiles(tt.targets, tt.recursive)
		if err != nil || !slices.Equal(rel(got), tt.want) {
			t.Errorf("%s: FormatFiles = %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
	if _, err := FormatFiles([]string{filepath.Join(dir, "missing")}, false); err == nil {
		t.Error("a missing target is no error")
	}
}

// TestFormatFile: a file is read and formatted; a FIFO is refused, not
// waited on (roofline fmt NAME of one would hang), as the loader refuses it.
func TestFormatFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "main.hcl")
	if err := os.WriteFile(path, []byte("a=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if src, out, diags, err := FormatFile(path); err != nil || diags.HasErrors() || string(src) != "a=1\n" || string(out) != "a = 1\n" {
		t.Errorf("FormatFile = %q, %q, %v, %v", src, out, diags, err)
	}
	fifo := filepath.Join(dir, "fifo.hcl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := FormatFile(fifo); !fsx.IsNotRegular(err) {
		t.Errorf("a FIFO: %v", err)
	}
}

// TestFormatFilesMissingTarget: a target that is not there is said as
// Terraform says it, not as Go's "stat nope.hcl: no such file or directory".
func TestFormatFilesMissingTarget(t *testing.T) {
	_, err := FormatFiles([]string{filepath.Join(t.TempDir(), "nope.hcl")}, false)
	if err == nil || !strings.HasPrefix(err.Error(), "no file or directory at ") || strings.Contains(err.Error(), "stat ") {
		t.Fatalf("error %v", err)
	}
}
