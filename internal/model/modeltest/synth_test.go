package modeltest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteNew(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	if err := WriteNew(dir, Tiny); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "config.json")); err != nil {
		t.Fatal(err)
	}
	// A folder with anything in it, a model or not, is left as it is.
	before, _ := os.ReadFile(filepath.Join(dir, "config.json"))
	if err := WriteNew(dir, Qwen3_8B); err == nil || !strings.Contains(err.Error(), "is not empty") {
		t.Errorf("WriteNew over a model: %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "config.json")); string(after) != string(before) {
		t.Error("config.json changed")
	}
	empty := t.TempDir()
	if err := WriteNew(empty, Tiny); err != nil {
		t.Errorf("an empty folder: %v", err)
	}
}

func TestArchNamed(t *testing.T) {
	for _, c := range []struct{ give, want, wantErr string }{
		{give: Tiny.Name, want: Tiny.Name},
		{give: "", wantErr: "-arch is required Architectures: " + strings.Join(ArchNames(), ", ")},
		{give: "Qwen3_8C", wantErr: `unknown architecture "Qwen3_8C". Did you mean "Qwen3_8B"? Architectures: `},
	} {
		a, err := ArchNamed(c.give)
		switch {
		case c.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), c.wantErr)):
			t.Errorf("ArchNamed(%q): err = %v, want %q", c.give, err, c.wantErr)
		case c.wantErr == "" && (err != nil || a.Name != c.want):
			t.Errorf("ArchNamed(%q) = %q, %v", c.give, a.Name, err)
		}
	}
}

func TestSynthOptions(t *testing.T) {
	for _, c := range []struct {
		name           string
		shards, layers int
		dtype          string
		want           options
		wantErr        string
	}{
		{name: "the architecture's own"},
		{name: "all", shards: 3, layers: 2, dtype: "fp8", want: options{shards: 3, layers: 2, dtype: "fp8"}},
		{name: "bf16", dtype: "bf16", want: options{dtype: "bf16"}},
		{name: "negative shards", shards: -1, dtype: "int4", wantErr: "-shards and -layers must be positive"},
		{name: "negative layers", layers: -2, wantErr: "-shards and -layers must be positive"},
		{name: "unknown dtype", dtype: "int4", wantErr: `-dtype "int4": want bf16 or fp8`},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts, err := SynthOptions(c.shards, c.layers, c.dtype)
			if c.wantErr != "" {
				if err == nil || err.Error() != c.wantErr {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			var got options
			for _, o := range opts {
				o(&got)
			}
			if err != nil || got.shards != c.want.shards || got.layers != c.want.layers || got.dtype != c.want.dtype {
				t.Errorf("SynthOptions = %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}
