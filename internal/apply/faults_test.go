package apply

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/state"
)

// diskFull is a StateWriter whose writes fail from the nth on, as a disk
// that fills up after the engine started.
type diskFull struct {
	recorder
	okWrites int
}

func (d *diskFull) Write(f *state.File) error {
	if len(d.writes) >= d.okWrites {
		return syscall.ENOSPC
	}
	return d.recorder.Write(f)
}

// TestDiskFullAfterStartSaysWhatRuns: the state write after the start
// fails; the error says the engine still runs, what the state holds and
// how it is found again, and the engine is indeed still running.
func TestDiskFullAfterStartSaysWhatRuns(t *testing.T) {
	d := newFakeDriver()
	a, _ := newApplier(t, d, &fakeGates{})
	w := &diskFull{okWrites: 1} // the intent (launch id) is recorded, the pid is not
	a.State = w
	p := &plan.Plan{Changes: []*plan.Change{{Addr: "server.a", Name: "a", Action: plan.Create, After: desired("a", "ma", 8001)}}}
	_, err := a.Apply(context.Background(), p, nil)
	var se *ServerError
	if !errors.As(err, &se) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("err = %v", err)
	}
	launchID := w.writes[0].Server("a").LaunchID
	msg := err.Error()
	for _, want := range []string{"is still running", "could not record its pid", "launch id " + launchID, "kill -TERM -"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	alive := 0
	for _, up := range d.alive {
		if up {
			alive++
		}
	}
	if alive != 1 {
		t.Fatalf("%d engines alive; the error says one still runs", alive)
	}
}

// TestStoppingRecordStillAliveIsRecordedReady: refresh found the process
// of a "stopping" record alive and ours; apply's update records it ready.
func TestStoppingRecordStillAliveIsRecordedReady(t *testing.T) {
	d := newFakeDriver()
	a, _ := newApplier(t, d, &fakeGates{})
	st := state.NewFile()
	s := &state.Server{Name: "a", Status: state.StatusStopping, Port: 8001, Instance: state.Instance{Driver: state.DriverProcess, PID: 42}}
	st.Set(s)
	p := &plan.Plan{Changes: []*plan.Change{{Addr: "server.a", Name: "a", Action: plan.Update, Before: s, After: desired("a", "ma", 8001)}}}
	out, err := a.Apply(context.Background(), p, st)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Server("a").Status; got != state.StatusReady {
		t.Fatalf("status %q", got)
	}
}
