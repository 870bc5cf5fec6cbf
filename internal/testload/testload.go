// Package testload tells tests whether the machine is loaded. CI runs every
// package at once on two cores: a wall-clock bound missed while other
// processes hold the cores says little about the code under test, so such
// a miss is logged, and only a miss on a machine with room, or one far
// beyond the bound (a hang), fails.
package testload

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Slack is how many times its bound a step may take on a busy machine
// before it counts as a hang.
const Slack = 10

// Busy reports whether the one-minute load average exceeds the cores, and
// the load average.
func Busy() (bool, float64) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return false, 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return false, 0
	}
	load, err := strconv.ParseFloat(f[0], 64)
	return err == nil && load > float64(runtime.NumCPU()), load
}

// Within fails tb when took exceeds bound on a machine with room, or Slack
// times bound on a busy one; a miss in between is logged.
func Within(tb testing.TB, what string, took, bound time.Duration) {
	tb.Helper()
	within(tb, what, took, bound, Busy)
}

func within(tb testing.TB, what string, took, bound time.Duration, isBusy func() (bool, float64)) {
	tb.Helper()
	if took <= bound {
		return
	}
	busy, load := isBusy()
	switch {
	case !busy:
		tb.Errorf("%s took %s, want within %s", what, took, bound)
	case took > Slack*bound:
		tb.Errorf("%s took %s, want within %s (%s on a machine as busy as this one, load average %.1f on %d cores)", what, took, bound, Slack*bound, load, runtime.NumCPU())
	default:
		tb.Logf("%s took %s, over %s, while the load average was %.1f on %d cores: not counted", what, took, bound, load, runtime.NumCPU())
	}
}
