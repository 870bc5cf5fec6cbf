package cli

import (
	"context"
	"sync"

	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/driver/docker"
	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/state"
)

func init() {
	// Engine probes run docker images through the same client as apply.
	engine.DefaultImageRunner = docker.ImageRunner{Driver: dockerDriver}
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
