package apply

import (
	"context"
	"io"
	"os"
	"time"
)

// LogView is what shows a server's log (views.Logs).
type LogView interface {
	Lines(lines []string)
	Copy(r io.Reader) error
	Follow(b []byte)
}

// ShowLog shows the log open in f (roofline logs): its last n lines, or all
// of it for n <= 0; then, with follow, what it gains as it grows, polling
// every 200 ms. Following ends only with an error: ctx's, or a read's.
func ShowLog(ctx context.Context, f *os.File, n int, follow bool, v LogView) error {
	if n > 0 {
		v.Lines(LastLines(f.Name(), n))
		if _, err := f.Seek(0, io.SeekEnd); err != nil {
			return err
		}
	} else if err := v.Copy(f); err != nil {
		return err
	}
	if !follow {
		return nil
	}
	return FollowLog(ctx, f, 200*time.Millisecond, v.Follow)
}

// FollowLog copies what is appended to a server's log (r, read from where
// it stands) to fn as it arrives, polling every poll at the end of the
// file, as tail -f does. It returns ctx's error when ctx ends, or a read
// error.
func FollowLog(ctx context.Context, r io.Reader, poll time.Duration, fn func([]byte)) error {
	buf := make([]byte, 32<<10)
	for {
		k, err := r.Read(buf)
		if k > 0 {
			fn(buf[:k])
		}
		if err == io.EOF {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(poll):
			}
			continue
		}
		if err != nil {
			return err
		}
	}
}
