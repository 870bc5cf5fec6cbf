package state_test

import (
	"testing"

	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/state/statetest"
)

func TestFilesystemConformance(t *testing.T) {
	statetest.TestManager(t, state.NewFilesystem(t.TempDir()+"/st"))
}

func TestFakeConformance(t *testing.T) {
	statetest.TestManager(t, state.NewFake(nil))
}
