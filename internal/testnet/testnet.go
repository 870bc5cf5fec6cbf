// Package testnet gives tests TCP ports to hand to servers they start.
//
// A port from bind(":0") lies in the kernel's ephemeral range: it is free
// when the test asks, but before the server under test binds it an outgoing
// connection of another test (an HTTP client, a health poll) can take it as
// its source port, and the server then fails with "address already in use".
// Ports here come from a range below the ephemeral one and below roofline's
// default backend_ports, picked at random so parallel test packages rarely
// meet, and checked free on every address family a server may bind.
package testnet

import (
	"math/rand/v2"
	"net"
	"strconv"
	"testing"
)

// Range is the span FreePort draws from: below roofline's default
// backend_ports (20000-29999) and the kernel's ephemeral range (32768+).
var Range = [2]int{10000, 19999}

// FreePort returns a TCP port that was free on 0.0.0.0, 127.0.0.1 and [::]
// a moment ago.
func FreePort(tb testing.TB) int {
	tb.Helper()
	span := Range[1] - Range[0] + 1
	for range 200 {
		port := Range[0] + rand.IntN(span)
		if free(port) {
			return port
		}
	}
	tb.Fatalf("no free TCP port in %d-%d after 200 tries", Range[0], Range[1])
	return 0
}

// FreeAddr is FreePort as a 127.0.0.1:PORT address.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(tb)))
}

func free(port int) bool {
	for _, host := range []string{"0.0.0.0", "127.0.0.1", "::"} {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			if host == "::" {
				continue // no IPv6 on this machine
			}
			return false
		}
		ln.Close()
	}
	return true
}
