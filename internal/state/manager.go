package state

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"maps"
	"slices"

	"github.com/roofline/roofline/internal/version"
)

// Manager stores a state and serialises the commands that change it.
//
// Read returns the stored state (NewFile() when there is none yet). Write
// stores f if its content differs from what is stored, and then sets
// f.Serial to the stored serial plus one and f.Lineage when f had none; a
// write that changes nothing writes nothing and keeps the serial, so a no-op
// apply does not make other saved plans stale. Write refuses a File older
// than the stored one (a lower serial: someone wrote in between) or of
// another lineage. Write redacts secrets in every server's Env, Argv and
// Cmdline (see RedactEnv) before storing, and leaves f redacted too.
//
// Lock takes the state lock for one operation and returns its ID; it tries
// until ctx ends (a ctx that has already ended gets one try), so pass
// context.WithTimeout(ctx, lockTimeout). When the lock stays taken the error
// is a *LockError describing the holder. Unlock releases a lock taken by
// this Manager. Implementations: *Filesystem, *Fake; both pass
// statetest.TestManager.
type Manager interface {
	Read() (*File, error)
	Write(f *File) error
	Lock(ctx context.Context, info *LockInfo) (id string, err error)
	Unlock(id string) error
}

// ForceUnlocker is a Manager whose lock can be broken by hand
// (roofline force-unlock ID).
type ForceUnlocker interface {
	// ForceUnlock removes the lock whose ID is id, whoever holds it. It
	// fails when the state is not locked or the ID does not match.
	ForceUnlock(id string) error
}

var (
	_ Manager       = (*Filesystem)(nil)
	_ ForceUnlocker = (*Filesystem)(nil)
	_ Manager       = (*Fake)(nil)
	_ ForceUnlocker = (*Fake)(nil)
)

// prepareWrite decides what a Write of f over cur (the stored state, nil if
// none) stores: the encoded next state and its serial and lineage. changed
// is false when f says nothing new; then nothing must be written.
func prepareWrite(cur, f *File) (data []byte, next *File, changed bool, err error) {
	if f == nil {
		return nil, nil, false, fmt.Errorf("cannot write a nil state (this is a bug in roofline)")
	}
	next = f.Clone()
	if next.FormatVersion == 0 {
		next.FormatVersion = CurrentFormat
	}
	redactSecrets(cur, next)
	if cur != nil {
		switch {
		case next.Lineage != "" && next.Lineage != cur.Lineage:
			return nil, nil, false, fmt.Errorf("the state on disk has lineage %s, the one being written %s: they are different states; "+
				"nothing was written. Was the state directory replaced or the file copied from elsewhere?", cur.Lineage, next.Lineage)
		case next.Serial < cur.Serial:
			return nil, nil, false, fmt.Errorf("the state changed since this roofline read it (serial %d on disk, %d read): "+
				"another roofline wrote it; nothing was written. Run the command again", cur.Serial, next.Serial)
		}
		next.Lineage = cur.Lineage
		if sameContent(cur, next) {
			return nil, cur, false, nil
		}
		next.Serial = max(next.Serial, cur.Serial) + 1
	} else {
		if next.Lineage == "" {
			next.Lineage = newUUID()
		}
		next.Serial++
	}
	next.RooflineVersion = version.Version
	data, err = Marshal(next)
	if err != nil {
		return nil, nil, false, err
	}
	return data, next, true, nil
}

// redactSecrets redacts the secrets of every server in next, reusing the
// redactions stored in cur so that an unchanged secret stays byte-equal.
// Doing it here, not in each caller, is what keeps plain secrets off disk.
func redactSecrets(cur, next *File) {
	for name, s := range next.Servers {
		prev := cur.Server(name)
		redactServer(s, prev)
		if s != nil {
			var prevDeposed *Server
			if prev != nil {
				prevDeposed = prev.Deposed
			}
			redactServer(s.Deposed, prevDeposed)
		}
	}
}

func redactServer(s, prev *Server) {
	if s == nil {
		return
	}
	if prev == nil {
		prev = &Server{}
	}
	plain := redactPaths(s, prev)
	s.Env = RedactEnv(s.Env, prev.Env)
	s.Argv = RedactArgv(s.Argv, prev.Argv)
	s.Cmdline = redactWords(RedactArgv(s.Cmdline, prev.Cmdline), plain, prev.Cmdline)
	if s.Proxy != nil {
		var prevCmd []string
		if prev.Proxy != nil {
			prevCmd = prev.Proxy.Cmdline
		}
		s.Proxy.Cmdline = RedactArgv(s.Proxy.Cmdline, prevCmd)
	}
}

// sameContent compares two states ignoring serial and the writer's version.
func sameContent(a, b *File) bool {
	a2, b2 := *a, *b
	a2.Serial, b2.Serial = 0, 0
	a2.RooflineVersion, b2.RooflineVersion = "", ""
	a2.Lineage, b2.Lineage = "x", "x"
	da, errA := Marshal(&a2)
	db, errB := Marshal(&b2)
	return errA == nil && errB == nil && bytes.Equal(da, db)
}

// afterWrite tells the caller's File what was stored, redactions included.
func afterWrite(f, next *File) {
	for name, s := range f.Servers {
		n := next.Server(name)
		copyRedacted(s, n)
		if s != nil && n != nil {
			copyRedacted(s.Deposed, n.Deposed)
		}
	}
	f.Serial = next.Serial
	f.Lineage = next.Lineage
	f.RooflineVersion = next.RooflineVersion
	if f.FormatVersion == 0 {
		f.FormatVersion = CurrentFormat
	}
}

func copyRedacted(dst, src *Server) {
	if dst == nil || src == nil {
		return
	}
	dst.Env, dst.Argv, dst.Cmdline = maps.Clone(src.Env), slices.Clone(src.Argv), slices.Clone(src.Cmdline)
	if dst.Proxy != nil && src.Proxy != nil {
		dst.Proxy.Cmdline = slices.Clone(src.Proxy.Cmdline)
	}
}

// newUUID returns a random (version 4) UUID for lineages and lock IDs.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails on Linux
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
