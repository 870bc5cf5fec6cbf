package cli

import (
	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/driver/process"
	"github.com/roofline/roofline/internal/state"
)

// newDrivers is the driver set: one line per driver. Docker is made on
// first use, so hosts without Docker never dial it.
func newDrivers() *driver.Set {
	return driver.NewSet().
		Register(state.DriverProcess, process.New()).
		Register(state.DriverDocker, driver.Lazy(func() (driver.Driver, error) { return dockerDriver() }))
}
