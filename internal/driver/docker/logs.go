package docker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/roofline/roofline/internal/fsx"
)

// Streams in the daemon's multiplexed framing.
const (
	Stdout = 1
	Stderr = 2
)

// maxFrame bounds one frame of a log stream: the daemon splits lines at
// 16 KiB, so anything far larger is a corrupt stream, not a line.
const maxFrame = 1 << 20

// Demux reads a log stream in the daemon's framing (for containers without
// a TTY): frames of an 8-byte header (stream, 0, 0, 0, big-endian size) and
// the payload, and calls fn with each payload in order. A stream that does
// not start with such a header (a TTY container's raw stream) is passed
// through whole as stdout.
func Demux(r io.Reader, fn func(stream int, payload []byte) error) error {
	br := bufio.NewReaderSize(r, 32<<10)
	var hdr [8]byte
	first := true
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			if err == io.EOF {
				return nil
			}
			if err == io.ErrUnexpectedEOF && first {
				return fn(Stdout, bytes.TrimRight(hdr[:], "\x00"))
			}
			if err == io.ErrUnexpectedEOF {
				return errors.New("docker log stream: cut inside a frame header")
			}
			return err
		}
		if hdr[0] > 2 || hdr[1] != 0 || hdr[2] != 0 || hdr[3] != 0 {
			if !first {
				return fmt.Errorf("docker log stream: bad frame header % x", hdr)
			}
			// Not multiplexed: the bytes read are text.
			if err := fn(Stdout, append([]byte(nil), hdr[:]...)); err != nil {
				return err
			}
			rest, err := io.ReadAll(io.LimitReader(br, 256<<20))
			if err != nil {
				return err
			}
			if len(rest) == 0 {
				return nil
			}
			return fn(Stdout, rest)
		}
		first = false
		n := binary.BigEndian.Uint32(hdr[4:])
		if n > maxFrame {
			return fmt.Errorf("docker log stream: frame of %d bytes", n)
		}
		buf := make([]byte, n)
		if _, err := io.ReadFull(br, buf); err != nil {
			return fmt.Errorf("docker log stream: cut inside a frame: %w", err)
		}
		if err := fn(int(hdr[0]), buf); err != nil {
			return err
		}
	}
}

// splitTimestamp separates the daemon's timestamp prefix ("2026-01-02T03:04:05.123456789Z ")
// from a log payload. ok is false when the payload has none.
func splitTimestamp(p []byte) (t time.Time, rest []byte, ok bool) {
	i := bytes.IndexByte(p, ' ')
	if i < 20 || i > 40 {
		return time.Time{}, p, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(p[:i]))
	if err != nil {
		return time.Time{}, p, false
	}
	return t, p[i+1:], true
}

// cursor records how far a log file mirrors a container's log: the
// container, the time of the last line copied and how many lines carried
// exactly that time (the daemon's since is inclusive).
type cursor struct {
	Container string    `json:"container"`
	Since     time.Time `json:"since,omitzero"`
	AtSince   int       `json:"at_since,omitempty"`
}

// cursorPath is where the cursor of a mirrored log is kept.
func cursorPath(logPath string) string { return logPath + ".docker" }

// previousLog is the log kept from the instance before (as the process
// driver names it).
func previousLog(logPath string) string { return logPath + ".1" }

// MaxLogBytes is the size a mirrored log is kept under; past it the file
// becomes the previous log and a new one starts.
var MaxLogBytes int64 = 64 << 20

// prepareLog starts the mirror of container id in logPath: a log already
// there (the instance before) moves aside with its cursor, so an old
// container still stopping during a rollout keeps mirroring into it.
func prepareLog(logPath, id string) error {
	if st, err := os.Stat(logPath); err == nil && st.Size() > 0 {
		if err := os.Rename(logPath, previousLog(logPath)); err != nil {
			return fmt.Errorf("cannot keep the previous log: %w", err)
		}
		if err := os.Rename(cursorPath(logPath), cursorPath(previousLog(logPath))); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			_ = os.Remove(cursorPath(previousLog(logPath)))
		}
	}
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("log file: %w", err)
	}
	f.Close()
	b, _ := json.Marshal(cursor{Container: id})
	return fsx.WriteFile(cursorPath(logPath), b, 0o600)
}

// SyncLog appends to the log mirror of container id what the daemon has
// logged since the last sync. The mirror is logPath, or the previous log
// when a newer instance took logPath over; a container that mirrors into
// neither is left alone. Roofline calls it whenever it looks at a container
// (apply's health wait, refresh, status, stop), so the file is as fresh as
// the last look, and stop copies the last lines before the container is
// removed. Concurrent syncs (apply and status) are serialised by a lock on
// the cursor file.
func (d *Driver) SyncLog(ctx context.Context, id, logPath string) error {
	if logPath == "" || id == "" {
		return nil
	}
	for _, path := range []string{logPath, previousLog(logPath)} {
		done, err := d.syncInto(ctx, id, path, path == logPath)
		if done || err != nil {
			return err
		}
	}
	return nil
}

// syncInto syncs id into path if path's cursor names it. claim is set for
// the current log (not the previous one): one with no cursor at all is
// taken over (a container adopted after its start), and it is rotated.
func (d *Driver) syncInto(ctx context.Context, id, path string, claim bool) (bool, error) {
	cf, err := os.OpenFile(cursorPath(path), os.O_RDWR, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		if !claim {
			return false, nil
		}
		if _, err := os.Stat(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, err
		}
		cf, err = os.OpenFile(cursorPath(path), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return false, nil // another sync claimed it first
		}
		b, _ := json.Marshal(cursor{Container: id})
		if _, err := cf.Write(b); err != nil {
			cf.Close()
			return false, err
		}
	}
	if err != nil {
		return false, err
	}
	defer cf.Close()
	if err := syscall.Flock(int(cf.Fd()), syscall.LOCK_EX); err != nil {
		return false, err
	}
	defer syscall.Flock(int(cf.Fd()), syscall.LOCK_UN)
	var cur cursor
	if _, err := cf.Seek(0, io.SeekStart); err != nil {
		return false, err
	}
	b, err := io.ReadAll(cf)
	if err != nil {
		return false, err
	}
	if json.Unmarshal(b, &cur) != nil || cur.Container != id {
		return false, nil
	}
	rc, err := d.C.ContainerLogs(ctx, id, cur.Since, true)
	if IsNotFound(err) {
		return true, nil // removed: nothing more to copy
	}
	if err != nil {
		return true, err
	}
	defer rc.Close()
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return true, err
	}
	w := bufio.NewWriterSize(out, 64<<10)
	next := cur
	skip := cur.AtSince
	derr := Demux(rc, func(_ int, p []byte) error {
		t, line, ok := splitTimestamp(p)
		if ok {
			switch {
			case !cur.Since.IsZero() && t.Before(cur.Since):
				return nil
			case t.Equal(cur.Since) && skip > 0:
				skip--
				return nil
			}
			if t.Equal(next.Since) {
				next.AtSince++
			} else {
				next.Since, next.AtSince = t, 1
			}
		}
		_, err := w.Write(line)
		return err
	})
	werr := w.Flush()
	if cerr := out.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return true, werr
	}
	// What was copied stays copied even when the stream broke: move the
	// cursor past it.
	if next != cur {
		nb, _ := json.Marshal(next)
		if err := cf.Truncate(0); err != nil {
			return true, err
		}
		if _, err := cf.WriteAt(nb, 0); err != nil {
			return true, err
		}
	}
	if derr != nil && ctx.Err() == nil {
		return true, derr
	}
	if !claim {
		return true, nil
	}
	return true, rotateMirror(path)
}

// rotateMirror moves a mirror past MaxLogBytes aside as the previous log;
// its cursor stays with the new, empty file.
func rotateMirror(path string) error {
	st, err := os.Stat(path)
	if err != nil || st.Size() <= MaxLogBytes {
		return nil
	}
	_ = os.Remove(cursorPath(previousLog(path)))
	if err := os.Rename(path, previousLog(path)); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}
