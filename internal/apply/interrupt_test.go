package apply

import (
	"os"
	"testing"
	"time"
)

func TestWatchInterrupts(t *testing.T) {
	for _, tc := range []struct {
		name          string
		signals       int
		first, second bool
	}{
		{"none", 0, false, false},
		{"one: finish what is in flight", 1, true, false},
		{"two: exit at once", 2, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sigs := make(chan os.Signal, 2)
			firstc, secondc := make(chan struct{}, 1), make(chan struct{}, 1)
			i := WatchInterrupts(sigs, func() { firstc <- struct{}{} }, func() { secondc <- struct{}{} })
			for n := 0; n < tc.signals; n++ {
				sigs <- os.Interrupt
				if n == 0 && tc.first {
					<-firstc // the second signal is read only after the first is handled
				}
			}
			if tc.second {
				select {
				case <-secondc:
				case <-time.After(5 * time.Second):
					t.Fatal("the second interrupt did not call second")
				}
			}
			if tc.first {
				<-i.Stopping // closed
			}
			if i.Interrupted() != tc.first {
				t.Errorf("Interrupted() = %v, want %v", i.Interrupted(), tc.first)
			}
			i.Stop()
			select {
			case <-firstc:
				t.Error("first called more than once")
			case <-secondc:
				t.Error("second called when it should not be")
			case <-time.After(20 * time.Millisecond):
			}
		})
	}
}
