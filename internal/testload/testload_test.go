package testload

import (
	"fmt"
	"testing"
	"time"
)

// recorder is a testing.TB that keeps what within said.
type recorder struct {
	testing.TB
	logs, errs []string
}

func (r *recorder) Helper()                      {}
func (r *recorder) Logf(f string, args ...any)   { r.logs = append(r.logs, fmt.Sprintf(f, args...)) }
func (r *recorder) Errorf(f string, args ...any) { r.errs = append(r.errs, fmt.Sprintf(f, args...)) }
func load(busy bool, avg float64) func() (bool, float64) {
	return func() (bool, float64) { return busy, avg }
}

func TestWithin(t *testing.T) {
	for _, tt := range []struct {
		name       string
		took       time.Duration
		busy       bool
		logs, errs int
	}{
		{"within, quiet", time.Second, false, 0, 0},
		{"within, busy", time.Second, true, 0, 0},
		{"over, quiet: fails", 3 * time.Second, false, 0, 1},
		{"over, busy: logged", 3 * time.Second, true, 1, 0},
		{"a hang, busy: fails", 21 * time.Second, true, 0, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{TB: t}
			within(r, "the step", tt.took, 2*time.Second, load(tt.busy, 7.5))
			if len(r.logs) != tt.logs || len(r.errs) != tt.errs {
				t.Fatalf("logs %q, errors %q", r.logs, r.errs)
			}
			for _, m := range append(r.logs, r.errs...) {
				t.Log(m)
			}
		})
	}
}
