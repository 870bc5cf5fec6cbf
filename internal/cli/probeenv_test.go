package cli

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/driver"
)

// TestProbeSeesTheEngineEnvironment: the probe of an engine runs with the
// environment the engine will get (driver.BuildEnv), not roofline's: a
// variable of the shell roofline runs in (a venv's PATH entry, a stray
// PYTHONPATH) must not make plan check another install than apply starts.
func TestProbeSeesTheEngineEnvironment(t *testing.T) {
	t.Setenv("PYTHONPATH", "/somewhere/else")
	t.Setenv("ROOFLINE_TEST_STRAY", "1")
	out, err := probeRunner().Run(context.Background(), []string{"/usr/bin/env"}, []string{"FROM_ENGINE_ENV=1", "COLUMNS=10000"})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	want := driver.BuildEnv(map[string]string{"FROM_ENGINE_ENV": "1", "COLUMNS": "10000"}, nil)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("probe environment\n%v\nwant the engine's\n%v", got, want)
	}
}
