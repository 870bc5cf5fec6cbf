package plan

import (
	"sync"

	"github.com/roofline/roofline/internal/portcheck"
)

// LivePorts is the live port check (PortChecker and ListenerLister) of
// this host. One plan reads the host's listening sockets once
// (portcheck.Table), however many servers it checks.
type LivePorts struct {
	once  sync.Once
	table *portcheck.Table
}

func (c *LivePorts) tab() *portcheck.Table {
	c.once.Do(func() { c.table = portcheck.ReadTable() })
	return c.table
}

// Holder says whether a socket holds host:port, and whose.
func (c *LivePorts) Holder(host string, port int) (bool, string) { return c.tab().Holder(host, port) }

// Listeners lists the sockets that listen on port.
func (c *LivePorts) Listeners(port int) []Listener {
	var out []Listener
	for _, l := range c.tab().Listeners(port) {
		out = append(out, Listener{Addr: l.Addr, PID: l.PID, Who: l.Who()})
	}
	return out
}

var (
	_ PortChecker    = (*LivePorts)(nil)
	_ ListenerLister = (*LivePorts)(nil)
)
