package state

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Fake is an in-memory Manager for tests of plan, apply and the commands.
// It follows the same rules as Filesystem (serial, lineage, no-op writes,
// lock errors) and stores the encoded bytes, so what a test reads back went
// through Marshal and Decode like a real state.
type Fake struct {
	mu     sync.Mutex
	data   []byte // nil: no state written yet
	lock   *LockInfo
	writes int

	// ReadErr and WriteErr, when set, are returned by Read and Write, to
	// test the callers' error paths.
	ReadErr  error
	WriteErr error
}

// NewFake returns a Fake holding initial (nil: no state yet). An initial
// state without a lineage gets one, and serial 1 if it had none.
func NewFake(initial *File) *Fake {
	f := &Fake{}
	if initial != nil {
		c := initial.Clone()
		if c.Lineage == "" {
			c.Lineage = newUUID()
		}
		if c.Serial == 0 {
			c.Serial = 1
		}
		data, err := Marshal(c)
		if err != nil {
			panic("state.NewFake: invalid initial state: " + err.Error()) // a broken test fixture
		}
		f.data = data
	}
	return f
}

// Read returns a copy of the stored state, NewFile() when there is none.
func (m *Fake) Read() (*File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ReadErr != nil {
		return nil, m.ReadErr
	}
	return m.decoded()
}

func (m *Fake) decoded() (*File, error) {
	if m.data == nil {
		return NewFile(), nil
	}
	return Decode(m.data)
}

// Write stores f (see Manager).
func (m *Fake) Write(f *File) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.WriteErr != nil {
		return m.WriteErr
	}
	var cur *File
	if m.data != nil {
		var err error
		if cur, err = Decode(m.data); err != nil {
			return err
		}
	}
	data, next, changed, err := prepareWrite(cur, f)
	if err != nil {
		return err
	}
	if changed {
		m.data = data
		m.writes++
	}
	afterWrite(f, next)
	return nil
}

// Writes counts the writes that changed the stored state.
func (m *Fake) Writes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.writes
}

// Bytes returns the stored encoding (nil when nothing was written).
func (m *Fake) Bytes() []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]byte(nil), m.data...)
}

// Lock takes the lock (see Manager), polling every 5 ms until ctx ends.
func (m *Fake) Lock(ctx context.Context, info *LockInfo) (string, error) {
	if info == nil {
		info = NewLockInfo("")
	}
	info.fillDefaults("fake")
	start := time.Now()
	for {
		m.mu.Lock()
		if m.lock == nil {
			c := *info
			m.lock = &c
			m.mu.Unlock()
			return info.ID, nil
		}
		holder := *m.lock
		m.mu.Unlock()
		select {
		case <-ctx.Done():
			return "", &LockError{Info: &holder, Waited: time.Since(start)}
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Unlock releases the lock with ID id.
func (m *Fake) Unlock(id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lock == nil || m.lock.ID != id {
		return fmt.Errorf("cannot unlock the state: lock ID %q is not held", id)
	}
	m.lock = nil
	return nil
}

// ForceUnlock removes the lock with ID id, whoever holds it.
func (m *Fake) ForceUnlock(id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.lock == nil:
		return fmt.Errorf("the state is not locked; nothing to unlock")
	case m.lock.ID != id:
		return fmt.Errorf("lock ID %q does not match the lock on the state (%s); nothing was unlocked", id, m.lock.ID)
	}
	m.lock = nil
	return nil
}

// LockHolder returns the current lock's info, nil when unlocked.
func (m *Fake) LockHolder() *LockInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lock == nil {
		return nil
	}
	c := *m.lock
	return &c
}
