package snapshot

import (
	"strings"
	"testing"
	"time"
)

func TestAgeWarning(t *testing.T) {
	now := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	f := &File{Host: "gpu-7", CreatedAt: now.Add(-3 * time.Hour)}
	for _, tc := range []struct {
		maxAge time.Duration
		warns  bool
	}{{0, false}, {4 * time.Hour, false}, {3 * time.Hour, false}, {time.Hour, true}} {
		d := f.AgeWarning(now, tc.maxAge)
		if (d != nil) != tc.warns {
			t.Errorf("max age %s: %v", tc.maxAge, d)
		}
		if d != nil && (d.Summary != "Old host snapshot" || !strings.Contains(d.Detail, "gpu-7 was taken 3h0m0s ago (2026-01-02T09:00:00Z), longer than -snapshot-max-age=1h0m0s")) {
			t.Errorf("warning %q: %q", d.Summary, d.Detail)
		}
	}
}
