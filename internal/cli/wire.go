package cli

import (
	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/driver/docker"
	"github.com/roofline/roofline/internal/driver/process"
	"github.com/roofline/roofline/internal/state"
)

// newDrivers is the driver set: one line per driver, with what its package
// says about it (which servers it runs: plan asks in this order). Docker is
// made on first use, so hosts without Docker never dial it.
func newDrivers() *driver.Set {
	return driver.NewSet().
		Register(state.DriverProcess, process.New(), process.About{}).
		Register(state.DriverDocker, driver.Lazy(func() (driver.Driver, error) { return dockerDriver() }), docker.About{})
}
