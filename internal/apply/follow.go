package apply

import (
	"context"
	"io"
	"time"
)

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
