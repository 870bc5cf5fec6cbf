package apply

import "os"

// Interrupts handles interrupts during apply as Terraform does: the first
// signal on sigs closes Stopping (apply finishes the changes in flight and
// starts no other) after calling first; the second calls second (which
// exits at once). Stop ends the watch.
type Interrupts struct {
	Stopping <-chan struct{}
	soft     chan struct{}
	done     chan struct{}
}

// WatchInterrupts starts the watch of sigs.
func WatchInterrupts(sigs <-chan os.Signal, first, second func()) *Interrupts {
	i := &Interrupts{soft: make(chan struct{}), done: make(chan struct{})}
	i.Stopping = i.soft
	go func() {
		select {
		case <-sigs:
		case <-i.done:
			return
		}
		first()
		close(i.soft)
		select {
		case <-sigs:
		case <-i.done:
			return
		}
		second()
	}()
	return i
}

// Interrupted reports whether a first interrupt came.
func (i *Interrupts) Interrupted() bool {
	select {
	case <-i.soft:
		return true
	default:
		return false
	}
}

// Stop ends the watch (after signal.Stop of sigs: no signal comes).
func (i *Interrupts) Stop() { close(i.done) }
