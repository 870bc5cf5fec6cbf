package cli

import (
	"sync"

	"github.com/roofline/roofline/internal/driver/docker"
	"github.com/roofline/roofline/internal/engine"
)

func init() {
	// Engine probes run docker images through the same client as apply.
	engine.DefaultImageRunner = docker.ImageRunner{Driver: dockerDriver}
}

// dockerDriver is the process's one Docker driver, made on first use so
// that hosts without Docker never dial it.
var dockerDriver = sync.OnceValues(func() (*docker.Driver, error) {
	c, err := docker.NewClient("")
	if err != nil {
		return nil, err
	}
	return docker.New(c), nil
})
