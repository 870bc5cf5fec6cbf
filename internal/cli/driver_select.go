package cli

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"time"

	"github.com/roofline/roofline/internal/apply"
	"github.com/roofline/roofline/internal/driver/docker"
	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/state"
)

func init() {
	// Engine probes run docker images through the same client as apply.
	engine.DefaultImageRunner = imageRunner{}
}

// newApplyDriver returns the driver apply starts and stops servers with:
// containers for servers on an engine image, local processes for the rest
// (the front proxy among them).
func newApplyDriver() apply.Driver { return routedDriver{proc: newProcDriver()} }

// routedDriver sends each call to the docker or the process driver.
type routedDriver struct{ proc procDriver }

var _ apply.Driver = routedDriver{}

func (r routedDriver) Start(ctx context.Context, spec apply.Spec) (*state.Instance, error) {
	if spec.Image == "" {
		return r.proc.Start(ctx, spec)
	}
	d, err := dockerDriver()
	if err != nil {
		return nil, err
	}
	return d.Start(ctx, dockerSpec(spec))
}

func (r routedDriver) Alive(ctx context.Context, p *state.Instance) bool {
	if p != nil && p.Driver == state.DriverDocker {
		d, err := dockerDriver()
		return err == nil && d.Alive(ctx, p)
	}
	return r.proc.Alive(ctx, p)
}

func (r routedDriver) Stop(ctx context.Context, p *state.Instance, grace time.Duration) error {
	if p != nil && p.Driver == state.DriverDocker {
		d, err := dockerDriver()
		if err != nil {
			return err
		}
		return d.Stop(ctx, p, grace)
	}
	return r.proc.Stop(ctx, p, grace)
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

// dockerSpec turns apply's spec into a container spec. Apply has written
// the server's record (with its launch id and config hash) to the state in
// Spec.Dir before it starts anything, so the labels that tie the container
// to the state are read from there.
func dockerSpec(spec apply.Spec) docker.Spec {
	ds := docker.Spec{Name: spec.Name, Image: spec.Image, Argv: spec.Argv, Env: spec.Env, GPUs: spec.GPUs,
		ModelPath: spec.ModelPath, LogPath: spec.LogPath, LaunchID: spec.Env[apply.LaunchEnv], Labels: map[string]string{}}
	if spec.Dir == "" {
		return ds
	}
	if abs, err := filepath.Abs(spec.Dir); err == nil {
		ds.Labels[docker.LabelStateDir] = abs
	}
	st, err := state.NewFilesystem(spec.Dir).Read()
	if err != nil || st == nil {
		return ds
	}
	ds.Labels[docker.LabelLineage] = st.Lineage
	if s := st.Server(spec.Name); s != nil && s.LaunchID == ds.LaunchID {
		ds.Labels[docker.LabelConfigHash] = s.ConfigHash
	}
	return ds
}

// syncContainerLog refreshes the log mirror of a server that runs in a
// container (a no-op for processes), so that a command reading s.LogPath
// sees what the daemon has.
func syncContainerLog(ctx context.Context, s *state.Server) {
	if s == nil || s.Driver != state.DriverDocker || s.ID == "" {
		return
	}
	if d, err := dockerDriver(); err == nil {
		_ = d.SyncLog(ctx, s.ID, s.LogPath)
	}
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
