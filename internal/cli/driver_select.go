package cli

import (
	"context"
	"errors"
	"sync"

	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/driver/docker"
	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/state"
)

func init() {
	// Engine probes run docker images through the same client as apply.
	engine.DefaultImageRunner = imageRunner{}
}

var (
	dockerOnce sync.Once
	dockerDrv  *docker.Driver
	dockerErr  error
)

// dockerDriver is the process's one Docker driver, made on first use so
// that hosts without Docker never dial it.
func dockerDriver() (*docker.Driver, error) {
	dockerOnce.Do(func() {
		c, err := docker.NewClient("")
		if err != nil {
			dockerErr = err
			return
		}
		dockerDrv = docker.New(c)
	})
	return dockerDrv, dockerErr
}

// syncContainerLog refreshes the log mirror of a server that runs in a
// container (a no-op for processes), so that a command reading s.LogPath
// sees what the daemon has: a docker Read does it on the way.
func syncContainerLog(ctx context.Context, drivers *driver.Set, s *state.Server) {
	if s == nil || s.Driver == state.DriverProcess || !s.Running() {
		return
	}
	_, _ = drivers.Read(ctx, s.Instance)
}

// imageRunner runs engine images for probes.
type imageRunner struct{}

var _ engine.ImageRunner = imageRunner{}

func (imageRunner) ImageID(ctx context.Context, ref string) (string, error) {
	d, err := dockerDriver()
	if err != nil {
		return "", err
	}
	_, img, err := d.ResolveImage(ctx, ref)
	var missing *docker.ImageMissingError
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

func (imageRunner) RunImage(ctx context.Context, ref string, argv, env []string) ([]byte, error) {
	d, err := dockerDriver()
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
