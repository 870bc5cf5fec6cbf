package views

import (
	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/driver/docker"
	"github.com/roofline/roofline/internal/driver/process"
	"github.com/roofline/roofline/internal/state"
)

// testDrivers chooses each server's driver as cli's set does: by each
// driver's own rule (driver.About.Runs).
var testDrivers = driver.NewSet().Register(state.DriverProcess, nil, process.About{}).Register(state.DriverDocker, nil, docker.About{})
