package logdiag

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/roofline/roofline/internal/fsx"
)

// ClassifyFile classifies the log at path ("-" is stdin, which may be nil
// when there is none), reading only its tail into memory. Its errors say
// where apply writes a server's log.
func (c *Classifier) ClassifyFile(path string, stdin io.Reader) (Diagnosis, error) {
	var r io.Reader
	if path == "-" {
		if stdin == nil {
			return Diagnosis{}, errors.New("no standard input to read the log from")
		}
		r = stdin
	} else {
		// A regular file only: a device (/dev/zero) would be read
		// forever, a FIFO block the open.
		f, _, err := fsx.OpenRegular(path)
		if errors.Is(err, fs.ErrNotExist) {
			return Diagnosis{}, fmt.Errorf("no log file at %s.\n\nCheck the path; apply writes each server's log to <state_dir>/logs/SERVER.log", path)
		}
		if err != nil {
			return Diagnosis{}, fmt.Errorf("cannot read the log: %w", err)
		}
		defer f.Close()
		r = f
	}
	d, err := c.ClassifyReader(r)
	if err != nil {
		return d, fmt.Errorf("cannot read the log %s: %w", path, err)
	}
	return d, nil
}
