package docker

import (
	"context"
	"errors"

	"github.com/roofline/roofline/internal/engine"
)

// ImageRunner runs engine images for the engine's probes
// (engine.ImageRunner), through the driver Driver returns: made on first
// use, so that hosts without Docker never dial it.
type ImageRunner struct{ Driver func() (*Driver, error) }

var _ engine.ImageRunner = ImageRunner{}

// ImageID is the local id of image ref; a missing image is
// engine.ErrImageNotFound, with the driver's message (how to load it).
func (r ImageRunner) ImageID(ctx context.Context, ref string) (string, error) {
	d, err := r.Driver()
	if err != nil {
		return "", err
	}
	_, img, err := d.ResolveImage(ctx, ref)
	var missing *ImageMissingError
	if errors.As(err, &missing) {
		return "", imageMissing{err}
	}
	if err != nil {
		return "", err
	}
	return img.ID, nil
}

// imageMissing is the driver's message, known to the engine layer as
// engine.ErrImageNotFound.
type imageMissing struct{ err error }

func (e imageMissing) Error() string   { return e.err.Error() }
func (e imageMissing) Unwrap() []error { return []error{e.err, engine.ErrImageNotFound} }

// RunImage runs argv in a probe container of ref: its stdout, and an
// engine.RunError when it could not run (exit code -1) or exited non-zero.
func (r ImageRunner) RunImage(ctx context.Context, ref string, argv, env []string) ([]byte, error) {
	d, err := r.Driver()
	if err != nil {
		return nil, err
	}
	res, err := d.RunImage(ctx, ref, argv, env)
	if err != nil {
		return nil, &engine.RunError{Argv: argv, ExitCode: -1, Err: err}
	}
	if res.ExitCode != 0 {
		return res.Stdout, &engine.RunError{Argv: argv, ExitCode: res.ExitCode, Stderr: res.Stderr}
	}
	return res.Stdout, nil
}
