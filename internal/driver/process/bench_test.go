package process

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkRead measures one refresh of a live engine (stat, cmdline and
// the session's members), the cost plan pays per server: with the /proc
// scan shared between Reads (the default) and with a scan per Read.
func BenchmarkRead(b *testing.B) {
	for _, bc := range []struct {
		name   string
		maxAge time.Duration
	}{{"shared-scan", 250 * time.Millisecond}, {"scan-each", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			d := New()
			d.IndexMaxAge = bc.maxAge
			h, err := d.Start(context.Background(), helperSpec(b, "bench", "sleep"))
			if err != nil {
				b.Fatal(err)
			}
			defer d.Stop(context.Background(), h, 0)
			for b.Loop() {
				if obs, err := d.Read(context.Background(), h); err != nil || obs == nil {
					b.Fatal(obs, err)
				}
			}
		})
	}
}

// BenchmarkHeldOpen is the /proc scan a start pays when a previous log
// exists (every start but the first).
func BenchmarkHeldOpen(b *testing.B) {
	path := filepath.Join(b.TempDir(), "e.log.1")
	os.WriteFile(path, []byte("x"), 0o600)
	for b.Loop() {
		if heldOpen(path) {
			b.Fatal("held open")
		}
	}
}
